"""Everything the sync and the async client share, without I/O: routing, symbols, batching,
reply matching, error mapping and the retry decisions.

An operation is a *plan*: a generator that yields actions — :class:`Exchange`
(send a request to an endpoint, wait for its reply) or :class:`Sleep` — and
is sent back each outcome (the :class:`~seqd.clients.protocol.Reply`, or
``None`` when no reply came in time).  It returns the typed result or raises
a :class:`~seqd.clients.errors.SeqdError`.  The sync client runs plans with
blocking sockets and ``time.sleep``, the async client with ``await``: only
the waiting differs.

A driver must honour one rule, the *lazy pirate*: a socket whose exchange
timed out is closed (linger 0) and the next exchange uses a fresh one, so a
late reply can never be taken for the answer to a later request.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
import os
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import protocol
from .errors import NO_REPLY, ConflictError, SeqdTimeout, ServerError, error_for
from .protocol import Reply, Request
from .results import Ack, Created, Prediction, ServerInfo, ServerStats, Snapshot, StreamStats

DEFAULT_API = "tcp://127.0.0.1:7710"
DEFAULT_MAX_BATCH = 65536
BATCH_ID_BYTES = 16  # a publish's batch id: random, so two clients never share one
DEFAULT_RETRIES = 3  # resends after a timeout (a cluster's: clients/cluster.py, CLUSTER_RETRIES)


@dataclass(frozen=True)
class Exchange:
    """Send ``request`` to ``endpoint``; wait at most ``timeout`` seconds for the reply with its id."""

    endpoint: str
    request: Request
    timeout: float


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` (a ``busy`` reply's ``retry_after_ms``)."""

    seconds: float


Plan = Generator["Exchange | Sleep", "Reply | None", Any]


# --- routing ----------------------------------------------------------------------------------
def endpoint_list(endpoints: str | Sequence[str]) -> tuple[str, ...]:
    """The API endpoints as a tuple: one string, or a sequence of them (replicas)."""
    eps = (endpoints,) if isinstance(endpoints, str) else tuple(endpoints)
    if not eps or not all(isinstance(e, str) and e for e in eps):
        raise ValueError("give at least one endpoint, such as tcp://127.0.0.1:7710")
    for e in eps:
        if "://" not in e:  # ZeroMQ itself says only "Invalid argument"
            raise ValueError(f"{e!r} is not a ZeroMQ endpoint: it needs a transport, as in tcp://{e}")
    if len(set(eps)) != len(eps):
        raise ValueError("an endpoint is listed twice")
    return eps


