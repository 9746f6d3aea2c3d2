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


def advise_huge(array: np.ndarray, first: int, nbytes: int) -> None:
    """Advise ``MADV_HUGEPAGE`` for the bytes [first, first + nbytes) of ``array`` (one :func:`table_array` made
    without it), rounded out to huge pages: for a table that grows, once what it uses fills whole huge pages,
    so that what it touches from then on takes them whole.  Nothing on a system without the advice, or for an
    array that is not such a mapping."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    holder = array  # the array over the whole mapping: the last one before the mapping (or its memoryview)
    while isinstance(holder.base, np.ndarray):
        holder = holder.base
    region = holder.base.obj if isinstance(holder.base, memoryview) else holder.base
    if advice is None or not isinstance(region, mmap.mmap):
        return
    begin = array.ctypes.data + first  # addresses: table_array aligned the array's start to a huge page
    end = begin + nbytes
    begin -= begin % HUGE_PAGE
    end += -end % HUGE_PAGE
    base = holder.ctypes.data
    start, stop = max(begin - base, 0), min(end - base, len(region))
    try:
        region.madvise(advice, start, stop - start)
    except OSError:
        pass
