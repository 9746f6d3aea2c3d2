"""The ZeroMQ sockets both clients open (a ``zmq.Context`` or a ``zmq.asyncio.Context`` alike).

With the two transports, the only place in ``seqd.clients`` that touches zmq.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import zmq


@dataclass(frozen=True)
class CurveKeys:
    """CURVE keys of a client: the server's public key, and the client's own key pair (Z85 bytes).

    A server configured with ``[security]`` in ``seqd.toml`` accepts only
    clients whose public key is in its authorised directory (``docs/daemon.md``).
    """

    server_public: bytes
    public: bytes
    secret: bytes

    @classmethod
    def from_files(cls, server_certificate: str, client_secret_certificate: str) -> "CurveKeys":
        """Keys from ``zmq.auth`` certificate files: the server's public one, and the client's secret one."""
        import zmq.auth
        server_public, _ = zmq.auth.load_certificate(server_certificate)
        public, secret = zmq.auth.load_certificate(client_secret_certificate)
        if not secret:
            raise ValueError(f"{client_secret_certificate} holds no secret key")
        return cls(server_public, public, secret)

    def apply(self, sock) -> None:
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = self.server_public, self.public, self.secret


def open_dealer(context, endpoint: str, curve: CurveKeys | None = None):
    """A DEALER socket connected to ``endpoint`` (linger 0); a malformed endpoint is a ValueError."""
    sock = context.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if curve is not None:
        curve.apply(sock)
    try:
        sock.connect(endpoint)
    except zmq.ZMQError as exc:
        sock.close(linger=0)
        raise ValueError(f"cannot connect to {endpoint!r}: {exc}") from None
    return sock


def open_sub(context, endpoints: Sequence[str], prefixes: list[bytes], curve: CurveKeys | None = None):
    """A SUB socket subscribed to ``prefixes`` and connected to every endpoint."""
    sock = context.socket(zmq.SUB)
    sock.setsockopt(zmq.LINGER, 0)
    if curve is not None:
        curve.apply(sock)
    for prefix in prefixes:
        sock.setsockopt(zmq.SUBSCRIBE, prefix)
    try:
        for ep in endpoints:
            sock.connect(ep)
    except zmq.ZMQError as exc:
        sock.close(linger=0)
        raise ValueError(f"cannot connect to {ep!r}: {exc}") from None
    return sock
