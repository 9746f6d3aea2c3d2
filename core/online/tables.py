"""Memory for the context units' tables: megabytes each, read and written at random places.

Such a table is the one place where the learner's speed depends on how its
memory is mapped: every symbol touches a handful of random slots of each
table, so with 4 KiB pages most lookups miss the TLB.  Huge pages change no
value, only speed (``docs/benchmarks.md``).
"""

from __future__ import annotations

import math
import mmap

import numpy as np

HUGE_PAGE = 2 << 20  # bytes in a transparent huge page (x86-64; arm64 with 4 KiB base pages)


def table_array(shape, dtype, huge: bool = True) -> np.ndarray:
    """A zeroed array of the learner's state, made for the context tables: megabytes, read and written at
    random places.

    From :data:`HUGE_PAGE` bytes up, the array gets a private anonymous
    mapping of its own, aligned to a huge page and, if ``huge``, advised
    ``MADV_HUGEPAGE``.  Where Linux's transparent huge pages are set to
    ``madvise`` (a common default) they are then used, and one TLB entry
    covers 2 MiB instead of 4 KiB.  This changes no value, only speed
    (``docs/benchmarks.md``).  Without the advice (another system, a
    refusal, or a table that grows, whose few kilobytes in use would each
    take a huge page), it is an ordinary mapping: its pages take memory
    only once they are written (``state.resident_nbytes``).
    """
    dtype = np.dtype(dtype)
    size = math.prod(np.atleast_1d(shape).tolist()) * dtype.itemsize
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if size < HUGE_PAGE:
        return np.zeros(shape, dtype)
    region = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(region, dtype=np.uint8)  # the array keeps the mapping alive
    start = -raw.ctypes.data % HUGE_PAGE
    if huge and advice is not None:
        try:
            region.madvise(advice, start, size)
        except OSError:
            pass
    return raw[start:start + size].view(dtype).reshape(shape)
