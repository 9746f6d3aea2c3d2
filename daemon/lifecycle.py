"""A stream's lifecycle: its states and the transitions between them, in one table.

A :class:`~.streams.Stream` is built (by a create, in the namespace thread, or
by a restore at start) before the I/O loop serves it::

    creating ──> live ──> broken ──> faulted
        │          │         │          │
        │          └─────────┴──────────┴──> dropped ──> gone
        └──> gone                 (live ──> faulted too)

* **creating**: its files are in place but the loop does not serve it yet;
  requests naming it are told to retry (``busy``).  A creation that the
  limits refuse (``max_state_bytes``) goes straight to *gone*.
* **live**: it takes batches, learns them, answers, and is snapshotted.
* **broken**: its write-ahead log failed (an append, an fsync, a rotation):
  it refuses batches until a restart, since none may be learned past a hole;
  what it had queued is still learned, and it is still snapshotted on request.
* **faulted**: learning raised, so the learner is in an unknown state: it is
  fed nothing more and never snapshotted.
* **dropped**: the loop has forgotten it and moved its folder to the trash;
  the drop is answered once the namespace thread has made that move durable
  (or with why it could not).
* **gone**: the loop no longer refers to it (a worker may still be deleting its folder from the
  trash); its name may belong to a new stream.

Whether a snapshot is queued (``snapshot_pending``) and whether a worker holds
the stream (``scheduled``) are not states of the lifecycle: a live stream
takes batches while it is snapshotted, and is scheduled many times over.

Illegal transitions raise :class:`IllegalTransition`: a state change the
table does not name is a fault of ours, never something to carry on from.
"""

from __future__ import annotations

import enum


class State(enum.Enum):
    CREATING = "creating"
    LIVE = "live"
    BROKEN = "broken"
    FAULTED = "faulted"
    DROPPED = "dropped"
    GONE = "gone"


# (from, to) -> the event that moves a stream between them
TRANSITIONS: dict[tuple[State, State], str] = {
    (State.CREATING, State.LIVE): "registered by the loop: created, or restored at start",
    (State.CREATING, State.GONE): "refused by the limits after its files were built; the files are removed",
    (State.LIVE, State.BROKEN): "its write-ahead log failed",
    (State.LIVE, State.FAULTED): "learning raised",
    (State.BROKEN, State.FAULTED): "learning raised while what it had queued was learned",
    (State.LIVE, State.DROPPED): "dropped",
    (State.BROKEN, State.DROPPED): "dropped",
    (State.FAULTED, State.DROPPED): "dropped",
    (State.DROPPED, State.GONE): "the namespace thread has synced the move to the trash (or says why not)",
}

SERVED = frozenset({State.LIVE, State.BROKEN, State.FAULTED})  # in the loop's streams, answering requests
ENDED = frozenset({State.DROPPED, State.GONE})  # takes no more work and writes nothing more


class IllegalTransition(ValueError):
    """A state change that :data:`TRANSITIONS` does not allow."""


def check(current: State, target: State) -> State:
    """``target``, when the table allows moving there from ``current``; IllegalTransition otherwise."""
    if (current, target) not in TRANSITIONS:
        allowed = sorted(to.value for (frm, to) in TRANSITIONS if frm is current)
        raise IllegalTransition(f"a stream cannot go from {current.value} to {target.value} "
                                f"(from {current.value}: {', '.join(allowed) or 'nowhere'})")
    return target
