"""A replica's partitions: which it should own, the leases it holds for them, and the hand-offs.

Every round (:meth:`PartitionKeeper.step`, each ``ttl / 4`` seconds by
:meth:`PartitionKeeper.run`) a replica

1. beats its heartbeat and reads the live members (itself included);
2. works out the partitions rendezvous hashing gives it among them
   (``placement.owner_of``);
3. renews every lease it holds; one it cannot renew because another
   replica holds it, or whose deadline passed between rounds (a process
   paused past its lease), is lost at once (``on_lose(p, planned=False)``):
   it serves nothing it no longer holds.  One the engine did not answer for
   (a timeout: a node failing over) is tried again at the next round, and
   lost only at its deadline;
4. hands off each partition it holds but should not: ``on_lose(p,
   planned=True)`` (the owner's part: snapshot while still serving, then
   stop taking writes and drain), then releases the lease and says so
   (``on_released(p)``: the replica tells the others), so that the new owner
   takes it up at once, not after the TTL or at its next round;
5. acquires the partitions it should own and nobody holds, and hands each
   to ``on_gain(p, lease)`` (the owner's part: load the snapshots, replay
   the logs; the replica does it in a task of its own, so that the rounds
   go on meanwhile, and gives the partition back with :meth:`give_back` if
   it cannot).  If ``on_gain`` fails, the lease is released again and the
   error raised: a partition is never held by a replica that does not serve
   it.

Hand-offs and acquisitions go on while the round's interval lasts; the rest
wait for the next round, which renews first, so that snapshotting or loading
many partitions never lets the leases already held lapse.

A partition whose lease another replica holds is acquired once that replica
releases it (a planned hand-off: at once, told by ``on_released``) or stops renewing it (a
crash: within ``lease_ttl`` plus a round).  :meth:`PartitionKeeper.leave`
is the planned departure (SIGTERM, scale-down): the member's key deleted,
then every partition handed off, each taken up as soon as it is released.
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

RETRY_AFTER = 0.25  # seconds before a failed round is tried again (doubling, up to a round's interval)

Gain = Callable[[int, Lease], Awaitable[None]]
Lose = Callable[[int, bool], Awaitable[None]]
Released = Callable[[int], Awaitable[None]]


async def _nothing(*_):
    return None


class PartitionKeeper:
    def __init__(self, engine: Engine, member: str, info: dict | None = None, *, on_gain: Gain = _nothing,
                 on_lose: Lose = _nothing, on_released: Released = _nothing):
        self.engine, self.member, self.info = engine, check_member_id(member), dict(info or {})
        self.partitions = engine.settings.partitions
        self.interval = engine.settings.lease_ttl / 4
        self.members, self.leases = Membership(engine), Leases(engine)
        self.on_gain, self.on_lose, self.on_released = on_gain, on_lose, on_released
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
        """Give ``partition`` up: ``on_lose(partition, planned)``, and it is no longer held.  A lost lease is
        dropped first (nothing may be served under it); a planned hand-off keeps it valid while ``on_lose``
        runs, so that the owner can go on serving while it snapshots, and releases it after (:meth:`_hand_off`)."""
        if not planned:
            self.held.pop(partition, None)
        try:
            await self.on_lose(partition, planned)
        finally:
            self.held.pop(partition, None)

    async def give_back(self, partition: int) -> None:
        """A partition the owner could not take up: lost (``on_lose(p, planned=False)``) and its lease released,
        so that another round, or another replica, tries again."""
        lease = self.held.get(partition)
        await self.lose(partition, False)
        if lease is not None and lease.held():
            await self.leases.release(lease)

    async def _hand_off(self, partition: int, lease: Lease) -> None:
        """A planned hand-off: ``on_lose(p, planned=True)``, the lease released, and ``on_released(p)``, so that
        the next owner takes it up at once instead of at its next round."""
        await self.lose(partition, True)
        await self.leases.release(lease)
        await self.on_released(partition)

    async def step(self) -> None:
        """One round: heartbeat, hand-offs, renewals, acquisitions (as many as a round's interval allows)."""
        started = time.monotonic()
        try:
            await self._within(self.members.beat(self.member, self.info))
            live = set(await self._within(self.members.members())) | {self.member}
        except Exception:
            if not self.rounds:
                raise
            await self._renew_all()  # the engine failing over, say: the leases held are renewed all the same
            raise
        self.live = live
        wanted = {p for p in range(self.partitions) if owner_of(p, live) == self.member}
        self.wanted = wanted
        for p in sorted(self.held):  # every lease renewed first, those about to be handed off too (still served)
            if not self.held[p].held():  # paused past the deadline: already not ours to serve
                await self.lose(p, False)
            else:
                await self._renew(p)
        # then hand-offs and acquisitions while the round's interval lasts, the rest at the next round (after
        # its renewals): snapshotting or loading many partitions must not let the leases held lapse
        def time_left() -> bool:
            return time.monotonic() - started <= self.interval

        for p in sorted(set(self.held) - wanted):
            if not time_left():
                break
            if self.held[p].held():
                await self._hand_off(p, self.held[p])
        for p in sorted(wanted - set(self.held)):
            if not time_left() or set(self.held) - wanted:
                break  # (a partition still to hand off goes first)
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

    async def _within(self, request):
        """An engine request given at most a round's interval: one that hangs (its node died, the engine is
        electing a leader) leaves time to try again before a lease's deadline."""
        return await asyncio.wait_for(request, self.interval)

    async def _renew(self, partition: int) -> None:
        """Renew one lease; lost if another replica holds it or it lapsed.  One that could not be renewed
        (a timeout, the engine failing over) stays held until its deadline: the next round tries again."""
        lease = self.held[partition]
        try:
            self.held[partition] = await self._within(self.leases.renew(lease))
            self.renewals += 1
        except LeaseLost:
            await self.lose(partition, False)
        except Exception as exc:
            log.info("replica %s: partition %d's lease not renewed this round: %s: %s", self.member, partition,
                     type(exc).__name__, exc)

    async def _renew_all(self) -> None:
        for p in sorted(self.held):
            if self.held[p].held():
                await self._renew(p)

    async def run(self, stop: asyncio.Event) -> None:
        """Rounds every ``lease_ttl / 4`` seconds, or sooner after :meth:`wake`, until ``stop`` is set.  A round
        the engine cannot answer is logged and tried again soon (:data:`RETRY_AFTER`, doubling up to the
        interval); the leases it could not renew by their deadline are lost meanwhile."""
        retry = RETRY_AFTER
        while not stop.is_set():
            started = time.monotonic()
            self._wake.clear()  # (before the round: a wake-up during it starts the next one at once)
            wait = None
            try:
                await self.step()
                retry = RETRY_AFTER
            except Exception as exc:
                log.warning("replica %s: a round of the partition keeper failed: %s: %s", self.member,
                            type(exc).__name__, exc)
                for p in [p for p, lease in self.held.items() if not lease.held()]:
                    await self.lose(p, False)
                wait, retry = retry, min(retry * 2, self.interval)  # (an engine failing over answers soon)
            if wait is None:
                wait = max(0.0, self.interval - (time.monotonic() - started))
            waiters = [asyncio.create_task(stop.wait()), asyncio.create_task(self._wake.wait())]
            await asyncio.wait(waiters, timeout=wait, return_when=asyncio.FIRST_COMPLETED)
            for w in waiters:
                w.cancel()

    async def leave(self) -> None:
        """The planned departure: the member's key removed first, so that the others' placement leaves this
        replica out and each takes its partitions as they come free; then every partition handed off."""
        await self.members.leave(self.member)
        for p in sorted(self.held):
            await self._hand_off(p, self.held[p])
