"""A cluster's settings, and its JetStream resources: the log, the key-value buckets, the object store.

``connect`` makes (or finds) every resource with the settings below, so
the first replica of a fleet creates the cluster and the others join it.
The number of partitions is recorded at creation in the ``seqd-cluster``
bucket; a replica started with another number refuses to join, since the
streams' partitions would not agree (``placement.partition_of``).

| resource | what it holds |
|---|---|
| stream ``SEQD_LOG``, subjects ``seqd.log.>`` | every stream's log (``log.py``) |
| bucket ``seqd-cluster`` | the cluster's fixed settings (the partitions) |
| bucket ``seqd-members`` (TTL ``heartbeat_ttl``) | one key per live replica (``ownership.Membership``) |
| bucket ``seqd-leases`` (TTL ``lease_ttl``) | one key per owned partition (``ownership.Leases``) |
| bucket ``seqd-pointers`` | each stream's latest snapshot (``snapshots.py``) |
| object store ``seqd-snapshots`` | the snapshots themselves |

Every one is replicated ``replicas`` times (3 on a 3-node NATS cluster, 1
on a single node) and file-backed.  JetStream must run with
``sync_interval: always`` for an acknowledged append to survive a power
failure (``docs/cluster.md``); the server's setting cannot be read from a
client, so the documentation and ``deploy/`` carry it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

LOG_STREAM = "SEQD_LOG"
CLUSTER_BUCKET, MEMBERS_BUCKET, LEASES_BUCKET, POINTERS_BUCKET = ("seqd-cluster", "seqd-members", "seqd-leases",
                                                                  "seqd-pointers")
SNAPSHOT_STORE = "seqd-snapshots"
DUPLICATE_WINDOW = 120.0  # seconds JetStream remembers a message id: a retried append within it lands once
WRONG_LAST_SEQUENCE = 10071  # JetStream's error code for a failed expected-last-sequence condition (log and KV)


class ClusterError(Exception):
    """The cluster cannot be joined as configured; the message says why."""


def transient(error: Exception) -> bool:
    """Whether an engine error means "not now" (no leader yet, a node failing over, a connection being
    re-established) rather than "never"."""
    import nats.errors
    from nats.js.errors import APIError, NoStreamResponseError, ServiceUnavailableError

    if isinstance(error, (nats.errors.TimeoutError, nats.errors.NoRespondersError, NoStreamResponseError,
                          ServiceUnavailableError,
                          nats.errors.ConnectionReconnectingError, asyncio.TimeoutError)):
        return True
    return isinstance(error, APIError) and error.code in (408, 503)


@dataclass(frozen=True)
class ClusterSettings:
    servers: tuple[str, ...]  # NATS URLs
    partitions: int = 16  # fixed when the cluster is created
    replicas: int = 3  # JetStream replicas of every resource
    lease_ttl: float = 15.0  # seconds: above the engine's fail-over (4-10 s measured), so a fail-over keeps leases
    heartbeat_ttl: float = 15.0  # seconds a member stays listed without a heartbeat
    request_timeout: float = 5.0  # seconds an engine request may take

    def __post_init__(self):
        if isinstance(self.servers, str):
            object.__setattr__(self, "servers", tuple(s for s in self.servers.split(",") if s))
        if not self.servers:
            raise ValueError("a cluster needs at least one NATS server URL")
        if not 1 <= self.partitions <= 4096:
            raise ValueError(f"partitions must be in [1, 4096], got {self.partitions}")
        if self.replicas not in (1, 3, 5):
            raise ValueError(f"replicas must be 1, 3 or 5, got {self.replicas}")
        if not self.lease_ttl >= 2.0 or not self.heartbeat_ttl >= 2.0:
            raise ValueError("lease_ttl and heartbeat_ttl must be at least 2 seconds")


@dataclass
class Engine:
    """A connection to the cluster's JetStream, with its resources found or made."""

    settings: ClusterSettings
    nc: object  # nats.aio.client.Client
    js: object  # its JetStreamContext
    _opened: dict = field(default_factory=dict, repr=False)

    async def kv(self, bucket: str):
        """The key-value bucket ``bucket`` (one of the module's table), opened once."""
        if bucket not in self._opened:
            self._opened[bucket] = await self.js.key_value(bucket)
        return self._opened[bucket]

    async def snapshot_store(self):
        """The object store of the snapshots, opened once."""
        if SNAPSHOT_STORE not in self._opened:
            self._opened[SNAPSHOT_STORE] = await self.js.object_store(SNAPSHOT_STORE)
        return self._opened[SNAPSHOT_STORE]

    async def close(self) -> None:
        await self.nc.close()


