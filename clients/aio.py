"""The asyncio seqd client: the same operations as :class:`seqd.clients.client.Client`, as coroutines.

Routing, retries, batching, result types and errors come from
``clients/_common.py``, as for the blocking client; only the waiting differs.
Concurrent requests each take their own DEALER socket from a per-endpoint
pool (a socket carries one request at a time and goes back to the pool once
answered; after a timeout it is closed, the lazy pirate), so a ``predict``
waiting server-side for a position does not hold up other requests.  An
:class:`AsyncClient` belongs to one event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import zmq
import zmq.asyncio

from . import protocol
from ._common import DEFAULT_API, DEFAULT_MAX_BATCH, ClientBase, Exchange, Plan, Sleep, accept_reply
from ._sockets import CurveKeys, open_dealer, open_sub
from .cluster import is_cluster
from .protocol import Event, Reply
from .results import Ack, Created, Prediction, ServerInfo, ServerStats, Snapshot, StreamStats

__all__ = ["AsyncClient", "AsyncSubscription"]


class _AsyncTransport:
    """Awaitable exchanges over pooled DEALER sockets."""

    def __init__(self, context: zmq.asyncio.Context, curve: CurveKeys | None = None):
        self.context = context
        self.curve = curve
        self.idle: dict[str, list[zmq.asyncio.Socket]] = {}

    async def exchange(self, ex: Exchange) -> Reply | None:
        pool = self.idle.setdefault(ex.endpoint, [])
        sock = pool.pop() if pool else self._open(ex.endpoint)
        answered = False
        try:
            deadline = time.monotonic() + ex.timeout
            try:
                await asyncio.wait_for(sock.send(protocol.encode_request(ex.request)), ex.timeout)
            except asyncio.TimeoutError:
                return None
            while (remaining := deadline - time.monotonic()) > 0:
                if await sock.poll(max(1, int(remaining * 1000)), zmq.POLLIN):
                    reply = accept_reply(await sock.recv_multipart(), ex.request.id)
                    if reply is not None:
                        answered = True
                        return reply
            return None
        finally:  # also on cancellation: a socket with a request outstanding is never reused
            if answered:
                pool.append(sock)
            else:
                sock.close(linger=0)

    def _open(self, endpoint: str) -> zmq.asyncio.Socket:
        return open_dealer(self.context, endpoint, self.curve)

    def close(self) -> None:
        for pool in self.idle.values():
            for sock in pool:
                sock.close(linger=0)
        self.idle.clear()


class AsyncSubscription:
    """Prediction events as an async iterator; :meth:`recv` takes a timeout."""

    def __init__(self, context: zmq.asyncio.Context, endpoints: Sequence[str], prefixes: list[bytes],
                 curve: CurveKeys | None = None):
        self._sock = open_sub(context, endpoints, prefixes, curve)

    async def recv(self, timeout: float | None = None) -> Event | None:
        """The next event, or None if none came within ``timeout`` seconds; malformed ones are skipped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            if await self._sock.poll(None if remaining is None else max(1, int(remaining * 1000)), zmq.POLLIN):
                try:
                    return protocol.decode_event(await self._sock.recv_multipart())
                except protocol.ProtocolError:
                    continue

    def __aiter__(self) -> "AsyncSubscription":
        return self

    async def __anext__(self) -> Event:
        if self._sock.closed:
            raise StopAsyncIteration
        return await self.recv()

    def close(self) -> None:
        self._sock.close(linger=0)

    async def __aenter__(self) -> "AsyncSubscription":
        return self

    async def __aexit__(self, *exc) -> None:
        if self.cluster:  # a cluster's subscriptions and connection are drained before the loop may end
            for sub in self._subscriptions:
                await sub.aclose()
            self._subscriptions.clear()
            await self._transport.aclose()
        else:
            self.close()


class AsyncClient(ClientBase):
    """The asyncio twin of :class:`~seqd.clients.client.Client`: same arguments, same semantics."""

    _subscription_class = AsyncSubscription

    def __init__(self, endpoints: str | Sequence[str] = DEFAULT_API, *, pub: str | Sequence[str] | None = None,
                 timeout: float = 5.0, retries: int | None = None, context: zmq.Context | None = None,
                 max_batch: int = DEFAULT_MAX_BATCH, curve: CurveKeys | None = None):
        if is_cluster(endpoints):  # NATS URLs: a cluster's replicas, reached by partition
            from .cluster import NatsLink, cluster_operations
            self._setup_cluster(cluster_operations(endpoints, timeout=timeout, retries=retries, max_batch=max_batch),
                                NatsLink)
            return
        if context is None:
            context = zmq.asyncio.Context.instance()
        elif not isinstance(context, zmq.asyncio.Context):
            context = zmq.asyncio.Context.shadow(context.underlying)
        self._setup(endpoints, pub, timeout=timeout, retries=retries, max_batch=max_batch, curve=curve,
                    context=context, transport=_AsyncTransport)

    async def _run(self, plan: Plan):
        outcome = None
        try:
            while True:
                action = plan.send(outcome)
                if isinstance(action, Sleep):
                    await asyncio.sleep(action.seconds)
                    outcome = None
                else:
                    outcome = await self._transport.exchange(action)
        except StopIteration as done:
            return done.value

    async def ping(self, *, endpoint: str | None = None) -> ServerInfo:
        return await self._run(self._ops.ping(endpoint))

    async def create(self, stream: str, preset: str = "bytes", config: dict | None = None,
                     exist_ok: bool = False) -> Created:
        return await self._run(self._ops.create(stream, preset, config, exist_ok))

    async def drop(self, stream: str) -> None:
        await self._run(self._ops.drop(stream))

    async def publish(self, stream: str, symbols, *, position: int | None = None, create: bool = False) -> Ack:
        return await self._run(self._ops.publish(stream, symbols, position, create))

    async def predict(self, stream: str, top: int = 5, *, full: bool = False, min_position: int = 0,
                      wait: float = 0.0) -> Prediction:
        return await self._run(self._ops.predict(stream, top, full, min_position, wait))

    async def stats(self, stream: str | None = None, *, endpoint: str | None = None) -> StreamStats | ServerStats:
        return await self._run(self._ops.stats(stream, endpoint))

    async def snapshot(self, stream: str) -> Snapshot:
        return await self._run(self._ops.snapshot(stream))

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def aclose(self) -> None:
        """Close, and with a cluster's connection wait until it is drained."""
        subs = list(self._subscriptions)
        self.close()
        for sub in subs:
            if hasattr(sub, "aclose"):
                await sub.aclose()
        if self.cluster:
            await self._transport.aclose()

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
