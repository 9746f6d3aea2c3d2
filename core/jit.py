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
* ``cache`` is **on**: compiled machine code is stored beside the sources (or
  in ``NUMBA_CACHE_DIR``) so that a second process starts in a second.
* ``error_model="numpy"``: division by zero gives inf/nan like NumPy instead of
  raising, so a kernel never needs Python-level exception handling.

Setting the environment variable ``NUMBA_DISABLE_JIT=1`` runs every kernel as
plain Python, which is how the coverage run and the slow references are used.
"""

from __future__ import annotations

import numba

FLAGS = dict(nopython=True, fastmath=False, parallel=False, nogil=True, cache=True, error_model="numpy")


def kernel(func):
    """Compile ``func`` with seqd's flags (see module docstring)."""
    return numba.jit(**FLAGS)(func)


def inline_kernel(func):
    """Like :func:`kernel`, for small helpers that are always inlined into a caller."""
    return numba.jit(**FLAGS, inline="always")(func)
