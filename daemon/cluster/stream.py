"""One stream of a partition a replica holds (``replica.py``): its learner (or none while it hibernates,
``residency.py``), the writer of its log, the batches accepted and not yet learned, the view it serves, and
its snapshot's bytes.

Appending and learning go at their own paces: a batch is acknowledged once
the log has it (``lock``, one append at a time), and learned later, in
order, from ``queue``, each with the log's tail after it.  ``learned_tail``
is where the learner stands in the log, so that a snapshot can be taken of
the learner as it is, between two batches (``stepping``), without holding
appends back until the queue is learned."""

from __future__ import annotations

import asyncio
import contextlib
import time

import numpy as np

from .. import snapshot_file, sparse
from ..batch_ids import BatchIds
from ..learner_store import RECENT, RECENT_BYTES
from ..views import View, learner_stats, recent_after
from .log import StreamWriter, Tail


class ClusterStream:
    """One stream of a held partition.  ``learner`` is None while it hibernates; ``view`` is None too for a
    stream taken up asleep (its snapshot not read yet: its code length and batch ids are unknown here)."""

    def __init__(self, name: str, created: float, config, writer: StreamWriter, learner, position: int,
                 code_bits: float = 0.0, recent: np.ndarray | None = None, batches=(), snapshot_seq: int = 0,
                 replayed: int = 0):
        self.name, self.created, self.config, self.writer, self.learner = name, created, config, writer, learner
        self.code_bits = code_bits
        self.recent = np.zeros(RECENT) if recent is None else recent
        self.batch_ids = BatchIds(batches)
        self.snapshot_seq = snapshot_seq  # the log record the latest snapshot stands on (0: none)
        self.snapshot_position = position if snapshot_seq else 0
        self.snapshot_time = time.monotonic()
        self.replayed = replayed  # log records learned when it was loaded (after its snapshot)
        self.queue: list[tuple[np.ndarray, Tail]] = []  # accepted, not learned: each batch and the tail after it
        self.queued = 0
        self.learned_tail: Tail | None = writer.tail  # the log's record the learner has learned up to
        self.lock = asyncio.Lock()  # appends, one at a time and in order
        self.stepping = asyncio.Lock()  # one batch learned, or the learner snapshotted, at a time
        self.waking = asyncio.Lock()  # one read of the snapshot at a time
        self.snapshotting = asyncio.Lock()  # one snapshot at a time
        self.learned = asyncio.Condition()
        self.learning: asyncio.Task | None = None
        self.last_active = time.monotonic()
        self.append_began: float | None = None  # when the append in progress took the lock (None: none)
        self.counted = 0  # the learner's bytes as the replica's budget counts them (0 while asleep)
        self._position = position
        self.view: View | None = None
        if learner is not None:
            self.view = View.of(learner, position, learner_stats(learner, position, code_bits, self.recent))
            self.count()

    @classmethod
    def asleep_at(cls, name: str, created: float, config, writer: StreamWriter, position: int, snapshot_seq: int):
        """A stream taken up asleep: its snapshot (at ``snapshot_seq``, ``position``) covers its whole log."""
        return cls(name, created, config, writer, None, position, snapshot_seq=snapshot_seq)

    @property
    def accepted(self) -> int:
        return self.writer.position

    @property
    def position(self) -> int:
        """Symbols learned."""
        return self.view.position if self.view is not None else self._position

    @property
    def asleep(self) -> bool:
        return self.learner is None

    def queue_batch(self, symbols: np.ndarray, tail: Tail) -> None:
        """A batch accepted (the log's tail is ``tail`` after it), to be learned in turn."""
        self.queue.append((symbols, tail))
        self.queued += len(symbols)

    @property
    def learned_since_snapshot(self) -> bool:
        """Whether its learner, awake, stands past its latest snapshot: a snapshot now would hold more."""
        tail = self.learned_tail
        return not self.asleep and tail is not None and tail.seq != self.snapshot_seq

    @property
    def snapshotted(self) -> bool:
        """Whether its latest snapshot covers its whole log."""
        tail = self.writer.tail
        return tail is None or tail.seq == self.snapshot_seq

    @property
    def quiet(self) -> bool:
        """Awake, and nothing queued or learning."""
        return not self.asleep and not self.queued and (self.learning is None or self.learning.done())

    @property
    def idle(self) -> bool:
        """Quiet, and nothing being appended: it may hibernate."""
        return self.quiet and not self.lock.locked()

    @contextlib.asynccontextmanager
    async def appending(self):
        """The stream's append lock, held for one append (:meth:`appending_for` tells for how long)."""
        async with self.lock:
            self.last_active = self.append_began = time.monotonic()
            try:
                yield
            finally:
                self.append_began = None

    def appending_for(self) -> float:
        """Seconds the append in progress has held the stream's other appends back (0: none in progress)."""
        return time.monotonic() - self.append_began if self.append_began is not None else 0.0

    async def learned_to(self, position: int, seconds: float) -> bool:
        """Wait up to ``seconds`` for the learner to have learned ``position`` symbols; whether it has."""
        if self.position >= position:
            return True
        try:
            async with self.learned:
                await asyncio.wait_for(self.learned.wait_for(lambda: self.position >= position), seconds)
        except asyncio.TimeoutError:
            return False
        return True

    def count(self) -> None:
        self.counted = 0 if self.learner is None else self.learner.resident_bytes + RECENT_BYTES

    def sleep(self) -> None:
        """Let the learner and its recent code lengths go (its snapshot holds them)."""
        self.learner, self.recent, self.counted = None, None, 0

    def woken(self, learner, position: int, code_bits: float, recent: np.ndarray, batches) -> None:
        """The learner back from the snapshot at ``position``, the log's tail."""
        if position != self.position:
            raise ValueError(f"stream {self.name}: its snapshot holds {position} symbols, not {self.position}")
        self.learner, self.code_bits, self.recent = learner, code_bits, recent
        if self.view is None:  # taken up asleep: what the snapshot knows, known now
            self.batch_ids = BatchIds(batches)
            self.view = View.of(learner, position, learner_stats(learner, position, code_bits, recent))

    def learn(self, symbols: np.ndarray) -> float:
        """Learn one batch (on a worker thread) and publish the new view; the batch's code length."""
        bits = self.learner.learn(symbols)
        self.code_bits += float(bits.sum())
        self.recent = recent_after(self.recent, bits)
        position = self.view.position + len(symbols)
        self.view = View.of(self.learner, position, learner_stats(self.learner, position, self.code_bits,
                                                                  self.recent))
        return float(bits.sum())

    def snapshot_bytes(self) -> bytes:
        """The learner at its position as ``snapshot_file`` writes it (on a worker thread; nothing queued)."""
        position = self.view.position
        head = snapshot_file.head(position, self.code_bits, self.recent, self.batch_ids.upto(position))
        return b"".join(bytes(p) for p in (head, *sparse.encoded(self.learner.snapshot_parts())))


def symbols_of(body: bytes, itemsize: int) -> np.ndarray:
    return np.frombuffer(body, dtype=np.uint8 if itemsize == 1 else "<u2").copy()
