"""Who is in the cluster, and who owns which partition: heartbeats and leases in JetStream's key-value store.

* **Members.**  Each replica keeps a key of its own id in ``seqd-members``,
  rewritten every heartbeat; the bucket's TTL removes the key of a replica
  that stopped beating.  The live members are the keys present.
* **Leases.**  Partition p is owned under the key ``p<p>`` of
  ``seqd-leases``.  A replica acquires it by creating the key (refused while
  another holds it), renews it by compare-and-set on the revision it last
  wrote, and releases it by deleting it at that revision.  A lease it stops
  renewing disappears after the bucket's TTL, and another replica can then
  acquire it.  Revisions only grow, so the revision of the acquisition is a
  fencing token: a lease acquired later has a larger one (``Lease.token``,
  which also names the owner's log appends, ``log.StreamWriter``).
* **Stopping in time.**  The server counts a lease's TTL from when it
  stored the last renewal, which is after the replica sent it.  So a
  replica treats its lease as held until ``sent + ttl - margin`` by its own
  monotonic clock (:attr:`Lease.deadline`), and stops serving the
  partition before then unless a renewal has succeeded.  What a replica
  still tries after that (a process resumed from SIGSTOP, say) is refused by
  the log's fence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import msgpack

from .engine import LEASES_BUCKET, MEMBERS_BUCKET, WRONG_LAST_SEQUENCE, Engine, entry
from .placement import check_member_id


class LeaseLost(Exception):
    """The lease was not renewed: it lapsed, or another replica holds the partition now."""


def lease_margin(ttl: float) -> float:
    """How long before the server could let a lease lapse its holder stops counting on it."""
    return max(1.0, 0.2 * ttl)


@dataclass(frozen=True)
class Lease:
    partition: int
    member: str
    token: int  # the revision of the acquisition: larger for every later holder
    revision: int  # the revision of the last renewal (compare-and-set)
    deadline: float  # time.monotonic() until which the holder may serve

    def held(self, now: float | None = None) -> bool:
        return (time.monotonic() if now is None else now) < self.deadline


def lease_key(partition: int) -> str:
    return f"p{partition}"


class Membership:
    """The cluster's members, and this replica's own heartbeat."""

    def __init__(self, engine: Engine):
        self.engine = engine

    async def _bucket(self):
        return await self.engine.kv(MEMBERS_BUCKET)

    async def beat(self, member: str, info: dict) -> None:
        """Announce (or keep announcing) ``member``, with what others need to know of it (``info``)."""
        kv = await self._bucket()
        await kv.put(check_member_id(member), msgpack.packb(info))

    async def leave(self, member: str) -> None:
        kv = await self._bucket()
        await kv.delete(check_member_id(member))

    async def members(self) -> dict[str, dict]:
        """The live members and what each announced."""
        from nats.js.errors import NoKeysError

        kv = await self._bucket()
        try:
            keys = await kv.keys()
        except NoKeysError:
            return {}
        live = {}
        for key in keys:
            found = await entry(kv, key)
            if found is None:
                continue  # left or lapsed between the listing and the read
            try:
                live[key] = msgpack.unpackb(found.value)
            except Exception:
                live[key] = {}
        return live


class Leases:
    """The partitions' leases."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.ttl = engine.settings.lease_ttl

    async def _bucket(self):
        return await self.engine.kv(LEASES_BUCKET)

    def _deadline(self, sent: float) -> float:
        """Until when a lease whose acquisition or renewal was sent at ``sent`` may be counted on."""
        return sent + self.ttl - lease_margin(self.ttl)

    async def acquire(self, partition: int, member: str) -> Lease | None:
        """The lease of ``partition`` for ``member``, or None while another replica holds it."""
        from nats.js.errors import KeyWrongLastSequenceError

        kv = await self._bucket()
        sent = time.monotonic()
        try:
            revision = await kv.create(lease_key(partition), msgpack.packb({"member": check_member_id(member)}))
        except KeyWrongLastSequenceError:
            return None
        return Lease(partition, member, revision, revision, self._deadline(sent))

    async def renew(self, lease: Lease) -> Lease:
        """The lease, renewed; :class:`LeaseLost` if it lapsed or changed hands."""
        from nats.js.errors import KeyWrongLastSequenceError

        kv = await self._bucket()
        sent = time.monotonic()
        try:
            revision = await kv.update(lease_key(lease.partition), msgpack.packb({"member": lease.member}),
                                       last=lease.revision)
        except KeyWrongLastSequenceError:
            found = await entry(kv, lease_key(lease.partition))
            if (found is not None and found.revision > lease.revision
                    and msgpack.unpackb(found.value)["member"] == lease.member):
                # an earlier renewal that timed out had landed: the lease is still this member's, at that
                # revision, and counted on no longer than before (when it landed is not known)
                return Lease(lease.partition, lease.member, lease.token, found.revision, lease.deadline)
            raise LeaseLost(f"partition {lease.partition}: the lease lapsed or another replica holds it") from None
        return Lease(lease.partition, lease.member, lease.token, revision, self._deadline(sent))

    async def release(self, lease: Lease) -> None:
        """Give the partition up (a planned hand-off): the next owner need not wait for the TTL."""
        from nats.js.errors import BadRequestError, KeyWrongLastSequenceError

        kv = await self._bucket()
        try:
            await kv.delete(lease_key(lease.partition), last=lease.revision)
        except KeyWrongLastSequenceError:
            pass  # lapsed already, perhaps taken: not ours to delete
        except BadRequestError as exc:  # (nats-py's delete does not translate the same refusal)
            if exc.err_code != WRONG_LAST_SEQUENCE:
                raise

    async def holder(self, partition: int) -> tuple[str, int] | None:
        """(member, revision) of the partition's lease, or None if nobody holds it."""
        found = await entry(await self._bucket(), lease_key(partition))
        if found is None:
            return None
        return msgpack.unpackb(found.value)["member"], found.revision
