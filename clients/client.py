"""The blocking seqd client: a DEALER socket per endpoint, the lazy pirate on timeouts.

    >>> with Client("tcp://127.0.0.1:7710") as c:               # doctest: +SKIP
    ...     c.publish("web", b"GET /index.html 200\\n", create=True)
    ...     c.predict("web", top=3)

A :class:`Client` belongs to one thread (ZeroMQ sockets are not thread-safe):
give each thread its own.  Streams are spread over replicas by rendezvous
hashing (``endpoints`` may list several); requests without a stream go to the
first endpoint.  On a timeout the socket is closed (linger 0), a fresh one is
opened and idempotent requests are sent again (``retries`` times): ping,
predict, stats, snapshot, create with ``exist_ok``, and every publish.  Each
batch carries a random id of its own (``batch``), resent with it, so a
daemon that took it before the reply was lost acknowledges it again and
learns it once (``docs/protocol.md``).  Against a daemon before seqd 0.18,
which knows no ids, only *conditional* publishes (``position`` given) are
retried — one answered by ``conflict`` is acknowledged if the stream's
``accepted`` shows the earlier attempt landed — and an unconditional one
raises :class:`SeqdTimeout` on a timeout, saying the batch may or may not
have been accepted.  ``busy`` replies are waited out (``retry_after_ms``)
and resent.

Subscriptions use a SUB socket on the PUB endpoint(s): ``pub`` as given, or
by default each API endpoint's tcp port + 1 (7710 -> 7711).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import zmq

from . import protocol
from ._common import DEFAULT_API, DEFAULT_MAX_BATCH, ClientBase, Exchange, Plan, Sleep, accept_reply
from ._sockets import CurveKeys, open_dealer, open_sub
from .cluster import is_cluster
from .errors import BusyError, ConflictError, NoSuchStreamError, SeqdError, SeqdTimeout, ServerError
from .protocol import Event, Reply
from .results import Ack, Created, Prediction, ServerInfo, ServerStats, Snapshot, StreamStats

__all__ = ["Client", "Subscription", "CurveKeys", "Ack", "Created", "Prediction", "ServerInfo", "ServerStats", "Snapshot",
           "StreamStats", "SeqdError", "BusyError", "ConflictError", "NoSuchStreamError", "SeqdTimeout",
           "ServerError"]


class _Transport:
    """Blocking exchanges over DEALER sockets, one idle connection kept per endpoint."""

    def __init__(self, context: zmq.Context, curve: CurveKeys | None = None):
        self.context = context
        self.curve = curve
        self.idle: dict[str, _Connection] = {}

    def exchange(self, ex: Exchange) -> Reply | None:
        conn = self.idle.pop(ex.endpoint, None) or _Connection(open_dealer(self.context, ex.endpoint, self.curve))
        answered = False
        try:
            deadline = time.monotonic() + ex.timeout
            conn.send_timeout(ex.timeout)
            try:
                conn.sock.send(protocol.encode_request(ex.request))
            except zmq.Again:
                return None
            while (remaining := deadline - time.monotonic()) > 0:
                if conn.poller.poll(max(1, int(remaining * 1000))):
                    reply = accept_reply(conn.sock.recv_multipart(), ex.request.id)
                    if reply is not None:
                        answered = True
                        return reply
            return None
        finally:
            if answered:
                self.idle[ex.endpoint] = conn
            else:  # lazy pirate: a socket that may still get a late reply is never reused
                conn.sock.close(linger=0)

    def close(self) -> None:
        for conn in self.idle.values():
            conn.sock.close(linger=0)
        self.idle.clear()


class _Connection:
    """A DEALER socket with its poller, and its send timeout as last set (each set is a call into ZeroMQ)."""

    def __init__(self, sock: zmq.Socket):
        self.sock = sock
        self.poller = zmq.Poller()
        self.poller.register(sock, zmq.POLLIN)
        self._send_ms: int | None = None

    def send_timeout(self, seconds: float) -> None:
        ms = max(1, int(seconds * 1000))
        if ms != self._send_ms:
            self.sock.setsockopt(zmq.SNDTIMEO, ms)
            self._send_ms = ms


class Subscription:
    """Prediction events as they come: iterate (blocking), or :meth:`recv` with a timeout."""

    def __init__(self, context: zmq.Context, endpoints: Sequence[str], prefixes: list[bytes],
                 curve: CurveKeys | None = None):
        self._sock = open_sub(context, endpoints, prefixes, curve)

    def recv(self, timeout: float | None = None) -> Event | None:
        """The next event, or None if none came within ``timeout`` seconds (None: wait forever).
        Malformed events are skipped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
            if remaining <= 0:
                return None
            if self._sock.poll(max(1, int(remaining * 1000)), zmq.POLLIN):
                try:
                    return protocol.decode_event(self._sock.recv_multipart())
                except protocol.ProtocolError:
                    continue

    def __iter__(self) -> "Subscription":
        return self

    def __next__(self) -> Event:
        if self._sock.closed:
            raise StopIteration
        return self.recv()

    def close(self) -> None:
        self._sock.close(linger=0)

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Client(ClientBase):
    """A blocking client of one seqd daemon or of replicas sharing the streams (see the module doc).

    ``endpoints`` may also be NATS URLs (``"nats://host:4222"``): the client then reaches a cluster's
    replicas by partition (``clients/cluster.py``), and ``pub`` and ``curve`` do not apply.
    ``timeout`` is seconds per attempt; ``retries`` the resends after a timeout (3; a cluster's 8, which
    outlast a move after a crash); ``max_batch`` the
    largest publish sent in one request (larger ones are split); ``curve`` the keys for a daemon
    that requires CURVE.  Not thread-safe.
    """

    _subscription_class = Subscription

    def __init__(self, endpoints: str | Sequence[str] = DEFAULT_API, *, pub: str | Sequence[str] | None = None,
                 timeout: float = 5.0, retries: int | None = None, context: zmq.Context | None = None,
                 max_batch: int = DEFAULT_MAX_BATCH, curve: CurveKeys | None = None):
        if is_cluster(endpoints):  # NATS URLs: a cluster's replicas, reached by partition
            from .cluster import SyncNatsTransport, cluster_operations
            self._setup_cluster(cluster_operations(endpoints, timeout=timeout, retries=retries, max_batch=max_batch),
                                SyncNatsTransport)
            return
        self._setup(endpoints, pub, timeout=timeout, retries=retries, max_batch=max_batch, curve=curve,
                    context=context if context is not None else zmq.Context.instance(), transport=_Transport)

    def _run(self, plan: Plan):
        outcome = None
        try:
            while True:
                action = plan.send(outcome)
                if isinstance(action, Sleep):
                    time.sleep(action.seconds)
                    outcome = None
                else:
                    outcome = self._transport.exchange(action)
        except StopIteration as done:
            return done.value

    def ping(self, *, endpoint: str | None = None) -> ServerInfo:
        return self._run(self._ops.ping(endpoint))

    def create(self, stream: str, preset: str = "bytes", config: dict | None = None,
               exist_ok: bool = False) -> Created:
        """Create a stream with a preset model (``protocol.PRESETS``: "bytes", "bitwise", "glnn", "ctw", "esn",
        "lstm", "gru", ...) and overrides of its settings."""
        return self._run(self._ops.create(stream, preset, config, exist_ok))

    def drop(self, stream: str) -> None:
        """Delete a stream and its state (not retried after a timeout)."""
        self._run(self._ops.drop(stream))

    def publish(self, stream: str, symbols, *, position: int | None = None, create: bool = False) -> Ack:
        """Append symbols (bytes, str as UTF-8, or ints).  With ``position`` (the stream's length
        before the batch) the append is conditional and safe to retry; batches over ``max_batch``
        go as several requests (an error after the first leaves the earlier ones accepted)."""
        return self._run(self._ops.publish(stream, symbols, position, create))

    def predict(self, stream: str, top: int = 5, *, full: bool = False, min_position: int = 0,
                wait: float = 0.0) -> Prediction:
        """The next-symbol distribution; ``full`` adds the whole distribution; with ``min_position``
        the server waits up to ``wait`` seconds for that many learned symbols (else ``SeqdTimeout``)."""
        return self._run(self._ops.predict(stream, top, full, min_position, wait))

    def stats(self, stream: str | None = None, *, endpoint: str | None = None) -> StreamStats | ServerStats:
        """A stream's statistics, or the server's without a stream."""
        return self._run(self._ops.stats(stream, endpoint))

    def snapshot(self, stream: str) -> Snapshot:
        """Write the stream's state to disk now."""
        return self._run(self._ops.snapshot(stream))

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
