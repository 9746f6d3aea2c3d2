"""Where a stream's learner lives on disk: its snapshot, and a byte stream's history file beside it.

A snapshot (:mod:`.snapshot_file`) holds the learner at some position with
the stream's statistics, and is replaced atomically.  A learner that keeps a
ring of the symbols it has seen (the byte model's 64 MiB of history) has its
snapshots leave that ring to the history file (:mod:`.history_file`): the
symbols learned since the last snapshot are appended and made durable before
the snapshot that needs them takes its place, so no snapshot rewrites them,
and a restore reads them back from there.  Both are written by the worker
that holds the stream, under the stream's I/O lock for what a drop must not
meet (:meth:`LearnerStore.write`).

This module also says how much memory a stream's learner takes: what a new
one takes (:func:`resident_bytes`), the most it can grow to
(:func:`most_bytes`), and the most a snapshot may inflate to
(:func:`learner_bound`).
"""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path
from typing import Callable

import numpy as np

from ..core.arrays_snapshot import ring_views
from ..core.learners import first_resident_nbytes, keeps_ring, model_of, state_nbytes
from . import history_file, snapshot_file, sparse, wal

RECENT = 4096  # symbols over which the "recent" bits/symbol is taken
RECENT_BYTES = RECENT * 8  # their code lengths, in memory beside the learner (the snapshot holds them while it sleeps)


def resident_bytes(config) -> int:
    """What a new stream of ``config`` holds in memory while its learner is there, beyond the stream's own
    bytes: the learner's arrays and the recent code lengths, which leave memory when it hibernates.  A
    learner whose memory grows with its stream (a byte stream's history and tables) starts with less than
    :func:`most_bytes`, and the stream counts what it takes as it grows."""
    return first_resident_nbytes(config) + RECENT_BYTES


def most_bytes(config) -> int:
    """The most a stream of ``config`` holds in memory beyond its own bytes: its learner grown to the full
    size its configuration allows."""
    return state_nbytes(config) + RECENT_BYTES


def learner_bound(config) -> int:
    """The most a snapshot's learner may inflate to: the learner of ``config`` (stream.json's), and a little for
    its description; a damaged or hostile file cannot make the reading take more."""
    return state_nbytes(config) + (1 << 20)


def keeps_history(config) -> bool:
    """Whether a learner of ``config`` keeps a ring of the symbols it has seen (a byte model's), which its
    stream's snapshots leave to the history file (``core/learners.py``: its model says)."""
    return keeps_ring(config)


class Dropped(Exception):
    """The stream was dropped: it writes nothing more."""


class LearnerStore:
    """A stream's snapshot, and its history file if its learner keeps one, in ``directory``."""

    def __init__(self, directory: Path, config, *, fsync: bool):
        self.directory = directory
        self.config = config
        self.snapshot = directory / "snapshot"
        # what a crash left of a rewrite of the history, or of snapshots being written (``snapshot.tmp``: the
        # name earlier versions used); a drop's move may leave one too
        for leftover in [*directory.glob("snapshot.*.tmp"), directory / "snapshot.tmp",
                         directory / (history_file.NAME + ".tmp")]:
            leftover.unlink(missing_ok=True)
        self.history = (history_file.HistoryFile.open(directory, wal.itemsize_for(config.alphabet_cap), fsync=fsync)
                        if keeps_history(config) else None)

    def read(self):
        """(position, cumulative code length, recent code lengths, learner, batch ids) of the snapshot; ValueError naming
        the file when it, or the history it needs, cannot be read, or when its position is not the count of
        symbols its learner has learned."""
        position, code_bits, recent, learner, batches = snapshot_file.read(
            self.snapshot, RECENT, max_learner_bytes=learner_bound(self.config),
            learner_type=model_of(self.config).learner, history=self.history)
        if learner.config != self.config:
            raise ValueError(f"{self.snapshot}: its model configuration differs from the stream's")
        if learner.stats["symbols"] != position:  # a header can be rewritten with a checksum to match
            raise ValueError(f"{self.snapshot}: its header says position {position}, but its learner has learned "
                             f"{learner.stats['symbols']} symbols")
        return position, code_bits, recent, learner, batches

    def restored_at(self, position: int) -> None:
        """The learner was restored at ``position``: what the history file holds past it was appended for a
        snapshot that never took its place, and goes (the log's replay learns those symbols again)."""
        if self.history is not None:
            self.history.keep_until(position)

    def write(self, learner, position: int, code_bits: float, recent: np.ndarray, io_lock: threading.Lock,
              dropped: Callable[[], bool], batches=()) -> None:
        """The learner at ``position`` and the statistics, atomically: the history first (appended, durable),
        then the snapshot (a temporary file of its own name, fsynced, renamed over the old one, the folder
        fsynced), then the history written again if it holds more than two rings.  Under ``io_lock`` for what
        touches the folder: a drop moves it away only between snapshots, and a dropped stream (``dropped()``)
        writes nothing more (:class:`Dropped`)."""
        head = snapshot_file.head(position, code_bits, recent, batches)
        if self.history is not None:  # the symbols the snapshot leaves out are on disk before it is
            with io_lock:
                if dropped():
                    raise Dropped(self.directory.name)
                self._history_to(learner, position, rewrite=False)
            parts = learner.snapshot_parts(history=False)
        else:
            parts = learner.snapshot_parts()
        # The long part, outside the lock (zlib deflates and the file is written without the GIL).
        # A name of its own: should the stream be dropped and its name created again meanwhile, this file
        # lands in the new stream's folder, where it must not meet that stream's own snapshot being written.
        tmp = snapshot_file.write_durably(self.snapshot.with_name(f"snapshot.{uuid.uuid4().hex}.tmp"), head,
                                          sparse.encoded(parts))
        with io_lock:
            if dropped():
                tmp.unlink(missing_ok=True)
                raise Dropped(self.directory.name)
            os.replace(tmp, self.snapshot)
            wal.fsync_path(self.directory)
            if self.history is not None:
                self._history_to(learner, position, rewrite=True)

    def _history_to(self, learner, position: int, rewrite: bool) -> None:
        """The history file up to ``position``, the learner's: the symbols since its end appended; or, with
        ``rewrite``, once it holds more than twice the ring, written again holding the ring alone.  A file
        that no longer meets the ring (a stream restored from a snapshot that held its history, or one that
        learned more than a ring since its last snapshot) is written again whatever ``rewrite`` says."""
        ring, t = learner.history
        h = self.history
        if t != position or h.end > t:  # cannot be: the file is cut back to the snapshot it serves at restore
            raise RuntimeError(f"{h.path}: the learner has seen {t} symbols at position {position}, and the file "
                               f"reaches {h.end}")
        n = min(t, ring.shape[0])
        if h.first > t - n or h.end < t - n or (rewrite and h.end - h.first > 2 * ring.shape[0]):
            h.rewrite(t - n, ring_views(ring, t - n, n))
        elif not rewrite:
            h.append(h.end, ring_views(ring, h.end, t - h.end))
