"""Reaching a seqd cluster through NATS (``docs/cluster.md``): the subjects, a stream's partition, and the
transports that carry the client's plans (``_common.py``) over request/reply.

A cluster's replicas share the streams by partition.  The client needs no
list of replicas: it sends a stream's requests to the subject of the
stream's partition, and whichever replica owns the partition now answers.

| subject | who listens | what |
|---|---|---|
| ``seqd.req.<p>`` | the owner of partition p | the stream requests of ``protocol.py``, unchanged |
| ``seqd.ctl.any`` | every replica, as one queue group | ``ping`` |
| ``seqd.ctl.stats`` | every replica | ``stats`` without a stream: each answers for itself, the client merges |
| ``seqd.events.<stream>`` | clients | a stream's prediction events, wherever it lives |

A stream's name goes into a subject with each ``.`` written ``~``
(:func:`token`).  Its partition is :func:`partition_of` of its name, over
the number of partitions the cluster was created with (the key
``partitions`` of the key-value bucket ``seqd-cluster``; the client reads
it once).

During a move nobody answers for a while: NATS says at once that a subject
has no responder, and the transport waits and sends again until the
attempt's time is up; the plans then resend as they do after any timeout,
a publish with the same batch id, so the replica that takes the partition
over (which knows the ids from the log) acknowledges it again rather than
learning it twice.

``nats-py`` is the ``cluster`` extra (``pip install 'seqd[cluster]'``); it
is imported only by a client given ``nats://`` URLs.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence


from . import protocol
from ._common import Exchange, Operations, accept_reply, endpoint_list
from .errors import SeqdError
from .protocol import Event, Reply

REQUESTS = "seqd.req"
ANY = "seqd.ctl.any"  # a queue group of every replica: ping
STATS = "seqd.ctl.stats"  # every replica: its own statistics
KICK = "seqd.ctl.kick"  # a partition was released: every replica's keeper looks now
EVENTS = "seqd.events"
QUEUE_GROUP = "seqd"
CLUSTER_BUCKET = "seqd-cluster"
STATS_WAIT = 0.5  # seconds a fleet-wide stats waits for the replicas that have not answered yet
UNSERVED_WAIT = 0.2  # seconds before a fleet-wide stats is asked again, while a partition is between owners
CLUSTER_RETRIES = 8  # a cluster client's resends after a timeout by default: 5 s x 9 attempts outlast a move
# after a crash (the lease's 15 s and a keeper's round, docs/cluster.md)
NO_RESPONDER_WAIT = (0.05, 0.5)  # seconds between resends to a subject nobody listens to (first, most)

# what an Exchange's endpoint names in cluster mode (the transport turns it into a subject)
STREAM_PREFIX = "stream:"
CONTROL_ANY, CONTROL_STATS = "control:any", "control:stats"


def is_cluster(endpoints: str | Sequence[str]) -> bool:
    """Whether ``endpoints`` name a cluster (NATS URLs) rather than ZeroMQ endpoints."""
    schemes = {url.partition("://")[0] for url in servers_of(endpoints)}
    if "nats" in schemes and schemes != {"nats"}:
        raise ValueError("give NATS URLs (a cluster) or ZeroMQ endpoints (a daemon), not both")
    return schemes == {"nats"}


def servers_of(endpoints: str | Sequence[str]) -> tuple[str, ...]:
    """The URLs of one string, a comma-separated string, or a sequence of them."""
    return tuple(s for e in endpoint_list(endpoints) for s in e.split(",") if s)


def partition_of(name: str, partitions: int) -> int:
    """The partition of stream ``name`` among ``partitions``: the first 8 bytes of its name's BLAKE2b
    digest, big-endian, modulo the number of partitions."""
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}")
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


def token(name: str) -> str:
    """A stream's name as one subject token (a name holds no '~', so the mapping is one to one)."""
    return name.replace(".", "~")


def request_subject(partition: int) -> str:
    return f"{REQUESTS}.{partition}"


def event_subject(name: str) -> str:
    return f"{EVENTS}.{token(name)}"


def event_subjects(streams: str | Iterable[str] | None) -> list[str]:
    """The subjects of the events of ``streams`` (every stream's for None)."""
    if streams is None:
        return [f"{EVENTS}.>"]
    names = [streams] if isinstance(streams, str) else list(streams)
    return [event_subject(protocol.check_stream_name(n)) for n in names]


