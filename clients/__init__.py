"""The client side of seqd: the wire protocol and the Python client library.

:mod:`~seqd.clients.protocol` is the wire protocol without I/O;
:class:`Client` (:mod:`~seqd.clients.client`) is the blocking client and
:class:`AsyncClient` (:mod:`~seqd.clients.aio`) the asyncio one.  Neither
needs a model: nothing here imports NumPy, Numba or the rest of seqd, and
importing this package imports nothing at all until a client is asked for
(ZeroMQ then), so that ``from seqd.clients import Client`` stays cheap.
"""

from __future__ import annotations

__all__ = ["AsyncClient", "Client"]


def __getattr__(name: str):
    if name == "Client":
        from .client import Client
        return Client
    if name == "AsyncClient":
        from .aio import AsyncClient
        return AsyncClient
    raise AttributeError(f"module 'seqd.clients' has no attribute {name!r}")
