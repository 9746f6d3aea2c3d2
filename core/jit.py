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
* ``cache`` is **on**: compiled machine code is kept on disk so that a second
  process starts in a second.  Numba checks a cached kernel against its own
  source file only, not against the modules it calls: after an edit or an
  upgrade of one of those, it would run stale machine code, and a decoder
  would no longer replay its encoder.  So the cache lives in a directory
  named after a fingerprint of every source file of :mod:`seqd.core` and
  the Numba version: ``$NUMBA_CACHE_DIR/seqd-<fingerprint>``, or
  ``~/.cache/seqd/numba/seqd-<fingerprint>`` (``$XDG_CACHE_HOME`` honoured).
  Other code calling Numba in the same process shares that setting.
* ``error_model="numpy"``: division by zero gives inf/nan like NumPy instead of
  raising, so a kernel never needs Python-level exception handling.

Setting the environment variable ``NUMBA_DISABLE_JIT=1`` runs every kernel as
plain Python, which is how the coverage run and the slow references are used.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba

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


numba.config.CACHE_DIR = cache_dir()  # read by each kernel's cache locator when it is decorated, below

FLAGS = dict(nopython=True, fastmath=False, parallel=False, nogil=True, cache=True, error_model="numpy")


def kernel(func):
    """Compile ``func`` with seqd's flags (see module docstring)."""
    return numba.jit(**FLAGS)(func)


def inline_kernel(func):
    """Like :func:`kernel`, for small helpers that are always inlined into a caller."""
    return numba.jit(**FLAGS, inline="always")(func)
