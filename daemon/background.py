"""The daemon's background threads: workers that learn, the sync thread, the namespace thread.

Each takes its jobs from a queue of its own, does the slow part (the Numba
kernels, an fsync, a stream's files) away from the I/O loop, and tells the
loop what it did with a report (:mod:`.reports`) on the loop's outbox,
followed by a wake-up on ``inproc://seqd-wake``.  None of them answers a
request or touches the loop's bookkeeping.  A ``None`` job ends the thread.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import zmq

from . import wal
from .pending import CreateJob
from .reports import Created, CreateFailed, DropSynced, Faulted, Synced
from .streams import Stream

if TYPE_CHECKING:
    from .pending import AwaitSync

log = logging.getLogger("seqd")

WAKE_ENDPOINT = "inproc://seqd-wake"


def work(ready: queue.SimpleQueue, outbox: queue.SimpleQueue, ctx: zmq.Context, nice: int) -> None:
    """A worker: learn, snapshot or delete for the streams handed to it, one piece of work at a time."""
    name_os_thread(threading.current_thread().name)
    if nice and hasattr(os, "setpriority"):  # Linux: a thread's own priority; the I/O loop comes first
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        except OSError:
            pass
    wake = ctx.socket(zmq.PUSH)
    wake.connect(WAKE_ENDPOINT)
    try:
        while (stream := ready.get()) is not None:
            try:
                report, more = stream.run_next()
            except Exception as exc:  # a learner that raised is in an unknown state: stop feeding it
                log.exception("stream %s: worker failed", stream.name)
                report = Faulted(stream, tuple(stream.fail(f"learning failed: {type(exc).__name__}: {exc}")))
                more = False
            if report is not None:
                outbox.put(report)
                poke(wake)
            if more:
                ready.put(stream)
    finally:
        wake.close(linger=0)


def sync(jobs: queue.SimpleQueue, outbox: queue.SimpleQueue, ctx: zmq.Context) -> None:
    """The sync thread: one fsync per log a burst of accepted batches touched (group commit)."""
    name_os_thread("seqd-sync")
    wake = ctx.socket(zmq.PUSH)
    wake.connect(WAKE_ENDPOINT)
    try:
        acks: tuple[AwaitSync, ...]
        while (acks := jobs.get()) is not None:
            failed: dict[str, str] = {}
            for stream in {id(a.stream): a.stream for a in acks}.values():
                try:
                    stream.log.sync()
                except OSError as exc:
                    failed[stream.name] = f"write-ahead log could not be synced: {exc}"
            outbox.put(Synced(acks, failed))
            poke(wake)
    finally:
        wake.close(linger=0)


def namespace(jobs: queue.SimpleQueue, outbox: queue.SimpleQueue, ctx: zmq.Context, streams_dir: Path,
              fsync: bool) -> None:
    """The namespace thread: the disk work of creating a stream (its folder, description, first log
    segment and their fsyncs) and of making a drop durable, in the order asked, off the I/O loop."""
    name_os_thread("seqd-namespace")
    wake = ctx.socket(zmq.PUSH)
    wake.connect(WAKE_ENDPOINT)
    try:
        while (job := jobs.get()) is not None:
            if isinstance(job, CreateJob):
                try:
                    report = Created(job.name, Stream.create(job.name, streams_dir, job.config, fsync=fsync))
                except Exception as exc:  # disk full, say: reported to the requester
                    report = CreateFailed(job.name, exc)
            else:  # the rename that took the folder away survives a power loss from now on
                try:
                    if fsync:
                        wal.fsync_path(streams_dir)
                    report = DropSynced(job.stream, job.requester, None)
                except Exception as exc:
                    report = DropSynced(job.stream, job.requester, exc)
            outbox.put(report)
            poke(wake)
    finally:
        wake.close(linger=0)


def name_os_thread(name: str, native_id: int | None = None) -> None:
    """Name a thread of this process for the operating system (its first 15 bytes): the calling one, or
    the one with ``native_id``.  ``top -H``, ``ps -L`` and ``/proc/<pid>/task/*/comm`` then tell the I/O
    loop, the workers and the sync thread apart.  Linux only (``/proc``); elsewhere nothing happens."""
    tid = threading.get_native_id() if native_id is None else native_id
    try:
        Path(f"/proc/self/task/{tid}/comm").write_bytes(name.encode()[:15])
    except OSError:
        pass


def poke(wake: zmq.Socket) -> None:
    """Wake the I/O loop.  A full pipe means wake-ups are already waiting to be read: this one may go."""
    try:
        wake.send(b"", zmq.NOBLOCK)
    except zmq.Again:
        pass
