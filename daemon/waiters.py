"""Predicts that wait for a position: kept by stream and by deadline, answered by whoever comes first.

A ``predict`` with ``min_position`` beyond what its stream has learned and a
``wait_ms`` waits here until one of three things happens: a worker reports
that the stream reached the position (:meth:`Waiters.wake`), its deadline
passes (:meth:`Waiters.expire`), or the stream is dropped
(:meth:`Waiters.drop`).  Each of these hands back the waiters it ends, and the
caller answers them; this module sends nothing and reads no clock.

A waiter is kept twice: in its stream's list (to wake it) and in a heap by
deadline (to expire it, and to tell the I/O loop how long it may sleep).  A
waiter answered through its stream is marked ``done`` and left in the heap
until it reaches the top, or until answered ones outnumber the others and
the heap is rebuilt without them.

The waiters are capped twice: :data:`MAX_WAITERS` in all, and
:data:`MAX_WAITERS_PER_CLIENT` for one client (by its routing identity), so
that one client cannot take every place.  A client whose connection closes
cannot be answered: :meth:`Waiters.release` hands back the waiters that came
over that connection (the loop learns of the close from the socket's
monitor), and their places are free at once rather than at their deadlines.

A waiter is any object with ``deadline`` (a time on the caller's clock),
``done``, ``identity`` (the client), ``connection`` (the connection it came
over, -1 if unknown) and ``request`` (with ``stream`` and
``min_position``), ordered by deadline: the daemon's
:class:`~.pending.Pending`.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pending import Pending

MAX_WAITERS = 10_000  # predicts waiting for a position, all streams together
MAX_WAITERS_PER_CLIENT = 1_000  # of them, from one client
_STALE_SLACK = 64  # answered waiters the heap may hold beyond twice the waiting ones before it is rebuilt


class Waiters:
    """The waiting predicts of every stream, at most :data:`MAX_WAITERS` of them and
    :data:`MAX_WAITERS_PER_CLIENT` per client (both read at construction)."""

    def __init__(self, limit: int | None = None, client_limit: int | None = None):
        self.limit = MAX_WAITERS if limit is None else limit
        self.client_limit = MAX_WAITERS_PER_CLIENT if client_limit is None else client_limit
        self._by_stream: dict[str, list[Pending]] = {}
        self._deadlines: list[Pending] = []  # the same, as a heap by deadline
        self._waiting = 0
        self._per_client: dict[bytes, int] = {}  # waiting predicts of each client that has any
        self._per_connection: dict[int, int] = {}  # and of each known connection

    def __len__(self) -> int:
        """Predicts waiting, all streams together."""
        return self._waiting

    @property
    def full(self) -> bool:
        return self._waiting >= self.limit

    def refusal(self, identity: bytes) -> str | None:
        """Why one more predict of the client ``identity`` cannot wait, or None when it can."""
        if self._waiting >= self.limit:
            return f"{self.limit} predicts are already waiting for positions"
        if self._per_client.get(identity, 0) >= self.client_limit:
            return f"this client has {self.client_limit} predicts waiting for positions already, the most one may"
        return None

    def waiting_for(self, stream: str) -> list[Pending]:
        """The predicts waiting on ``stream``, in the order they came."""
        return [w for w in self._by_stream.get(stream, ()) if not w.done]

    def add(self, waiter: Pending, deadline: float) -> None:
        """Wait for ``waiter.request.min_position`` on its stream until ``deadline``; the caller checks
        :attr:`full` first (ValueError when it did not)."""
        why = self.refusal(waiter.identity)
        if why is not None:
            raise ValueError(why)
        waiter.deadline = deadline
        self._by_stream.setdefault(waiter.request.stream, []).append(waiter)
        heapq.heappush(self._deadlines, waiter)
        self._waiting += 1
        _count(self._per_client, waiter.identity, 1)
        if waiter.connection >= 0:
            _count(self._per_connection, waiter.connection, 1)

    def _end(self, waiter: Pending) -> None:
        """``waiter`` is answered: it no longer counts (its lists are the caller's to update)."""
        waiter.done = True
        self._waiting -= 1
        _count(self._per_client, waiter.identity, -1)
        if waiter.connection >= 0:
            _count(self._per_connection, waiter.connection, -1)

    def wake(self, stream: str, position: int) -> list[Pending]:
        """``stream`` has learned ``position`` symbols: the waiters this satisfies, in the order they came."""
        waiters = self._by_stream.get(stream)
        if not waiters:
            return []
        keep, woken = [], []
        for w in waiters:
            if w.done:
                continue
            if w.request.min_position <= position:
                self._end(w)
                woken.append(w)
            else:
                keep.append(w)
        self._by_stream[stream] = keep
        return woken

    def expire(self, now: float) -> list[Pending]:
        """The waiters whose deadline is at or before ``now``, earliest first; they are forgotten."""
        expired = []
        while self._deadlines and self._deadlines[0].deadline <= now:
            w = heapq.heappop(self._deadlines)
            if w.done:
                continue
            self._end(w)
            waiters = self._by_stream.get(w.request.stream)
            if waiters is not None:
                waiters.remove(w)
                if not waiters:
                    del self._by_stream[w.request.stream]
            expired.append(w)
        return expired

    def drop(self, stream: str) -> list[Pending]:
        """``stream`` is gone: its waiters, in the order they came; they are forgotten."""
        dropped = []
        for w in self._by_stream.pop(stream, []):
            if not w.done:
                self._end(w)
                dropped.append(w)
        return dropped

    def release(self, connection: int) -> list[Pending]:
        """The client connection ``connection`` closed: the waiters that came over it, in the order they
        came, stream by stream; they are forgotten."""
        if not self._per_connection.get(connection):
            return []
        released = []
        for stream in list(self._by_stream):
            keep = []
            for w in self._by_stream[stream]:
                if w.done:
                    continue
                if w.connection == connection:
                    self._end(w)
                    released.append(w)
                else:
                    keep.append(w)
            if keep:
                self._by_stream[stream] = keep
            else:
                del self._by_stream[stream]
        return released

    def next_deadline(self) -> float:
        """The earliest deadline of a waiter still waiting (infinity when none is)."""
        if len(self._deadlines) > 2 * self._waiting + _STALE_SLACK:  # answered ones below the top: let them go
            self._deadlines = [w for w in self._deadlines if not w.done]
            heapq.heapify(self._deadlines)
        while self._deadlines and self._deadlines[0].done:
            heapq.heappop(self._deadlines)
        return self._deadlines[0].deadline if self._deadlines else float("inf")


def _count(counts: dict, key, change: int) -> None:
    """counts[key] += change, the key forgotten at zero (clients and connections come and go)."""
    n = counts.get(key, 0) + change
    if n:
        counts[key] = n
    else:
        del counts[key]