def encode_event(event: Event) -> bytes:
    """An event as one NATS message: the body of the PUB socket's second frame."""
    return protocol.encode_event(event)[1]


def decode_event(data: bytes) -> Event:
    return protocol.decode_event([b"", data])


def merge_stats(results: list[dict]) -> dict:
    """One fleet-wide ``stats`` from each replica's own: the streams and counts summed, and each replica
    under ``replicas`` (its member id, partitions and streams)."""
    merged = dict(server="seqd", version=",".join(sorted({str(r.get("version", "")) for r in results})),
                  uptime_seconds=max((float(r.get("uptime_seconds") or 0) for r in results), default=0.0),
                  streams=sorted({s for r in results for s in r.get("streams") or ()}),
                  queued=sum(int(r.get("queued") or 0) for r in results),
                  symbols_learned=sum(int(r.get("symbols_learned") or 0) for r in results),
                  unavailable={k: v for r in results for k, v in (r.get("unavailable") or {}).items()},
                  replicas=sorted((dict(member=r.get("member"), partitions=r.get("partitions") or [],
                                        streams=len(r.get("streams") or ()), moves=r.get("moves", 0),
                                        resident=r.get("resident"), memory_bytes=r.get("memory_bytes"),
                                        memory_peak_bytes=r.get("memory_peak_bytes"))
                                   for r in results), key=lambda r: str(r["member"])),
                  members=max((int(r.get("members") or 0) for r in results), default=0))
    return merged


