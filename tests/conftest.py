"""Session hooks: the processes of ``early.py`` start once the tests are collected, and stop at the end."""

from __future__ import annotations

from early import Early


def pytest_collection_finish(session):
    if session.config.option.collectonly:
        return
    for item in session.items:
        if any(m.name == "skip" or (m.name == "skipif" and m.args and m.args[0] is True)
               for m in item.iter_markers()):
            continue  # a test that will not run reads nothing
        for mark in item.iter_markers("early"):
            for process in mark.args:
                process.start()


def pytest_sessionfinish(session, exitstatus):
    Early.clean_up()
