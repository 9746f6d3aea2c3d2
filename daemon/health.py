"""Health as a supervisor asks for it: ``/healthz`` and ``/readyz`` on the metrics port, and systemd's notify
protocol.

* **Alive** (``/healthz``): the I/O loop turns.  The loop wakes at least every
  quarter of a second (its housekeeping), and each turn is recorded here; a
  loop that has not turned for :data:`STALL_SECONDS` is stuck, and a
  supervisor should restart the process.  Slow learning is not a stall: the
  workers learn beside the loop.  Where the workers are watched
  (:class:`WatchedPool`, a cluster replica's), a worker that has run one job
  for :data:`WORKER_STALL_SECONDS` is stuck too; long snapshots, loads and
  hand-offs are many jobs, each far shorter, and are not.
* **Ready** (``/readyz``): the streams are restored, the sockets bound, the
  loop turns, and the server is not stopping.  While the streams are being
  restored (the probes are served from the start), the body says how far the
  restore is: ``restoring: 12 of 40 streams (3.2 s)``.  A stopping server is alive
  but not ready: it finishes queued work and snapshots every stream, and new
  traffic should go elsewhere.

Under systemd (``Type=notify``) the same moments are told to the service
manager: ``READY=1`` once serving, ``STOPPING=1`` when the stop begins, and,
with ``WatchdogSec=``, ``WATCHDOG=1`` from the loop's own turns, so that a
stuck loop, not only a dead process, is restarted.  The protocol is one
datagram on the socket named by ``$NOTIFY_SOCKET`` (sd_notify(3)); nothing
is sent when the variable is absent.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

log = logging.getLogger("seqd")

STALL_SECONDS = 10.0  # a loop that has not turned for this long is stuck
# a worker on one job this long is stuck: the longest job is a batch of [limits] max_batch_symbols (1 Mi) learned
# by the slowest byte model (some 40 KB/s: 26 s), or a snapshot of the largest learner (seconds)
WORKER_STALL_SECONDS = 300.0


class Health:
    """What the loop tells (:meth:`serving`, :meth:`turned`, :meth:`stopping`) and the probes ask
    (:meth:`live`, :meth:`ready`); ``clock`` is the loop's monotonic clock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, environ: dict | None = None,
                 workers: "WatchedPool | None" = None):
        self._clock = clock
        self._workers = workers
        self.longest_gap = 0.0  # the longest time between two turns of the loop since it began serving
        self._turn: float | None = None
        self._state = "starting"
        self._notify = Notifier(os.environ if environ is None else environ)
        self._watchdog_ping = 0.0
        self._restoring: tuple[int, int, float] | None = None  # streams restored, of how many, since when
        self._status_sent = 0.0

    def restoring(self, done: int, total: int) -> None:
        """The restore has opened ``done`` of the ``total`` streams (it runs before the loop)."""
        now = self._clock()
        since = self._restoring[2] if self._restoring else now
        self._restoring = (done, total, since)
        if done in (0, total) or now - self._status_sent >= 1.0:  # a datagram a second at most
            self._status_sent = now
            self._notify.send(f"STATUS=restoring: {done} of {total} streams")

    def serving(self) -> None:
        """Restored and bound: the loop starts."""
        self._state = "serving"
        self._notify.send("READY=1\nSTATUS=serving")
        self.turned()

    def turned(self) -> None:
        """One turn of the loop."""
        now = self._clock()
        if self._turn is not None:
            self.longest_gap = max(self.longest_gap, now - self._turn)
        self._turn = now
        interval = self._notify.watchdog_seconds
        if interval and now - self._watchdog_ping >= interval / 2:  # sd_watchdog_enabled(3): half the period
            self._watchdog_ping = now
            self._notify.send("WATCHDOG=1")

    def stopping(self) -> None:
        """The orderly stop has begun (said once)."""
        if self._state != "stopping":
            self._state = "stopping"
            self._notify.send("STOPPING=1\nSTATUS=stopping: finishing queued work and snapshotting")

    def live(self) -> tuple[bool, str]:
        """Whether the process is alive and its loop turns, and a line that says so."""
        if self._turn is None:
            return True, "starting\n"
        stalled = self._clock() - self._turn
        if stalled > STALL_SECONDS:
            return False, f"stuck: the I/O loop has not turned for {stalled:.1f} s\n"
        if self._workers is not None:
            seconds, job = self._workers.longest()
            if seconds > WORKER_STALL_SECONDS:
                return False, f"stuck: a worker has run one job ({job}) for {seconds:.1f} s\n"
        return True, "ok\n"

    def ready(self) -> tuple[bool, str]:
        """Whether the server takes traffic, and a line that says so (or why not)."""
        alive, why = self.live()
        if not alive:
            return False, why
        if self._state == "starting" and self._restoring:
            done, total, since = self._restoring
            return False, f"restoring: {done} of {total} streams ({self._clock() - since:.1f} s)\n"
        if self._state != "serving":
            return False, f"{self._state}\n"
        return True, "ok\n"


class Notifier:
    """sd_notify(3) without libsystemd: a datagram to ``$NOTIFY_SOCKET`` (a path, or ``@`` for an abstract
    socket); nothing without it.  ``watchdog_seconds``: ``$WATCHDOG_USEC`` when it is meant for this process."""

    def __init__(self, environ):
        self.address = environ.get("NOTIFY_SOCKET") or None
        if self.address and self.address.startswith("@"):
            self.address = "\0" + self.address[1:]
        self.watchdog_seconds = 0.0
        usec, pid = environ.get("WATCHDOG_USEC"), environ.get("WATCHDOG_PID")
        if self.address and usec and usec.isdigit() and (not pid or pid == str(os.getpid())):
            self.watchdog_seconds = int(usec) / 1e6

    def send(self, message: str) -> None:
        if not self.address:
            return
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(message.encode(), self.address)
        except OSError as exc:  # the service manager's business, never a reason to stop serving
            log.warning("could not notify the service manager (%s): %s", message.split("\n")[0], exc)


class WatchedPool(ThreadPoolExecutor):
    """A thread pool that knows what each of its workers runs, and since when (:meth:`longest`), for
    :meth:`Health.live`."""

    def __init__(self, *args, clock: Callable[[], float] = time.monotonic, **kwargs):
        super().__init__(*args, **kwargs)
        self._clock = clock
        self._running: dict[int, tuple[float, str]] = {}  # a job's number: when it began, what it is
        self._guard = threading.Lock()
        self._jobs = itertools.count()

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(self._watched, fn, args, kwargs)

    def _watched(self, fn, args, kwargs):
        with self._guard:
            key = next(self._jobs)
            self._running[key] = (self._clock(), _job_name(fn))
        try:
            return fn(*args, **kwargs)
        finally:
            with self._guard:
                del self._running[key]

    def longest(self) -> tuple[float, str]:
        """The seconds the longest-running job has run, and what it is ((0, "") when none runs)."""
        with self._guard:
            jobs = list(self._running.values())
        if not jobs:
            return 0.0, ""
        began, name = min(jobs)
        return self._clock() - began, name


def _job_name(fn) -> str:
    """What a job is: its function, and the stream it works for where it is a stream's method."""
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    owner = getattr(getattr(fn, "__self__", None), "name", None)
    return f"{name} of stream {owner}" if isinstance(owner, str) else name