class NatsLink:
    """One connection to the cluster's NATS, opened on first use, and the exchanges of the plans over it.
    Belongs to one event loop."""

    def __init__(self, servers: Sequence[str], *, connect_timeout: float = 5.0):
        self.servers = tuple(servers)
        self.connect_timeout = connect_timeout
        self.nc = None
        self.partitions: int | None = None
        self._lock: asyncio.Lock | None = None
        self._reconnected: asyncio.Event | None = None  # set (and replaced) each time the connection is remade

    async def connection(self):
        if self.nc is not None and not self.nc.is_closed:
            return self.nc
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.nc is None or self.nc.is_closed:
                try:
                    import nats
                except ImportError:
                    raise SeqdError("no_client", "a cluster client needs nats-py: pip install 'seqd[cluster]'") \
                        from None
                self._reconnected = asyncio.Event()

                async def reconnected():
                    self._reconnected.set()
                    self._reconnected = asyncio.Event()

                try:
                    self.nc = await nats.connect(list(self.servers), connect_timeout=self.connect_timeout,
                                                 allow_reconnect=True, max_reconnect_attempts=-1,
                                                 reconnect_time_wait=0.5, name="seqd-client",
                                                 reconnected_cb=reconnected)
                except Exception as exc:
                    raise SeqdError("no_reply", f"cannot reach NATS at {', '.join(self.servers)}: "
                                                f"{type(exc).__name__}: {exc}") from None
        return self.nc

    async def _partitions(self, deadline: float) -> int | None:
        """The cluster's number of partitions (read once), or None while it cannot be read."""
        if self.partitions is None:
            from nats.js.errors import BucketNotFoundError, KeyNotFoundError

            nc = await self.connection()
            try:
                kv = await nc.jetstream(timeout=max(0.1, deadline - time.monotonic())).key_value(CLUSTER_BUCKET)
                self.partitions = int((await kv.get("partitions")).value)
            except (BucketNotFoundError, KeyNotFoundError):
                raise SeqdError("no_reply", f"no seqd cluster on NATS at {', '.join(self.servers)}: no replica "
                                            "has started there yet") from None
            except Exception:
                return None  # JetStream electing a leader, say: the attempt waits and tries again
        return self.partitions

    async def exchange(self, ex: Exchange) -> Reply | None:
        """Send ``ex.request`` to whoever serves ``ex.endpoint``; its reply, or None if none came within
        ``ex.timeout`` (a subject with no responder is sent to again meanwhile)."""
        import nats.errors

        deadline = time.monotonic() + ex.timeout
        nc = await self.connection()
        data = protocol.encode_request(ex.request)
        if ex.endpoint == CONTROL_STATS:
            return await self._fleet_stats(nc, data, ex, deadline)
        delay = NO_RESPONDER_WAIT[0]
        while (remaining := deadline - time.monotonic()) > 0:
            subject = await self._subject(ex.endpoint, deadline)
            if subject is not None:
                try:
                    msg = await self._request(nc, subject, data, remaining)
                    if msg is None:
                        continue  # the connection was remade meanwhile: the request (or its reply) went with it
                    return accept_reply([msg.data], ex.request.id)
                except nats.errors.TimeoutError:
                    return None
                except (nats.errors.NoRespondersError, nats.errors.ConnectionReconnectingError,
                        nats.errors.ConnectionClosedError):
                    pass  # nobody owns it this moment (a move), or the connection is being re-made
            await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, NO_RESPONDER_WAIT[1])
        return None

    async def _request(self, nc, subject: str, data: bytes, timeout: float):
        """``nc.request``, or None as soon as the connection is remade (a node died): the request is then sent
        again on the new connection at once, instead of waiting out its timeout for a reply that is lost."""
        request = asyncio.ensure_future(nc.request(subject, data, timeout=timeout))
        remade = asyncio.ensure_future(self._reconnected.wait())
        try:
            await asyncio.wait({request, remade}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            remade.cancel()
        if request.done():
            return request.result()
        request.cancel()
        return None

    async def _subject(self, endpoint: str, deadline: float) -> str | None:
        if endpoint == CONTROL_ANY:
            return ANY
        partitions = await self._partitions(deadline)
        if partitions is None:
            return None
        return request_subject(partition_of(endpoint[len(STREAM_PREFIX):], partitions))

    async def _fleet_stats(self, nc, data: bytes, ex: Exchange, deadline: float) -> Reply | None:
        """The fleet's ``stats``, asked again (every :data:`UNSERVED_WAIT` seconds, within the attempt's time)
        while some partition is served by no replica that answered: a partition moving from one replica to
        another this moment, whose streams neither would list.  Still incomplete at the end, the reply says
        which partitions (``unserved``)."""
        while True:
            reply = await self._gather(nc, data, ex, deadline)
            if reply is None:
                return None
            partitions = await self._partitions(deadline)  # (a replica answered: the cluster exists)
            if partitions is None:
                return reply
            served = {p for r in reply.result["replicas"] for p in r["partitions"]}
            unserved = sorted(set(range(partitions)) - served)
            if not unserved or deadline - time.monotonic() < UNSERVED_WAIT + STATS_WAIT:
                reply.result["unserved"] = unserved
                return reply
            await asyncio.sleep(UNSERVED_WAIT)

    async def _gather(self, nc, data: bytes, ex: Exchange, deadline: float) -> Reply | None:
        """``stats`` of the whole fleet: every replica answers for itself; the client waits until as many
        replicas as the first answer counts as members have answered, or :data:`STATS_WAIT` after the
        first, within the attempt's time, and merges (:func:`merge_stats`)."""
        inbox = nc.new_inbox()
        answers: asyncio.Queue = asyncio.Queue()
        sub = await nc.subscribe(inbox, cb=answers.put)
        results: dict[str, dict] = {}
        try:
            await nc.publish(STATS, data, reply=inbox)
            wanted, settle = None, deadline
            while (remaining := min(deadline, settle) - time.monotonic()) > 0:
                try:
                    msg = await asyncio.wait_for(answers.get(), remaining)
                except asyncio.TimeoutError:
                    break
                reply = accept_reply([msg.data], ex.request.id)
                if reply is None or not reply.ok:
                    continue
                results[str(reply.result.get("member"))] = reply.result
                wanted = max(wanted or 0, int(reply.result.get("members") or 0))
                settle = min(settle, time.monotonic() + STATS_WAIT)
                if len(results) >= wanted:
                    break
        finally:
            await sub.unsubscribe()
        if not results:
            return None
        return Reply.success(ex.request.id, **merge_stats(list(results.values())))

    async def subscribe(self, subjects: list[str], deliver: Callable[[Event], None]):
        """NATS subscriptions to ``subjects``, each event (malformed ones skipped) handed to ``deliver``."""
        nc = await self.connection()

        async def on_message(msg):
            try:
                deliver(decode_event(msg.data))
            except protocol.ProtocolError:
                pass

        return [await nc.subscribe(s, cb=on_message) for s in subjects]

    def subscription(self, streams) -> "AsyncNatsSubscription":
        return AsyncNatsSubscription(self, event_subjects(streams))

    async def aclose(self) -> None:
        if self.nc is not None and not self.nc.is_closed:
            try:
                await self.nc.drain()
            except Exception:
                await self.nc.close()
        self.nc = None

    def close(self) -> None:
        """Close from synchronous code: the connection is drained in the background (``aclose`` waits)."""
        if self.nc is not None and not self.nc.is_closed:
            try:
                asyncio.get_running_loop().create_task(self.aclose())
            except RuntimeError:
                pass


def route(stream: str | None, endpoint: str | None, fleet: bool) -> str:
    """What a plan's Exchange names as its endpoint in cluster mode (:class:`NatsLink` maps it to a subject):
    a stream's partition, every replica (``fleet``: stats without a stream), or any one (ping)."""
    if endpoint is not None:
        return endpoint
    if stream is None:
        return CONTROL_STATS if fleet else CONTROL_ANY
    return STREAM_PREFIX + stream


def cluster_operations(servers: str | Sequence[str], *, timeout: float, retries: int | None,
                       max_batch: int) -> Operations:
    """The plans of a client of a cluster (``_common.Operations``): ``servers`` are NATS URLs, requests go by
    partition (:func:`route`), and a timed-out request is resent ``CLUSTER_RETRIES`` times unless ``retries``
    says otherwise."""
    return Operations(servers_of(servers), timeout=timeout, retries=CLUSTER_RETRIES if retries is None else retries,
                      max_batch=max_batch, router=route)


# --- the blocking client's transport and subscription: a private event loop in a thread -------------------
class LoopThread:
    """An asyncio event loop in a daemon thread, for the blocking client's NATS connection."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="seqd-nats", daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float | None = None):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()


class SyncNatsTransport:
    """The blocking client's exchanges, run on a :class:`LoopThread`."""

    def __init__(self, servers: Sequence[str]):
        self.loop = LoopThread()
        self.link = NatsLink(servers)

    def subscription(self, streams) -> "NatsSubscription":
        return NatsSubscription(self, event_subjects(streams))

    def exchange(self, ex: Exchange) -> Reply | None:
        return self.loop.run(self.link.exchange(ex))

    def subscribe(self, subjects: list[str], deliver: Callable[[Event], None]):
        return self.loop.run(self.link.subscribe(subjects, deliver))

    def unsubscribe(self, subs) -> None:
        async def gone():
            for s in subs:
                try:
                    await s.unsubscribe()
                except Exception:
                    pass
        if self.loop.loop.is_running():
            self.loop.run(gone(), timeout=5)

    def close(self) -> None:
        if self.loop.loop.is_running():
            try:
                self.loop.run(self.link.aclose(), timeout=5)
            except Exception:
                pass
        self.loop.stop()


class NatsSubscription:
    """A blocking client's events from a cluster: iterate (blocking), or :meth:`recv` with a timeout."""

    def __init__(self, transport: SyncNatsTransport, subjects: list[str]):
        import queue

        self._events: queue.SimpleQueue = queue.SimpleQueue()
        self._transport = transport
        self._subs = transport.subscribe(subjects, self._events.put)
        self.closed = False

    def recv(self, timeout: float | None = None) -> Event | None:
        import queue

        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return None

    def __iter__(self) -> "NatsSubscription":
        return self

    def __next__(self) -> Event:
        if self.closed:
            raise StopIteration
        return self.recv()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._transport.unsubscribe(self._subs)

    def __enter__(self) -> "NatsSubscription":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncNatsSubscription:
    """An asyncio client's events from a cluster, as an async iterator; :meth:`recv` takes a timeout."""

    def __init__(self, link: NatsLink, subjects: list[str]):
        self._link, self._subjects = link, subjects
        self._events: asyncio.Queue = asyncio.Queue()
        self._subs = None

    async def _ensure(self) -> None:
        if self._subs is None:
            self._subs = await self._link.subscribe(self._subjects, self._events.put_nowait)

    async def recv(self, timeout: float | None = None) -> Event | None:
        await self._ensure()
        try:
            return await asyncio.wait_for(self._events.get(), timeout)
        except asyncio.TimeoutError:
            return None

    def __aiter__(self) -> "AsyncNatsSubscription":
        return self

    async def __anext__(self) -> Event:
        return await self.recv()

    async def aclose(self) -> None:
        for s in self._subs or ():
            try:
                await s.unsubscribe()
            except Exception:
                pass
        self._subs = []

    def close(self) -> None:
        if self._subs:
            asyncio.ensure_future(self.aclose())

    async def __aenter__(self) -> "AsyncNatsSubscription":
        await self._ensure()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
