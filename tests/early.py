"""Subprocesses that tests read, started as the session begins and run beside it, one at a time.

A few checks spend most of their time in a process of their own: compiling
every kernel into an empty Numba cache (the coding path's LLVM IR), or for
another CPU target, or decoding the whole corpus through the command line.
Run where the test stands, each holds up the session for a minute or two
while the machine's other core idles.  Declared at import instead::

    COLD_BUILD = Early("cold build", "-c", PROBE, env={"NUMBA_CACHE_DIR": "{folder}/cache"})

    @pytest.mark.early(COLD_BUILD)
    def test_...():
        proc = COLD_BUILD.result()    # waits for it, if it is still running

the process starts once the session has collected its tests, if a selected
test is marked with it (``conftest.py``), in a worker thread that runs such
processes one after another in the order they were declared.  ``{folder}``
in the arguments and environment is a directory of the process's own, kept
until the session ends, where a test may run follow-up commands with the
same environment (``Early.env``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading


class Early:
    declared: list[Early] = []
    _lock = threading.Lock()
    _queue: list[Early] = []
    _worker: threading.Thread | None = None

    def __init__(self, name: str, *args: str, env: dict[str, str | None] | None = None, timeout: float = 1800):
        """``python args`` (this session's Python) under the session's environment with ``env`` applied (a
        value ``None`` removes the variable); ``timeout`` seconds at most."""
        self.name, self.args, self.overrides, self.timeout = name, args, env or {}, timeout
        self.folder: str | None = None
        self._done = threading.Event()
        self._result: subprocess.CompletedProcess | BaseException | None = None
        self._queued = False
        self._proc: subprocess.Popen | None = None
        Early.declared.append(self)

    @property
    def env(self) -> dict[str, str]:
        """The environment the process runs in (its folder made)."""
        if self.folder is None:
            self.folder = tempfile.mkdtemp(prefix=f"seqd-early-{self.name.replace(' ', '-')}-")
        env = dict(os.environ)
        for key, value in self.overrides.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value.replace("{folder}", self.folder)
        return env

    def start(self) -> None:
        """Queue the process (once); the worker thread runs the queue in declaration order."""
        with Early._lock:
            if self._queued:
                return
            self._queued = True
            Early._queue.append(self)
            Early._queue.sort(key=Early.declared.index)
            if Early._worker is None:
                Early._worker = threading.Thread(target=Early._work, name="early-processes", daemon=True)
                Early._worker.start()

    def result(self) -> subprocess.CompletedProcess:
        """The finished process (standard output and error as text), waiting for it; started now if no
        session started it (a test run by hand)."""
        self.start()
        if not self._done.wait(self.timeout + 60):
            raise TimeoutError(f"{self.name}: not finished after {self.timeout:.0f} s")
        if isinstance(self._result, BaseException):
            raise self._result
        return self._result

    def _run(self) -> None:
        try:
            env = self.env
            args = [a.replace("{folder}", self.folder) for a in self.args]
            with subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env) as self._proc:
                try:
                    out, err = self._proc.communicate(timeout=self.timeout)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    raise
                self._result = subprocess.CompletedProcess(self._proc.args, self._proc.returncode, out, err)
        except BaseException as error:  # handed to the test that reads the result
            self._result = error
        finally:
            self._done.set()

    @staticmethod
    def _work() -> None:
        while True:
            with Early._lock:
                if not Early._queue:
                    Early._worker = None
                    return
                process = Early._queue.pop(0)
            process._run()

    @staticmethod
    def clean_up() -> None:
        """Stop what still runs and remove the processes' folders (at the session's end)."""
        for process in Early.declared:
            if process._proc is not None and process._proc.poll() is None:
                process._proc.kill()
                process._done.wait(60)
            if process.folder is not None and process._done.is_set():
                shutil.rmtree(process.folder, ignore_errors=True)