async def entry(kv, key: str):
    """The key's entry in bucket ``kv`` (its value and revision), or None if it has none (never written,
    deleted, lapsed)."""
    from nats.js.errors import KeyDeletedError, KeyNotFoundError

    try:
        return await kv.get(key)
    except (KeyNotFoundError, KeyDeletedError):
        return None


async def connect(settings: ClusterSettings, *, name: str = "seqd") -> Engine:
    """Connect to the cluster and make sure its resources exist; :class:`ClusterError` if its fixed settings
    differ from ``settings``."""
    import nats

    nc = await nats.connect(list(settings.servers), name=name, connect_timeout=settings.request_timeout,
                            allow_reconnect=True, max_reconnect_attempts=-1, reconnect_time_wait=0.5)
    js = nc.jetstream(timeout=settings.request_timeout)
    deadline = asyncio.get_running_loop().time() + 6 * settings.request_timeout
    while True:  # a cluster still electing its leaders (a node just restarted) answers "not now" for a while
        try:
            await _ensure(js, settings)
            return Engine(settings, nc, js)
        except BaseException as e:
            if isinstance(e, Exception) and transient(e) and asyncio.get_running_loop().time() < deadline:
                await asyncio.sleep(0.5)
                continue
            await nc.close()
            raise


async def _ensure(js, settings: ClusterSettings) -> None:
    """Find or make every resource (the module's table)."""
    from nats.js import api
    from nats.js.errors import KeyWrongLastSequenceError, NotFoundError

    await _ensure_stream(js, api.StreamConfig(
        name=LOG_STREAM, subjects=["seqd.log.>"], storage=api.StorageType.FILE, num_replicas=settings.replicas,
        retention=api.RetentionPolicy.LIMITS, discard=api.DiscardPolicy.NEW, max_msgs_per_subject=-1,
        duplicate_window=DUPLICATE_WINDOW, allow_direct=True))
    cluster = await _bucket(js, api, CLUSTER_BUCKET, settings, ttl=None)
    fixed = str(settings.partitions).encode()
    try:
        await cluster.create("partitions", fixed)
    except KeyWrongLastSequenceError:
        have = (await cluster.get("partitions")).value
        if have != fixed:
            raise ClusterError(f"this cluster was created with {have.decode(errors='replace')} partitions, not "
                               f"{settings.partitions}: a stream's partition depends on the number")
    await _bucket(js, api, MEMBERS_BUCKET, settings, ttl=settings.heartbeat_ttl)
    await _bucket(js, api, LEASES_BUCKET, settings, ttl=settings.lease_ttl)
    await _bucket(js, api, POINTERS_BUCKET, settings, ttl=None)
    try:
        await js.object_store(SNAPSHOT_STORE)
    except NotFoundError:
        await js.create_object_store(SNAPSHOT_STORE, config=api.ObjectStoreConfig(
            bucket=SNAPSHOT_STORE, storage=api.StorageType.FILE, replicas=settings.replicas))


async def _ensure_stream(js, config) -> None:
    from nats.js.errors import NotFoundError

    try:
        await js.stream_info(config.name)
    except NotFoundError:
        await js.add_stream(config)


async def _bucket(js, api, bucket: str, settings: ClusterSettings, ttl: float | None):
    from nats.js.errors import BucketNotFoundError

    try:
        return await js.key_value(bucket)
    except BucketNotFoundError:
        return await js.create_key_value(api.KeyValueConfig(
            bucket=bucket, history=1, ttl=ttl, storage=api.StorageType.FILE, replicas=settings.replicas))