def weight(endpoint: str, stream: str) -> int:
    """The rendezvous weight of (endpoint, stream): a stable 64-bit BLAKE2b hash (never ``hash()``,
    which changes from one Python process to the next)."""
    digest = hashlib.blake2b(endpoint.encode() + b"\x00" + stream.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def route(endpoints: Sequence[str], stream: str) -> str:
    """The replica serving ``stream``: highest random weight (rendezvous hashing).  Removing an
    endpoint moves only the streams it served; adding one takes about 1/n of each other's."""
    if len(endpoints) == 1:  # (the common case: nothing to choose, no hashing)
        return endpoints[0]
    return max(endpoints, key=lambda ep: (weight(ep, stream), ep))


def derive_pub(endpoint: str) -> str:
    """The PUB endpoint of an API endpoint: the same tcp host, port + 1 (the daemon's default layout)."""
    scheme, sep, rest = endpoint.partition("://")
    host, colon, port = rest.rpartition(":")
    if scheme != "tcp" or not sep or not colon or not port.isdigit():
        raise ValueError(f"cannot derive the PUB endpoint of {endpoint!r}: give pub= (or --pub) explicitly")
    return f"tcp://{host}:{int(port) + 1}"


def pub_endpoints(endpoints: Sequence[str], pub: str | Sequence[str] | None) -> tuple[str, ...]:
    """The PUB endpoints to subscribe to: ``pub`` as given, or derived from every API endpoint."""
    if pub is None:
        return tuple(derive_pub(ep) for ep in endpoints)
    return endpoint_list(pub)


def topics(streams: str | Iterable[str] | None) -> list[bytes]:
    """Subscription prefixes: one exact topic per stream, or b"" (everything) for None."""
    if streams is None:
        return [b""]
    names = [streams] if isinstance(streams, str) else list(streams)
    return [protocol.topic(protocol.check_stream_name(n)) for n in names]


# --- symbols and batches ----------------------------------------------------------------------
def normalize_symbols(symbols) -> bytes | tuple[int, ...]:
    """bytes-like stays bytes (one symbol per byte), str is UTF-8 encoded, an iterable gives ints."""
    if isinstance(symbols, (bytes, bytearray, memoryview)):
        return bytes(symbols)
    if isinstance(symbols, str):
        return symbols.encode("utf-8")
    out = []
    for s in symbols:
        if isinstance(s, bool):
            raise protocol.ProtocolError(protocol.BAD_SYMBOL, f"symbols must be integers, got {s!r}")
        try:
            out.append(operator.index(s))
        except TypeError:
            raise protocol.ProtocolError(protocol.BAD_SYMBOL, f"symbols must be integers, got {s!r}") from None
    return tuple(out)


def batches(symbols: bytes | tuple[int, ...], max_batch: int) -> Iterator[tuple[int, bytes | tuple[int, ...]]]:
    """``(offset, chunk)`` pieces of at most ``max_batch`` symbols (one empty piece for no symbols,
    which the protocol then refuses)."""
    if max_batch < 1:
        raise ValueError("max_batch must be at least 1")
    if not symbols:
        yield 0, symbols
    for start in range(0, len(symbols), max_batch):
        yield start, symbols[start:start + max_batch]


# --- replies ----------------------------------------------------------------------------------
def accept_reply(frames: list[bytes], request_id: int) -> Reply | None:
    """The reply to ``request_id`` in ``frames``, or None for anything else (discarded): garbage, or
    a stale reply to an earlier request.

    A failure with id 0 is accepted too: a server answers a request it cannot decode with
    ``protocol.request_id(data)``, which is 0 when the id itself is unreadable; a socket carries
    one request at a time, so that refusal is ours (rather than a timeout after ``retries``).
    """
    if not frames:
        return None
    try:
        reply = protocol.decode_reply(frames[-1])
    except protocol.ProtocolError:
        return None
    if reply.id == request_id or (reply.id == 0 and not reply.ok):
        return reply
    return None


# --- plans ------------------------------------------------------------------------------------
class Operations:
    """Builds the plan of every operation: request fields, routing, retries, result types."""

    def __init__(self, endpoints: str | Sequence[str] = DEFAULT_API, *, timeout: float = 5.0, retries: int = 3,
                 max_batch: int = DEFAULT_MAX_BATCH, clock: Callable[[], float] = time.monotonic,
                 router: Callable[[str | None, str | None, bool], str] | None = None):
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.endpoints = endpoint_list(endpoints)
        self.timeout, self.retries, self.max_batch, self.clock = float(timeout), int(retries), max_batch, clock
        self._ids = itertools.count(1)  # 0 is what a server answers when it cannot read an id
        self._without_ids: set[str] = set()  # endpoints of servers that know no batch ids (before seqd 0.18)
        self.router = router  # a cluster's (clients/cluster.py: route): (stream, endpoint, fleet) -> endpoint

    def endpoint_for(self, stream: str | None, endpoint: str | None = None, *, fleet: bool = False) -> str:
        """Where a request goes: ``endpoint`` if given, else the first endpoint for a request without a stream
        and the stream's replica for one with; ``fleet``: a request without a stream that every replica of a
        cluster answers (``stats``)."""
        if self.router is not None:
            return self.router(stream, endpoint, fleet)
        if endpoint is not None:
            return endpoint
        return self.endpoints[0] if stream is None else route(self.endpoints, stream)

    def call(self, endpoint: str, fields: dict[str, Any], *, retry: bool, extra_wait: float = 0.0,
             what: str | None = None) -> Plan:
        """One request until it is answered: resend after a timeout (when ``retry``, at most
        ``retries`` times, each on a fresh socket), wait and resend after ``busy`` (while the budget
        of ``timeout × retries`` lasts).  Returns the result map; raises the mapped error, with
        ``after_timeout`` set on it when an earlier attempt went unanswered."""
        start = self.clock()
        budget = self.timeout * max(self.retries, 1)
        timeouts = 0
        while True:
            request = Request(id=next(self._ids), **fields)
            reply = yield Exchange(endpoint, request, self.timeout + extra_wait)
            if reply is None:
                timeouts += 1
                if not retry or timeouts > self.retries:
                    waited = f"{self.timeout + extra_wait:g}s"
                    detail = what or (f"after {timeouts} attempt{'s' * (timeouts > 1)} of {waited} each")
                    raise SeqdTimeout(NO_REPLY, f"no reply from seqd at {endpoint} {detail}", endpoint)
                continue
            if reply.ok:
                return reply.result
            if reply.code == protocol.BUSY:
                delay = max(reply.retry_after_ms or 0, 1) / 1000
                if self.clock() - start + delay <= budget:
                    yield Sleep(delay)
                    continue
            error = error_for(reply)
            error.after_timeout = timeouts > 0
            raise error

    def ping(self, endpoint: str | None = None) -> Plan:
        return ServerInfo.from_result((yield from self.call(self.endpoint_for(None, endpoint), {"op": "ping"},
                                                            retry=True)))

    def create(self, stream: str, preset: str = "bytes", config: dict | None = None, exist_ok: bool = False) -> Plan:
        fields = {"op": "create", "stream": stream, "preset": preset, "config": config, "exist_ok": exist_ok}
        return Created.from_result((yield from self.call(self.endpoint_for(stream), fields, retry=exist_ok)))

    def drop(self, stream: str) -> Plan:
        yield from self.call(self.endpoint_for(stream), {"op": "drop", "stream": stream}, retry=False)

    def publish(self, stream: str, symbols, position: int | None = None, create: bool = False) -> Plan:
        """Publish in batches of at most ``max_batch``; returns the last batch's :class:`Ack`.  Every batch
        carries an id of its own (``batch``), sent again with each retry, so that a batch the server took
        before the reply was lost is acknowledged again rather than learned twice: a publish is retried
        after a timeout, conditional or not.  (A server before seqd 0.18 knows no ids: then only a
        conditional batch is retried.)"""
        data = normalize_symbols(symbols)
        endpoint, ack = self.endpoint_for(stream), None
        for offset, chunk in batches(data, self.max_batch):
            pos = None if position is None else position + offset
            fields = {"op": "publish", "stream": stream, "symbols": chunk, "position": pos, "create": create}
            if endpoint not in self._without_ids:
                fields["batch"] = os.urandom(BATCH_ID_BYTES)
            try:
                ack = Ack.from_result((yield from self._publish_one(endpoint, fields)))
            except ServerError as exc:
                if "batch" not in fields or "unknown field(s) batch" not in exc.message:
                    raise
                self._without_ids.add(endpoint)  # an earlier server: no ids, as it was
                del fields["batch"]
                ack = Ack.from_result((yield from self._publish_one(endpoint, fields)))
        return ack

    def _publish_one(self, endpoint: str, fields: dict[str, Any]) -> Plan:
        """One batch until it is acknowledged, or why not: retried after a timeout when it has an id or a
        position; a conflict after a timeout is checked against where the batch would have left the stream."""
        pos, stream, n = fields["position"], fields["stream"], len(fields["symbols"])
        if pos is None and "batch" not in fields:
            what = (f"within {self.timeout:g}s: the batch of {n} symbols may or may not have been accepted (this "
                    "server knows no batch ids, and an unconditional publish is not retried; give a position to "
                    "make it safe)")
            return (yield from self.call(endpoint, fields, retry=False, what=what))
        try:
            return (yield from self.call(endpoint, fields, retry=True))
        except ConflictError as exc:
            if not exc.after_timeout:
                raise
            # An earlier attempt went unanswered: if it landed, the stream is exactly one batch longer.
            now = StreamStats.from_result((yield from self.call(endpoint, {"op": "stats", "stream": stream},
                                                                retry=True)))
            if now.accepted != pos + n:
                raise
            return {"stream": stream, "position": now.accepted, "queued": now.queued}

    def predict(self, stream: str, top: int = 5, full: bool = False, min_position: int = 0,
                wait: float = 0.0) -> Plan:
        wait_ms = int(round(wait * 1000))
        fields = {"op": "predict", "stream": stream, "top": 0 if full else top, "min_position": min_position,
                  "wait_ms": wait_ms}
        result = yield from self.call(self.endpoint_for(stream), fields, retry=True, extra_wait=wait_ms / 1000)
        return Prediction.from_result(result)

    def stats(self, stream: str | None = None, endpoint: str | None = None) -> Plan:
        result = yield from self.call(self.endpoint_for(stream, endpoint, fleet=True),
                                      {"op": "stats", "stream": stream}, retry=True)
        return ServerStats.from_result(result) if stream is None else StreamStats.from_result(result)

    def snapshot(self, stream: str) -> Plan:
        result = yield from self.call(self.endpoint_for(stream), {"op": "snapshot", "stream": stream}, retry=True)
        return Snapshot.from_result(result)


class ClientBase:
    """What the blocking and the asyncio client share beyond the plans: routing, subscriptions, closing.

    A subclass sets ``_context``, ``_curve``, ``_transport``, ``_ops``,
    ``endpoints`` and ``pub`` (through :meth:`_setup`), and names its
    subscription class.
    """

    _subscription_class: type

    def _setup(self, endpoints, pub, *, timeout: float, retries: int | None, max_batch: int, context, curve,
               transport) -> None:
        self._ops = Operations(endpoints, timeout=timeout, retries=DEFAULT_RETRIES if retries is None else retries,
                               max_batch=max_batch)
        self.endpoints = self._ops.endpoints
        self.pub = pub
        self._context = context
        self._curve = curve
        self._transport = transport(context, curve)
        self._subscriptions: list = []
        self.cluster = False

    def _setup_cluster(self, ops: Operations, transport) -> None:
        """A client of a cluster: ``ops`` are the cluster's plans (``cluster.cluster_operations``: requests go
        by partition), and ``transport`` (made from their servers) carries them and the subscriptions."""
        self._ops = ops
        self.endpoints = self._ops.endpoints
        self.pub = None
        self._context = self._curve = None
        self._transport = transport(self.endpoints)
        self._subscriptions = []
        self.cluster = True

    def endpoint_for(self, stream: str) -> str:
        """The API endpoint that serves ``stream``."""
        return self._ops.endpoint_for(stream)

    def subscribe(self, streams: str | Iterable[str] | None = None):
        """Events of the given streams (all streams for None), from every PUB endpoint."""
        if self.cluster:
            sub = self._transport.subscription(streams)
        else:
            sub = self._subscription_class(self._context, pub_endpoints(self.endpoints, self.pub), topics(streams),
                                           self._curve)
        self._subscriptions.append(sub)
        return sub

    def close(self) -> None:
        self._transport.close()
        for sub in self._subscriptions:
            sub.close()
        self._subscriptions.clear()

