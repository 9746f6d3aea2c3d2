"""One named stream: its learner, its queue of accepted batches, its files, and what it serves.

Threads and ownership (``docs/daemon.md``):

* the **I/O loop** accepts batches: it checks them, appends them to the
  write-ahead log (:mod:`.wal`) and queues them (:meth:`Stream.offer`);
* a **worker** learns them, one stream at a time per worker, so each learner
  has a single writer (:meth:`Stream.run_next`);
* after each batch the worker publishes an immutable :class:`View` of the
  learner (next-symbol distribution and statistics).  The I/O loop answers
  ``predict`` and ``stats`` from the latest view and never reads the learner's
  arrays while a worker writes them;
* what the worker did goes back to the loop as a report (:mod:`.reports`).

A stream moves through the states of :mod:`.lifecycle` (creating, live,
broken, faulted, dropped, gone); :attr:`Stream.state` is where it is.

Files, in ``<state_dir>/streams/<name>/``: ``stream.json`` (the model
configuration, written once at creation), ``snapshot`` (the learner at some
position, replaced atomically) and a byte stream's ``history``
(:mod:`.learner_store`), and the log segments.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
import uuid
import zlib
from collections import deque
from pathlib import Path

import numpy as np

from ..core.learners import learner_for
from . import lifecycle, repairs, snapshot_file, stream_meta, wal
from .batch_ids import BatchIds
from .learner_store import RECENT, RECENT_BYTES, LearnerStore
from .budget import STREAM_BYTES, MemoryBudget, return_freed_memory
from .models import chunk_for
from .lifecycle import State
from .reports import Hibernated, Learned, NeedsRoom, SnapshotFailed, SnapshotWritten
from .views import View, learner_stats, recent_after

log = logging.getLogger("seqd")

class Stream:
    def __init__(self, name: str, directory: Path, learner, position: int, *,
                 created: float, fsync: bool, store: LearnerStore | None = None):
        self.name = name
        self.directory = directory
        self.learner = learner  # any model's learner (core/learners.py); None while hibernated
        self.config = learner.config
        self.chunk = chunk_for(self.config)  # symbols learned before the worker yields
        # what leaves memory when it hibernates: the learner as it is (it grows as it learns: _count_growth)
        self.learner_bytes = learner.resident_bytes + RECENT_BYTES
        self.store = store or LearnerStore(directory, self.config, fsync=fsync)  # its snapshot and history
        self.budget = MemoryBudget()  # where its bytes are counted: the daemon's, once it serves the stream
        self.budget.take(STREAM_BYTES + self.learner_bytes)  # STREAM_BYTES until it is gone (:meth:`forget`)
        self.holds_room = True  # they are counted: the learner is in memory, or a wake has taken its room
        self.last_active = time.monotonic()  # when a batch last came or was learned (the loop's LRU order)
        self.hibernation_pending = False  # a hibernation is queued (set by the loop, cleared by the worker)
        self.hibernate_after = 0.0  # not before this time (the loop's clock): a hibernation's snapshot failed
        self.slept_at = position  # while hibernated: the position of the snapshot that holds the learner
        self.created = created
        self.started = time.time()
        self.snapshot_position = position
        self.snapshot_time = time.monotonic()
        self.log = wal.WriteAheadLog(directory, wal.itemsize_for(self.config.alphabet_cap), position, fsync=fsync)
        self.lock = threading.Lock()  # guards the queue, `scheduled`, `queued`, `state` and the flags below
        self.io_lock = threading.Lock()  # a snapshot being written, or the directory being moved away by a drop
        # ("batch", start, symbols) | ("snapshot", [requesters]) | ("hibernate",) | ("drop", path)
        self.queue: deque = deque()
        self.queued = 0  # accepted symbols not yet learned
        self.syncing = 0  # symbols in the log, waiting for its fsync before they are queued (I/O loop only)
        self.syncing_batches = 0  # the batches they make
        self.scheduled = False  # a worker holds it, or it waits in the ready queue
        self.snapshot_pending = False
        self.state = State.CREATING  # served once the loop registers it (:meth:`go_live`)
        self.broken: str | None = None  # no more publishes until restart: the log failed, or learning did
        self.code_bits = 0.0
        self.torn = self.repaired = None  # at its restore: a torn last record dropped, log damage cut (LogDamage)
        self.repairs: list[dict] = []  # the repairs of its log (:func:`.repairs.read`)
        self.batch_ids = BatchIds()  # the recent publishes' ids (the I/O loop's)
        self._recent = np.zeros(RECENT)
        self.view = View.of(learner, position, self._stats(position))

    # -- its lifecycle (:mod:`.lifecycle`) -----------------------------------------------------
    @property
    def faulted(self) -> bool:
        """Learning raised: the learner is in an unknown state, never snapshot it."""
        return self.state is State.FAULTED

    @property
    def dropped(self) -> bool:
        """Dropped (or gone): it takes no more work and writes nothing more."""
        return self.state in lifecycle.ENDED

    def _move(self, target: State) -> None:
        self.state = lifecycle.check(self.state, target)

    def go_live(self) -> None:
        """The loop serves it from now on (a creation or a restore is complete)."""
        with self.lock:
            self._move(State.LIVE)

    def mark_broken(self, reason: str) -> str:
        """Its write-ahead log failed: it refuses batches until a restart.  The first reason stays (a later
        failure proves nothing more); returns the reason in effect."""
        with self.lock:
            if self.state not in (State.BROKEN, State.FAULTED):
                self._move(State.BROKEN)  # from live; from anywhere else, IllegalTransition
                self.broken = reason
            return self.broken

    def forget(self) -> None:
        """Nothing refers to it any more (its drop is durable, or the limits refused its creation): what it
        held outside its learner leaves the budget."""
        with self.lock:
            self._move(State.GONE)  # once: nothing leaves GONE
            self.budget.give(STREAM_BYTES)

    def unmake(self) -> None:
        """Created but refused before it was served (the limits): its files and its learner go, and nothing
        stays on disk to claim the name."""
        try:
            self.log.close()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.forget()
        self.learner = None
        self._give_room()

    # -- the I/O loop's side ------------------------------------------------------------------
    @property
    def accepted(self) -> int:
        return self.log.position

    @property
    def resident(self) -> bool:
        """Its learner is in memory (not hibernated)."""
        return self.learner is not None

    @property
    def idle(self) -> bool:
        """Nothing queued, syncing or held by a worker (read by the loop, which alone changes ``syncing``)."""
        return not self.scheduled and not self.queue and self.syncing == 0

    def count_in(self, budget: MemoryBudget) -> None:
        """From now on the stream's bytes are counted in ``budget`` (the daemon's :mod:`.budget`): its
        :data:`STREAM_BYTES`, and its learner's while it is in memory."""
        with self.lock:
            held = STREAM_BYTES + (self.learner_bytes if self.holds_room else 0)
            budget.take(held)
            self.budget.give(held)
            self.budget = budget

    def offer(self, start: int, symbols: np.ndarray) -> bool:
        """Queue a batch the log holds from position ``start``; returns True when the stream must be
        handed to a worker."""
        with self.lock:
            if self.faulted or self.dropped:
                return False
            self.queue.append(("batch", start, symbols))
            self.queued += len(symbols)
            self.last_active = time.monotonic()
            return self._schedule()

    def request_hibernation(self) -> bool:
        """Queue the learner's hibernation: a worker snapshots it (if it learned anything since the last
        snapshot) and lets it go; its view stays and answers predicts and stats.  Only for a live, idle,
        resident stream; returns True when the stream must be scheduled."""
        with self.lock:
            if (self.state is not State.LIVE or self.queue or self.scheduled or self.learner is None
                    or self.hibernation_pending):
                return False
            self.hibernation_pending = True
            self.queue.append(("hibernate",))
            return self._schedule()

    def request_snapshot(self, requester) -> bool:
        """Queue a snapshot after the batches before it; a requester joins a snapshot already queued.
        ``requester`` may be None (a periodic snapshot).  Returns True when the stream must be scheduled."""
        with self.lock:
            if self.faulted or self.dropped:
                return False
            if self.queue and self.queue[-1][0] == "snapshot":  # nothing queued after it: it covers this request
                if requester is not None:
                    self.queue[-1][1].append(requester)
                return False
            self.snapshot_pending = True
            self.queue.append(("snapshot", [requester] if requester is not None else []))
            return self._schedule()

    def drop(self, trash: Path) -> tuple[bool, list]:
        """Forget the queued work and remove the (already moved) files; returns (schedule?, the
        requesters of the snapshots that will now never be written)."""
        with self.lock:
            self._move(State.DROPPED)
            orphans = self._clear()
            self.queue.append(("drop", trash))
            return self._schedule(), orphans

    def fail(self, reason: str) -> list:
        """Learning raised: stop feeding the learner; returns the snapshot requesters left waiting.  A stream
        dropped meanwhile stays dropped."""
        with self.lock:
            self.broken = reason
            if self.state in (State.LIVE, State.BROKEN):  # the only states the table lets fault
                self._move(State.FAULTED)
            orphans = self._clear()
            self.scheduled = False
            return orphans

    def _clear(self) -> list:
        orphans = [r for kind, *args in self.queue if kind == "snapshot" for r in args[0]]
        drops = [item for item in self.queue if item[0] == "drop"]  # a dropped folder is still deleted
        self.queue.clear()
        self.queue.extend(drops)
        self.queued = 0
        self.snapshot_pending = False
        self.hibernation_pending = False
        return orphans

    def _schedule(self) -> bool:
        if self.scheduled:
            return False
        self.scheduled = True
        return True

    def stagger(self, interval: float) -> None:
        """Delay the stream's first periodic snapshot by a phase of its own in the interval, from its name.

        Streams created or restored together would otherwise fall due
        together, every ``interval`` (``snapshot_interval_seconds``), and write their
        snapshots (tens of megabytes each) in one burst that delays answers
        (``bench/snapshots.py``); spread over the interval, they come one at a
        time.  Delayed, never advanced: no stream is snapshotted more often.
        """
        phase = zlib.crc32(self.name.encode()) / 2**32
        self.snapshot_time += phase * interval

    # -- a worker's side ----------------------------------------------------------------------
    def run_next(self):
        """Do the next queued piece of work; returns (report, more): the report for the I/O loop
        (:mod:`.reports`; None when there is nothing to tell), and whether work is left.

        When ``more`` is True the caller puts the stream back in the ready queue
        (after the other streams: round robin).  A hibernated stream whose next
        piece is a batch first takes its learner's room in the budget; without
        room it does nothing and reports :class:`~.reports.NeedsRoom`, staying
        scheduled: the loop hands it back once hibernations have made room.
        """
        with self.lock:
            if not self.queue:
                self.scheduled = False
                return None, False
            kind, *args = self.queue[0]
            if kind == "batch" and not self.holds_room:
                if not self.budget.try_take(self.learner_bytes):
                    return NeedsRoom(self), False
                self.holds_room = True
            if kind == "batch" and len(args[1]) > self.chunk:  # a long batch in pieces, between other streams
                start, symbols = args
                self.queue[0] = ("batch", start + self.chunk, symbols[self.chunk:])
                args = [start, symbols[:self.chunk]]
            else:
                self.queue.popleft()
        if kind == "batch":
            woken = None
            if self.learner is None:
                try:
                    with self.io_lock:  # not while a drop moves the folder away: a dropped stream learns nothing
                        woken = None if self.dropped else self._wake()
                finally:
                    if self.learner is None:  # dropped, or its snapshot could not be read: the room goes back
                        self._give_room()
            report = None if self.learner is None else Learned(self, *self._learn(args[1]), woken=woken)
        elif kind == "snapshot":
            try:
                report = SnapshotWritten(self, tuple(args[0]), self._write_snapshot())
            except Exception as exc:  # disk full, say: the log still holds everything; report it, go on learning
                report = SnapshotFailed(self, tuple(args[0]), exc)
        elif kind == "hibernate":
            try:
                report = self._hibernate()
            finally:
                with self.lock:
                    self.hibernation_pending = False
        else:  # drop: the directory was already moved aside by the I/O loop; nothing to tell
            shutil.rmtree(args[0], ignore_errors=True)
            if self.learner is not None:
                self.learner = None
                self._give_room()
            report = None
        with self.lock:
            if kind == "batch":
                self.queued -= len(args[1])
                self.last_active = time.monotonic()
            if kind == "snapshot":
                self.snapshot_pending = any(item[0] == "snapshot" for item in self.queue)
            more = bool(self.queue)
            if not more:
                self.scheduled = False
        return report, more

    def _hibernate(self) -> Hibernated | SnapshotFailed | None:
        """Let the learner go, after a snapshot at the learned position if the last one is older: the file then
        holds exactly what the memory did, and the log after it what comes next.  Not when work came meanwhile
        (the stream is busy again), nor when the snapshot cannot be written (the learner stays)."""
        with self.lock:
            busy = bool(self.queue) or self.learner is None or self.state is not State.LIVE
        if busy:
            return None
        written = None
        if self.view.position > self.snapshot_position or not (self.directory / "snapshot").exists():
            try:
                written = self._write_snapshot()
            except Exception as exc:  # the learner stays in memory: nothing is lost, the loop is told
                return SnapshotFailed(self, (), exc)
        with self.lock:
            if self.queue:  # a batch came while the snapshot was written: keep the learner
                return None if written is None else SnapshotWritten(self, (), written)
            self._let_go()
        return Hibernated(self, written)

    def sleep_as_opened(self) -> bool:
        """Just opened (:meth:`open`) and its snapshot holds the whole learner (nothing was replayed after it):
        let the learner go, as a hibernation would have; returns whether it did."""
        if self.view.position != self.snapshot_position or not (self.directory / "snapshot").exists():
            return False
        self._let_go()
        return True

    def _let_go(self) -> None:
        """The snapshot on disk holds the learner at the view's position: it leaves memory."""
        self.slept_at = self.view.position
        self.learner = None
        self._recent = None  # the snapshot holds them too: a wake reads them back
        return_freed_memory()
        self._give_room()

    def _give_room(self) -> None:
        """The learner is not in memory (let go, or never woken): its bytes leave the budget."""
        if self.holds_room:
            self.holds_room = False
            self.budget.give(self.learner_bytes)

    def _wake(self) -> float:
        """Bring a hibernated learner back from its snapshot (its position is the view's: nothing was learned
        while it slept); returns the seconds it took.  A snapshot that cannot be read raises: the worker
        marks the stream faulted, and its files are left for a restart to try again."""
        t0 = time.perf_counter()
        position, _, recent, learner, _ = self.store.read()
        if position != self.view.position:
            raise ValueError(f"{self.store.snapshot}: holds position {position}, not the hibernated "
                             f"{self.view.position}")
        self.learner, self._recent = learner, recent
        return time.perf_counter() - t0

    def _learn(self, symbols: np.ndarray) -> tuple[int, float, float]:
        t0 = time.perf_counter()
        bits = self.learner.learn(symbols)
        seconds = time.perf_counter() - t0
        self._count_growth()
        batch_bits = float(bits.sum())
        self.code_bits += batch_bits
        self._recent = recent_after(self._recent, bits)
        position = self.view.position + len(symbols)
        self.view = View.of(self.learner, position, self._stats(position))
        return len(symbols), batch_bits, seconds

    def _count_growth(self) -> None:
        """A learner whose memory grows with its stream took more as it learned: the budget counts it (memory
        already held; the loop makes room by hibernating idle learners if the streams are now over it)."""
        now = self.learner.resident_bytes + RECENT_BYTES
        if now > self.learner_bytes:
            with self.lock:
                self.budget.take(now - self.learner_bytes)
                self.learner_bytes = now

    def _stats(self, position: int) -> dict:
        return learner_stats(self.learner, position, self.code_bits, self._recent)

    def _write_snapshot(self) -> int:
        """The learner and its statistics, atomically: temporary file, fsync, rename, fsync of the folder.

        Under ``io_lock``: a drop moves the directory away only between
        snapshots, and a dropped stream writes none (its name may already
        belong to a new stream).
        """
        position = self.view.position
        if self.faulted:
            raise RuntimeError(f"stream {self.name!r} is not snapshotted: {self.broken}")
        if self.learner is None:  # hibernated: the snapshot on disk is the learner, at the view's position
            return self.slept_at
        self.store.write(self.learner, position, self.code_bits, self._recent, self.io_lock,
                         lambda: self.dropped, self.batch_ids.upto(position))
        self.snapshot_time = time.monotonic()
        return position

    # -- creation and recovery ----------------------------------------------------------------
    @classmethod
    def create(cls, name: str, streams_dir: Path, config, *, fsync: bool) -> "Stream":
        """A new stream, built in a temporary directory and renamed into place: a failure or a crash
        halfway leaves no directory that would claim the name."""
        tmp = streams_dir / f".new-{name}-{uuid.uuid4().hex}"
        tmp.mkdir(mode=wal.PRIVATE_DIR)
        try:
            created = time.time()
            snapshot_file.write_atomically(tmp / stream_meta.NAME, stream_meta.encode(name, created, config))
            snapshot_file.write_durably(tmp / wal.segment_name(0), wal.segment_header(wal.itemsize_for(
                config.alphabet_cap)))  # with the folder: a stream's folder without a segment has lost its log
            learner = learner_for(config)
            directory = streams_dir / name
            os.rename(tmp, directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            wal.fsync_path(streams_dir)
            return cls(name, directory, learner, 0, created=created, fsync=fsync)
        except BaseException:  # (its first log segment, say): no folder may claim a name nobody was given
            aside = streams_dir / f".new-{name}-{uuid.uuid4().hex}"
            try:
                os.rename(directory, aside)
            except OSError:
                aside = directory
            shutil.rmtree(aside, ignore_errors=True)
            raise

    @classmethod
    def open(cls, directory: Path, meta: tuple, *, fsync: bool, repair: bool = False) -> "Stream":
        """Restore a stream: its snapshot, then the batches its log holds after it (same bits as before).

        Nothing is trusted: ``meta`` is what :func:`.stream_meta.read` accepted of its ``stream.json`` (a model
        this daemon serves, within its budget); the snapshot's position must be the count of symbols its
        learner has learned; and the log must reach from there on, whole.  A torn last record is
        dropped (an INFO line); damage to acknowledged records raises :class:`~.wal.LogDamage`, or with
        ``repair`` is cut off, logged as an ERROR and remembered (:mod:`.repairs`).  Anything else that fails
        is a ValueError or an OSError naming the file."""
        name, created, config = meta
        position, code_bits, recent, learner, batches = 0, 0.0, None, None, []  # (no snapshot: a new stream's)
        store = LearnerStore(directory, config, fsync=fsync)  # (and what a crash left of writing it goes)
        if store.snapshot.exists():
            position, code_bits, recent, learner, batches = store.read()
        store.restored_at(position)
        learner = learner or learner_for(config)
        bits, learned = [np.zeros(0)], position
        replay = wal.Replay(directory, wal.itemsize_for(config.alphabet_cap), position, repair=repair)
        for batch in replay:
            bits.append(learner.learn(batch))
            learned += len(batch)
        replayed = np.concatenate(bits)
        if replay.torn:
            log.info("stream %s: %s", name, replay.torn)
        if replay.repaired is not None:
            log.error("stream %s: REPAIRED its write-ahead log, losing what it held from position %d on: %s",
                      name, replay.repaired.position, replay.repaired)
            repairs.remember(directory, replay.repaired)
        stream = cls(name, directory, learner, learned, created=created, fsync=fsync, store=store)
        stream.code_bits = code_bits + float(replayed.sum())
        stream._recent = recent_after(recent, replayed)
        stream.snapshot_position = position
        stream.torn, stream.repaired = replay.torn, replay.repaired
        stream.repairs = repairs.read(directory)
        stream.batch_ids = BatchIds([*batches, *replay.batches])
        stream.view = View.of(learner, learned, stream._stats(learned))
        return stream

    def hibernate_at_restore(self) -> None:
        """Just opened, and the restore keeps it out of memory: a snapshot at the learned position if the one on
        disk is older (what the log held after it was replayed), the log checkpointed, the learner let go."""
        if not self.sleep_as_opened():
            position = self._write_snapshot()
            self.log.checkpoint(position)
            self.snapshot_position = position
            self._let_go()

