"""seqd: learn symbol streams online, for as long as they flow.

The distribution ``seqd`` is this package and its subpackages:
:mod:`seqd.core` (the mathematics), :mod:`seqd.daemon` (the long-running
process), :mod:`seqd.clients` (the wire protocol and the client library) and
:mod:`seqd.cli` (the ``seqd`` program).  ``docs/architecture.md`` is the map.

    >>> import seqd
    >>> isinstance(seqd.__version__, str)
    True

``from seqd import Client, AsyncClient`` is the client library.  Importing
``seqd`` itself is cheap: the clients (ZeroMQ) and the model (NumPy, Numba)
are imported only when they are first used.
"""

from __future__ import annotations

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("seqd")
except _metadata.PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["AsyncClient", "Client", "__version__"]


def __getattr__(name: str):
    if name in ("Client", "AsyncClient"):
        from . import clients  # imports nothing until the class is asked for
        return getattr(clients, name)
    raise AttributeError(f"module 'seqd' has no attribute {name!r}")
