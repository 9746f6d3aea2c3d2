"""Health as supervisors ask for it: liveness and readiness by the loop's turns and the server's state, and
systemd's notify datagrams, read from a real AF_UNIX socket."""

from __future__ import annotations

import os
import socket

import pytest

from seqd.daemon import health as health_module
from seqd.daemon.health import Health, Notifier


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def notify_socket(tmp_path):
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(2)
    yield path, sock
    sock.close()


def received(sock) -> list[str]:
    out = []
    sock.setblocking(False)
    try:
        while True:
            out.append(sock.recv(4096).decode())
    except BlockingIOError:
        pass
    sock.settimeout(2)
    return out


def test_alive_while_the_loop_turns_ready_only_while_serving():
    clock = Clock()
    h = Health(clock, environ={})
    assert h.live() == (True, "starting\n") and h.ready() == (False, "starting\n")
    h.serving()
    assert h.live() == (True, "ok\n") and h.ready() == (True, "ok\n")
    clock.now += health_module.STALL_SECONDS - 1
    assert h.live()[0] and h.ready()[0]
    clock.now += 2  # no turn for longer than STALL_SECONDS: stuck, and so not ready either
    ok, why = h.live()
    assert not ok and "has not turned for 11.0 s" in why and h.ready() == (False, why)
    h.turned()
    assert h.live()[0]
    h.stopping()
    assert h.live() == (True, "ok\n") and h.ready() == (False, "stopping\n")


def test_systemd_is_told_ready_stopping_and_fed_its_watchdog_by_the_loop(notify_socket):
    path, sock = notify_socket
    clock = Clock()
    h = Health(clock, environ={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())})
    h.serving()
    assert received(sock) == ["READY=1\nSTATUS=serving", "WATCHDOG=1"]
    clock.now += 0.5
    h.turned()
    assert received(sock) == []  # half the watchdog period has not passed
    clock.now += 0.6
    h.turned()
    assert received(sock) == ["WATCHDOG=1"]
    h.stopping()
    h.stopping()
    assert received(sock) == ["STOPPING=1\nSTATUS=stopping: finishing queued work and snapshotting"]


def test_notify_is_silent_without_its_socket_and_the_watchdog_only_for_this_process(tmp_path):
    assert Notifier({}).address is None and Notifier({}).watchdog_seconds == 0
    Notifier({}).send("READY=1")  # nothing to send to: nothing happens
    other = Notifier({"NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1"})
    assert other.watchdog_seconds == 0  # meant for another process
    assert Notifier({"NOTIFY_SOCKET": "@abstract"}).address == "\0abstract"
    gone = Notifier({"NOTIFY_SOCKET": str(tmp_path / "absent")})
    gone.send("READY=1")  # the manager's socket is gone: logged, never raised


def test_json_log_lines_parse_and_carry_the_exception():
    import json
    import logging
    import sys

    from seqd.cli.serve import JsonLines

    try:
        raise OSError(28, "No space left on device")
    except OSError:
        record = logging.LogRecord("seqd", logging.ERROR, __file__, 1, "stream %s: %s", ("s", "log full"),
                                   sys.exc_info(), func=None)
    line = JsonLines().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["level"] == "error" and parsed["logger"] == "seqd" and parsed["message"] == "stream s: log full"
    assert parsed["time"].endswith("+00:00") and "No space left on device" in parsed["exception"]


def test_a_worker_on_one_job_past_the_bound_is_stuck_and_the_loops_longest_gap_is_kept():
    import threading

    from seqd.daemon.health import WORKER_STALL_SECONDS, WatchedPool

    clock = Clock()
    release = threading.Event()
    started = threading.Event()

    class Job:
        name = "app.log"

        def learn(self):
            started.set()
            release.wait(10)

    with WatchedPool(max_workers=1, clock=clock) as pool:
        health = Health(clock=clock, workers=pool)
        health.serving()
        assert pool.longest() == (0.0, "")
        future = pool.submit(Job().learn)
        assert started.wait(10)
        clock.now += WORKER_STALL_SECONDS - 1
        health.turned()  # the loop turns: only the worker could make it stuck
        assert health.live() == (True, "ok\n")
        clock.now += 2
        health.turned()
        alive, why = health.live()
        assert not alive and "Job.learn of stream app.log" in why and f"{WORKER_STALL_SECONDS + 1:.1f} s" in why
        release.set()
        future.result(10)
        assert pool.longest() == (0.0, "") and health.live() == (True, "ok\n")
    assert health.longest_gap == WORKER_STALL_SECONDS - 1  # the longest time between two turns
