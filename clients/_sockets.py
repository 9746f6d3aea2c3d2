"""The ZeroMQ sockets both clients open (a ``zmq.Context`` or a ``zmq.asyncio.Context`` alike).

With the two transports, the only place in ``seqd.clients`` that touches zmq.
"""

from __future__ import annotations

from collections.abc import Sequence

import zmq


def open_dealer(context, endpoint: str):
    """A DEALER socket connected to ``endpoint`` (linger 0); a malformed endpoint is a ValueError."""
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
    except zmq.ZMQError as exc:
        sock.close(linger=0)
        raise ValueError(f"cannot connect to {endpoint!r}: {exc}") from None
    return sock


def open_sub(context, endpoints: Sequence[str], prefixes: list[bytes]):
    """A SUB socket subscribed to ``prefixes`` and connected to every endpoint."""
    sock = context.socket(zmq.SUB)
    sock.setsockopt(zmq.LINGER, 0)
    for prefix in prefixes:
        sock.setsockopt(zmq.SUBSCRIBE, prefix)
    try:
        for ep in endpoints:
            sock.connect(ep)
    except zmq.ZMQError as exc:
        sock.close(linger=0)
        raise ValueError(f"cannot connect to {ep!r}: {exc}") from None
    return sock
