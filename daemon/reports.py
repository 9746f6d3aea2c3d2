"""What the background threads tell the I/O loop: one small frozen record per kind of news.

Workers, the sync thread and the namespace thread never answer a request nor
touch the loop's bookkeeping; they put one of these on the loop's outbox and
wake it; the loop takes them in the order they came, and
:meth:`.completions.Completions.report` decides what each one means.  A report that names a stream carries the
:class:`~.streams.Stream` object itself, not its name: a stream dropped
meanwhile may have given its name to a new one, and the loop tells them apart
by identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .pending import AwaitSync, Pending, StreamRef


@dataclass(frozen=True, eq=False)
class Learned:
    """A worker learned a batch (or a piece of a long one)."""

    stream: StreamRef
    symbols: int
    bits: float  # its prequential code length
    seconds: float
    woken: float | None = None  # seconds taken to bring the learner back from hibernation first, if it slept


@dataclass(frozen=True, eq=False)
class Hibernated:
    """A worker let a stream's learner go (:meth:`~.streams.Stream.request_hibernation`)."""

    stream: StreamRef
    snapshot: int | None  # the position of the snapshot it wrote first (None: the last one was current)


@dataclass(frozen=True, eq=False)
class SnapshotWritten:
    """A worker wrote the stream's snapshot, durably, at ``position``."""

    stream: StreamRef
    requesters: tuple["Pending", ...]  # the snapshot requests it answers (none for a periodic one)
    position: int


@dataclass(frozen=True, eq=False)
class SnapshotFailed:
    """A worker could not write the snapshot (disk full, say); the log still holds everything."""

    stream: StreamRef
    requesters: tuple["Pending", ...]
    error: Exception


@dataclass(frozen=True, eq=False)
class Faulted:
    """Learning raised: the stream is faulted, or stays dropped if it was dropped meanwhile (the reason is in
    ``stream.broken``)."""

    stream: StreamRef
    orphans: tuple["Pending", ...]  # snapshot requests that will now never be written


@dataclass(frozen=True, eq=False)
class Synced:
    """The sync thread fsynced the logs these accepted batches were appended to (group commit)."""

    acks: tuple["AwaitSync", ...]
    failed: Mapping[str, str]  # stream name -> why its log could not be synced


@dataclass(frozen=True, eq=False)
class Created:
    """The namespace thread built a new stream's files; it is not served yet."""

    name: str
    stream: StreamRef


@dataclass(frozen=True, eq=False)
class CreateFailed:
    """The namespace thread could not build a new stream's files; nothing claims the name."""

    name: str
    error: Exception


@dataclass(frozen=True, eq=False)
class DropSynced:
    """The namespace thread made a drop's move to the trash durable, or ``error`` says why not."""

    stream: StreamRef
    requester: "Pending"
    error: Exception | None


@dataclass(frozen=True, eq=False)
class NeedsRoom:
    """A worker found a hibernated stream's next batch, but the learners' memory budget had no room to wake it
    (:mod:`.budget`): nothing was done, the stream waits (still scheduled) until hibernations make room."""

    stream: StreamRef
