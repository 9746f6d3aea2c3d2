"""A replica's partitions: which it should own, the leases it holds for them, and the hand-offs.

Every round (:meth:`PartitionKeeper.step`, each ``ttl / 4`` seconds by
:meth:`PartitionKeeper.run`) a replica

1. beats its heartbeat and reads the live members (itself included);
2. works out the partitions rendezvous hashing gives it among them
   (``placement.owner_of``);
3. hands off each partition it holds but should not: ``on_lose(p,
   planned=True)`` (the owner's part: stop taking writes, drain, snapshot),
   then releases the lease so that the new owner need not wait for its TTL;
4. renews the others; one it cannot renew is lost at once (``on_lose(p,
   planned=False)``), and so is one whose deadline passed between rounds
   (a process paused past its lease): it serves nothing it no longer holds;
5. acquires the partitions it should own and nobody holds, and hands each
   to ``on_gain(p, lease)`` (the owner's part: load the snapshots, replay
   the logs).  If ``on_gain`` fails, the lease is released again and the
   error raised: a partition is never held by a replica that does not serve
   it.

A partition whose lease another replica holds is acquired once that replica
releases it (a planned hand-off: within a round) or stops renewing it (a
crash: within ``lease_ttl`` plus a round).  :meth:`PartitionKeeper.leave`
is the planned departure (SIGTERM, scale-down): every partition handed off,
then the member's key deleted, so the others take over at their next round.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

from .engine import Engine
from .ownership import Lease, LeaseLost, Leases, Membership
from .placement import check_member_id, owner_of

log = logging.getLogger("seqd")

Gain = Callable[[int, Lease], Awaitable[None]]
Lose = Callable[[int, bool], Awaitable[None]]


async def _nothing(*_):
    return None


class PartitionKeeper:
    def __init__(self, engine: Engine, member: str, info: dict | None = None, *, on_gain: Gain = _nothing,
                 on_lose: Lose = _nothing):
        self.engine, self.member, self.info = engine, check_member_id(member), dict(info or {})
        self.partitions = engine.settings.partitions
        self.interval = engine.settings.lease_ttl / 4
        self.members, self.leases = Membership(engine), Leases(engine)
        self.on_gain, self.on_lose = on_gain, on_lose
        self.held: dict[int, Lease] = {}
        self.moves = 0  # partitions gained after the first round
        self.renewals = 0
        self.live: set[str] = set()  # the members the last round saw
        self.wanted: set[int] = set()  # the partitions placement gave this replica among them
        self.rounds = 0  # rounds finished: 0 while the replica is still joining
        self._wake = asyncio.Event()

    def lease(self, partition: int) -> Lease | None:
        """This replica's lease of ``partition`` if it may serve it now."""
        lease = self.held.get(partition)
        return lease if lease is not None and lease.held() else None

    def wake(self) -> None:
        """Start the next round now, not at its timer (another replica released a partition)."""
        self._wake.set()

    async def lose(self, partition: int, planned: bool) -> None:
        """Give ``partition`` up: ``on_lose(partition, planned)``, and it is no longer held (the lease, if still
        valid, is the caller's to release)."""
        self.held.pop(partition, None)
        await self.on_lose(partition, planned)

    async def step(self) -> None:
        """One round: heartbeat, hand-offs, renewals, acquisitions."""
        await self.members.beat(self.member, self.info)
        live = set(await self.members.members()) | {self.member}
        self.live = live
        wanted = {p for p in range(self.partitions) if owner_of(p, live) == self.member}
        self.wanted = wanted
        for p in sorted(self.held):
            lease = self.held[p]
            if not lease.held():  # paused past the deadline: already not ours to serve
                await self.lose(p, False)
            elif p not in wanted:
                await self.lose(p, True)
                await self.leases.release(lease)
            else:
                try:
                    self.held[p] = await self.leases.renew(lease)
                    self.renewals += 1
                except LeaseLost:
                    await self.lose(p, False)
        for p in sorted(wanted - set(self.held)):
            lease = await self.leases.acquire(p, self.member)
            if lease is not None:
                self.held[p] = lease
                try:
                    await self.on_gain(p, lease)
                except BaseException:  # the owner could not take it up: give it back rather than sit on it
                    self.held.pop(p, None)
                    await self.leases.release(lease)
                    raise
                if self.rounds:
                    self.moves += 1
        self.rounds += 1

    async def run(self, stop: asyncio.Event) -> None:
        """Rounds every ``lease_ttl / 4`` seconds, or sooner after :meth:`wake`, until ``stop`` is set.  A round
        the engine cannot answer is logged and tried again at the next; the leases it could not renew by their
        deadline are lost meanwhile."""
        while not stop.is_set():
            started = time.monotonic()
            try:
                await self.step()
            except Exception as exc:
                log.warning("replica %s: a round of the partition keeper failed: %s: %s", self.member,
                            type(exc).__name__, exc)
                for p in [p for p, lease in self.held.items() if not lease.held()]:
                    await self.lose(p, False)
            self._wake.clear()
            waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(self._wake.wait())]
            await asyncio.wait(waiters, timeout=max(0.0, self.interval - (time.monotonic() - started)),
                               return_when=asyncio.FIRST_COMPLETED)
            for w in waiters:
                w.cancel()

    async def leave(self) -> None:
        """The planned departure: every partition handed off and released, then the member's key removed."""
        for p in sorted(self.held):
            lease = self.held[p]
            await self.lose(p, True)
            await self.leases.release(lease)
        await self.members.leave(self.member)
