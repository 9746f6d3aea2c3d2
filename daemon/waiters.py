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

A waiter is any object with ``deadline`` (a time on the caller's clock),
``done`` and ``request`` (with ``stream`` and ``min_position``), ordered by
deadline: the daemon's :class:`~.pending.Pending`.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .pending import Pending

MAX_WAITERS = 10_000  # predicts waiting for a position, all streams together
_STALE_SLACK = 64  # answered waiters the heap may hold beyond twice the waiting ones before it is rebuilt


class Waiters:
    """The waiting predicts of every stream, at most :data:`MAX_WAITERS` of them (read at construction)."""

    def __init__(self, limit: int | None = None):
        self.limit = MAX_WAITERS if limit is None else limit
        self._by_stream: dict[str, list[Pending]] = {}
        self._deadlines: list[Pending] = []  # the same, as a heap by deadline
        self._waiting = 0

    def __len__(self) -> int:
        """Predicts waiting, all streams together."""
        return self._waiting

    @property
    def full(self) -> bool:
        return self._waiting >= self.limit

    def waiting_for(self, stream: str) -> list[Pending]:
        """The predicts waiting on ``stream``, in the order they came."""
        return [w for w in self._by_stream.get(stream, ()) if not w.done]

    def add(self, waiter: Pending, deadline: float) -> None:
        """Wait for ``waiter.request.min_position`` on its stream until ``deadline``; the caller checks
        :attr:`full` first (ValueError when it did not)."""
        if self.full:
            raise ValueError(f"{self.limit} predicts are already waiting for positions")
        waiter.deadline = deadline
        self._by_stream.setdefault(waiter.request.stream, []).append(waiter)
        heapq.heappush(self._deadlines, waiter)
        self._waiting += 1

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
                w.done = True
                self._waiting -= 1
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
            w.done = True
            self._waiting -= 1
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
                w.done = True
                self._waiting -= 1
                dropped.append(w)
        return dropped

    def next_deadline(self) -> float:
        """The earliest deadline of a waiter still waiting (infinity when none is)."""
        if len(self._deadlines) > 2 * self._waiting + _STALE_SLACK:  # answered ones below the top: let them go
            self._deadlines = [w for w in self._deadlines if not w.done]
            heapq.heapify(self._deadlines)
        while self._deadlines and self._deadlines[0].done:
            heapq.heappop(self._deadlines)
        return self._deadlines[0].deadline if self._deadlines else float("inf")
