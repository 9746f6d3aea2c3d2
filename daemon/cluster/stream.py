"""One stream of a partition a replica holds (``replica.py``): its learner, the writer of its log, the
batches accepted and not yet learned, the view it serves, and its snapshot's bytes."""

from __future__ import annotations

import asyncio
import time

import numpy as np

from .. import snapshot_file, sparse
from ..batch_ids import BatchIds
from ..learner_store import RECENT
from ..views import View, learner_stats, recent_after
from .log import StreamWriter


class ClusterStream:
    """One stream of a held partition: its learner, the writer of its log, the batches accepted and not yet
    learned, and the view it serves."""

    def __init__(self, name: str, created: float, config, writer: StreamWriter, learner, position: int,
                 code_bits: float = 0.0, recent: np.ndarray | None = None, batches=(), snapshot_seq: int = 0):
        self.name, self.created, self.config, self.writer, self.learner = name, created, config, writer, learner
        self.code_bits = code_bits
        self.recent = np.zeros(RECENT) if recent is None else recent
        self.batch_ids = BatchIds(batches)
        self.snapshot_seq = snapshot_seq  # the log record the latest snapshot stands on (0: none)
        self.snapshot_position = position if snapshot_seq else 0
        self.snapshot_time = time.monotonic()
        self.queue: list[np.ndarray] = []
        self.queued = 0
        self.lock = asyncio.Lock()  # appends, one at a time and in order
        self.learned = asyncio.Condition()
        self.learning: asyncio.Task | None = None
        self.view = View.of(learner, position, learner_stats(learner, position, code_bits, self.recent))

    @property
    def accepted(self) -> int:
        return self.writer.position

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
