"""A request whose reply waits, what it waits for, and the jobs the loop gives the namespace thread.

These small records are the vocabulary the daemon's parts share: request
handling (:mod:`.requests`) answers a request at once or returns one of the
deferrals below; :mod:`.completions` decides what each asks of the loop;
the waiting predicts (:mod:`.waiters`) and the background threads'
reports (:mod:`.reports`) carry the :class:`Pending` requests they will
answer.  They hold data only, and import nothing of the daemon but for
type annotations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Union

import numpy as np

from ..clients.protocol import Reply, Request



class StreamRef(Protocol):
    """The stream a record is about: a :class:`~.streams.Stream`, which this module does not import (``streams.py``
    imports the records); the records only carry it."""

    name: str


@dataclass
class Pending:
    """A request whose reply waits: for a sync, a worker, or a position to be learned."""

    identity: bytes
    request: Request
    t0: float
    deadline: float = 0.0  # a waiting predict: when it times out
    position: int = 0  # an accepted batch: the stream's length after it
    done: bool = False  # a waiting predict already answered (it stays in the deadline heap until it pops)
    connection: int = -1  # the client connection it came over (its socket's descriptor), -1 if unknown

    def __lt__(self, other: "Pending") -> bool:  # for the deadline heap
        return self.deadline < other.deadline


@dataclass(frozen=True, eq=False)
class AwaitSync:
    """A batch appended to its stream's log, acknowledged after the log's fsync."""

    pending: Pending
    stream: StreamRef
    symbols: np.ndarray  # uint8 or uint16, as queued for the learner


@dataclass(frozen=True, eq=False)
class AwaitWorker:
    """A snapshot queued for a worker; ``schedule`` is the stream to hand to one (None: it is already)."""

    schedule: "StreamRef | None"


@dataclass(frozen=True, eq=False)
class AwaitPosition:
    """A predict waiting in the waiters for its stream's position."""


@dataclass(frozen=True, eq=False)
class AwaitRoom:
    """A create whose learner does not fit in the memory budget now (:mod:`.budget`): it waits for the
    hibernations that make room, then goes to the namespace thread."""

    job: "CreateJob"


@dataclass(frozen=True, eq=False)
class AwaitNamespace:
    """A create or a drop for the namespace thread.  A drop has also ended the stream's other waiting
    requests (``answers``: each with its reply and its kind) and may have work for a worker (``schedule``:
    deleting the folder)."""

    job: "CreateJob | DropJob"
    schedule: "StreamRef | None" = None
    answers: tuple[tuple[Pending, Reply, str], ...] = ()


Deferral = Union[AwaitSync, AwaitWorker, AwaitPosition, AwaitRoom, AwaitNamespace]


# -- what the loop asks of the namespace thread (:func:`.background.namespace`) --------------------------

@dataclass(frozen=True, eq=False)
class CreateJob:
    """Build a new stream's files (its folder, description, first log segment, and their fsyncs) and its
    learner, of ``state_bytes`` (taken from the memory budget before the job is handed on)."""

    name: str
    config: object  # the stream's model's configuration (core/learners.py)
    state_bytes: int


@dataclass(frozen=True, eq=False)
class DropJob:
    """Make a drop durable: the stream's folder was moved to the trash; fsync the streams' folder."""

    stream: StreamRef
    requester: Pending
