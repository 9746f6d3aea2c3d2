"""The batch ids a stream remembers: a retried publish is acknowledged again, never appended twice.

A publisher that gets no answer cannot know whether its batch landed.  With
a position (a conditional append) a retry settles it; without one, the
client library gives each batch an id of its own (``batch`` in the
protocol) and sends the same id with every retry.  The stream remembers the
ids of its last :data:`~.wal.RECENT_BATCHES` batches with the positions they
took; a publish whose id is among them is answered with those positions.  The
ids are kept in each batch's log record (:mod:`.wal`) and, for the batches
a snapshot holds, in the snapshot (:func:`.snapshot_file.head`), so a
restart remembers them all.

The I/O loop adds and looks up (at publish); a worker reads them for a
snapshot (:meth:`BatchIds.upto`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Iterable

from .wal import RECENT_BATCHES


class BatchIds:
    """The most recent batch ids of a stream, each with the [start, end) positions its batch took."""

    def __init__(self, known: Iterable[tuple[bytes, int, int]] = (), capacity: int = RECENT_BATCHES):
        self.capacity = capacity
        self._ids: OrderedDict[bytes, tuple[int, int]] = OrderedDict()
        self._lock = threading.Lock()
        for batch, start, end in known:
            self.add(batch, start, end)

    def add(self, batch: bytes, start: int, end: int) -> None:
        with self._lock:
            self._ids[batch] = (start, end)
            self._ids.move_to_end(batch)
            while len(self._ids) > self.capacity:
                self._ids.popitem(last=False)

    def get(self, batch: bytes) -> tuple[int, int] | None:
        """Where the batch of this id went, or None if it is not among the recent ones."""
        with self._lock:
            return self._ids.get(batch)

    def upto(self, position: int) -> list[tuple[bytes, int, int]]:
        """The ids of the batches that end at or before ``position`` (what a snapshot there holds), oldest first."""
        with self._lock:
            return [(batch, start, end) for batch, (start, end) in self._ids.items() if end <= position]

    def __len__(self) -> int:
        return len(self._ids)
