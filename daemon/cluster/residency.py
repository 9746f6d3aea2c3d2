"""Which of a replica's streams have their learner in memory: within ``[limits] max_state_bytes``, the least
recently active idle ones hibernate, as the single-machine daemon's do (``daemon/budget.py``).

A stream hibernates once its snapshot in the object store covers everything
it has learned (its log has no record after the snapshot): its learner and
its recent code lengths leave memory, and its view stays, so ``predict`` and
``stats`` are answered without it.  Its next batch wakes it: the snapshot is
read back (the same bits), and the batch is learned.  A stream hibernates

* when a creation, a wake or a learner's growth would take the replica's
  streams past ``max_state_bytes`` (the least recently active idle learners
  first, until the bytes fit);
* when it has been idle for ``hibernate_after_seconds`` (0: never).

A partition gained whose stream's snapshot covers its whole log is taken up
*asleep*, with nothing read: such a stream moves for free.  Its first
prediction reads the snapshot (``wake``) before it is answered, and its first
publish reads it before its batch id is checked (the ids the stream has seen
are in the snapshot); ``stats`` answers from the pointer (its position and
model; its code length is unknown until then).

Each stream counts :data:`~seqd.daemon.budget.STREAM_BYTES` for as long as
the replica serves it, and its learner's bytes while the learner is in
memory: counted before a creation or a wake allocates (room is made first),
and again after each batch, as a learner that grows with its stream grows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Awaitable, Callable, Iterable

from ..budget import STREAM_BYTES, MemoryBudget, return_freed_memory
from ..learner_store import resident_bytes
from .stream import ClusterStream

log = logging.getLogger("seqd")

ROOM_POLL = 0.02  # seconds between looks for an idle learner while a creation or a wake waits for room
ROOM_WAIT = 5.0  # seconds a creation or a wake waits for room before it goes over the budget, said so


class Residency:
    """The replica's streams' memory: ``snapshot(stream)`` brings a stream's snapshot up to its log's tail
    (the replica's ``_snapshot``); ``read(stream)`` puts its learner back in memory from its snapshot."""

    def __init__(self, limit: int, hibernate_after: float, snapshot: Callable[[ClusterStream], Awaitable],
                 read: Callable[[ClusterStream], Awaitable[None]]):
        self.budget = MemoryBudget(limit)
        self.hibernate_after = hibernate_after
        self._snapshot, self._read = snapshot, read
        self.streams: set[ClusterStream] = set()  # every stream served: those resident are counted
        self.hibernations = 0
        self.wakes = 0
        self.peak = 0  # the most the streams held at once

    # -- counting --------------------------------------------------------------------------------
    def serve(self, stream: ClusterStream) -> None:
        """A stream served from now on (created, loaded, gained asleep); its learner is counted if resident."""
        self.streams.add(stream)
        self._take(STREAM_BYTES + stream.counted)

    def forget(self, stream: ClusterStream) -> None:
        """A stream no longer served here (dropped, its partition lost or handed off)."""
        if stream in self.streams:
            self.streams.discard(stream)
            self.budget.give(STREAM_BYTES + stream.counted)

    def grew(self, stream: ClusterStream) -> None:
        """After a batch: what the learner holds now."""
        before = stream.counted
        stream.count()
        if stream.counted > before:
            self._take(stream.counted - before)
        elif stream.counted < before:
            self.budget.give(before - stream.counted)

    @property
    def resident(self) -> int:
        return sum(1 for s in self.streams if not s.asleep)

    # -- making room -----------------------------------------------------------------------------
    async def make_room(self, nbytes: int, keep: ClusterStream | None = None, wait: float = 0.0) -> None:
        """Hibernate the least recently active idle learners (not ``keep``) until ``nbytes`` more fit.  While
        none is idle (all are learning), wait up to ``wait`` seconds for one to be; then the bytes are taken
        all the same, and said so: a stream being served must learn."""
        deadline = time.monotonic() + wait
        tried: set[ClusterStream] = set()
        while self.budget.held + nbytes > self.budget.limit:
            idle = [s for s in self.streams if s is not keep and s.idle and s not in tried]
            if not idle:
                if time.monotonic() < deadline:
                    await asyncio.sleep(ROOM_POLL)
                    tried.clear()
                    continue
                log.warning("replica over its max_state_bytes: %d bytes held, %d more needed, no idle learner "
                            "to hibernate", self.budget.held, nbytes)
                return
            stream = min(idle, key=lambda s: s.last_active)
            tried.add(stream)
            await self.hibernate(stream)

    @contextlib.asynccontextmanager
    async def room_for(self, nbytes: int, keep: ClusterStream | None = None):
        """Room made for a learner of ``nbytes`` allocated inside the block (waiting up to :data:`ROOM_WAIT` for
        an idle learner to hibernate), its bytes held meanwhile, so that two allocations never count on the
        same room; given back at the end, where the learner itself is counted instead."""
        await self.make_room(nbytes, keep=keep, wait=ROOM_WAIT)
        self._take(nbytes)
        try:
            yield
        finally:
            self.budget.give(nbytes)

    def _take(self, nbytes: int) -> None:
        self.budget.take(nbytes)
        self.peak = max(self.peak, self.budget.held)

    async def hibernate(self, stream: ClusterStream) -> bool:
        """Put the stream to sleep if it is idle: its snapshot brought up to its tail, then its learner let go.
        Whether it sleeps now."""
        if not stream.idle:
            return False
        await self._snapshot(stream)  # (takes the stream's lock and drains it)
        async with stream.lock:
            if not stream.quiet or not stream.snapshotted:  # a batch came meanwhile: it stays awake
                return False
            counted = stream.counted
            stream.sleep()
        if stream in self.streams:
            self.budget.give(counted)
        self.hibernations += 1
        return_freed_memory()
        return True

    async def wake(self, stream: ClusterStream) -> None:
        """The stream's learner in memory (read from its snapshot), room made for it first."""
        if not stream.asleep:
            return
        async with stream.waking:
            if not stream.asleep:
                return
            async with self.room_for(resident_bytes(stream.config), keep=stream):
                await self._read(stream)
            stream.count()
            if stream in self.streams:
                self._take(stream.counted)
            self.wakes += 1
            await self.make_room(0, keep=stream)  # (a grown learner reads back larger than a new one)

    async def idle_for(self, streams: Iterable[ClusterStream], now: float | None = None) -> None:
        """Hibernate the learners idle for ``hibernate_after`` seconds (0: never)."""
        if not self.hibernate_after:
            return
        now = time.monotonic() if now is None else now
        for stream in list(streams):
            if stream.idle and now - stream.last_active >= self.hibernate_after:
                try:
                    await self.hibernate(stream)
                except Exception as exc:  # its snapshot could not be written: it stays awake, tried again later
                    stream.last_active = now
                    log.warning("stream %s: not hibernated: %s: %s", stream.name, type(exc).__name__, exc)
