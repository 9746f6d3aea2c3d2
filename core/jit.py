"""Numba compiler settings for every kernel of seqd, in one place.

Every kernel in :mod:`seqd.core` is compiled through :func:`kernel`, so the
flags that decide whether the learner is bit-reproducible live here and
nowhere else:

* ``fastmath`` is **off**: the arithmetic coder and crash recovery replay the
  learner and need the same bits from the same input.  Re-association of
  floating-point sums would break that.
* ``parallel`` is **off**: no reductions whose order depends on threads.
* ``nogil`` is **on**: kernels release the GIL, so the daemon's I/O loop keeps
  answering while streams learn in worker threads.
* compiled code is **cached**: compiled machine code is kept on disk so that a second
  process starts in a second.  Numba checks a cached kernel against its own
  source file only, not against the modules it calls: after an edit or an
  upgrade of one of those, it would run stale machine code, and a decoder
  would no longer replay its encoder.  So the cache lives in a directory
  named after a fingerprint of every source file of :mod:`seqd.core` and
  the Numba version: ``$NUMBA_CACHE_DIR/seqd-<fingerprint>``, or
  ``~/.cache/seqd/numba/seqd-<fingerprint>`` (``$XDG_CACHE_HOME`` honoured).
  Each of seqd's kernels gets a cache of its own class that looks there
  (:class:`SeqdCache`); Numba's configuration is left alone, so other code
  calling Numba in the same process keeps its own cache settings.  Where that
  directory cannot be written, seqd's kernels are compiled in every process
  rather than cached anywhere else.
* ``error_model="numpy"``: division by zero gives inf/nan like NumPy instead of
  raising, so a kernel never needs Python-level exception handling.
* reference counting (Numba's runtime, NRT) is **off**: a kernel reads and
  writes arrays that its caller owns and keeps alive for the length of the
  call, and allocates none.  With it on, every array a kernel is given,
  every array in a state tuple it is given and every view it makes (a row,
  a block) has its count raised and lowered again by atomic operations:
  about 1,200 times per symbol for seed 000's GLNN (``docs/benchmarks.md``,
  "Speed without reference counting").  Numba refuses to compile a kernel
  that creates or returns a new array without it, so the promise is checked
  as each kernel compiles: allocate in Python and pass the array in.

Setting the environment variable ``NUMBA_DISABLE_JIT=1`` runs every kernel as
plain Python, which is how the coverage run and the slow references are used.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba.core.caching import (
    CompileResultCacheImpl,
    FunctionCache,
    _CacheLocator,
    _SourceFileBackedLocatorMixin,
)
from numba.core.dispatcher import Dispatcher


def source_fingerprint(root: Path = Path(__file__).resolve().parent) -> str:
    """A digest of every ``.py`` file under ``root`` (seqd.core) and of the Numba version: what compiled
    code depends on."""
    digest = hashlib.sha256(numba.__version__.encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cache_dir() -> str:
    base = os.environ.get("NUMBA_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "seqd", "numba")
    return os.path.join(base, f"seqd-{source_fingerprint()}")


CACHE_DIR = cache_dir()  # fixed when seqd.core is first imported, like the sources it names

# every flag but ``cache``: a kernel's cache is attached by :func:`kernel` (see module docstring)
FLAGS = dict(nopython=True, fastmath=False, parallel=False, nogil=True, error_model="numpy", _nrt=False)


class _SeqdCacheLocator(_SourceFileBackedLocatorMixin, _CacheLocator):
    """Numba's cache locator for seqd's kernels: :data:`CACHE_DIR`, whatever ``numba.config`` says.

    Like Numba's own locators, it keeps one sub-directory per source folder
    and stamps each entry with its source file's hash.
    """

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(CACHE_DIR, self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path


class _SeqdCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_SeqdCacheLocator]


class SeqdCache(FunctionCache):
    """A kernel's on-disk cache of compiled code, in seqd's fingerprinted directory."""

    _impl_class = _SeqdCacheImpl


def _cached(dispatcher):
    """Give ``dispatcher`` seqd's cache: what ``cache=True`` does, with seqd's directory."""
    if not isinstance(dispatcher, Dispatcher):  # NUMBA_DISABLE_JIT=1: a plain Python function
        return dispatcher
    try:
        dispatcher._cache = SeqdCache(dispatcher.py_func)
    except RuntimeError:  # no locator: the directory cannot be created or written
        pass
    return dispatcher


def kernel(func):
    """Compile ``func`` with seqd's flags and cache (see module docstring)."""
    return _cached(numba.jit(**FLAGS)(func))


def inline_kernel(func):
    """Like :func:`kernel`, for small helpers that are always inlined into a caller."""
    return _cached(numba.jit(**FLAGS, inline="always")(func))
