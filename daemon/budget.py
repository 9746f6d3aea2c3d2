"""The streams' memory budget: the bytes they hold in memory, against ``max_state_bytes``.

Each stream counts :data:`STREAM_BYTES` (its view and statistics) for as long
as it exists, and its learner's bytes while the learner is in memory.  A
learner is counted from the moment before its arrays are allocated (a
stream's creation, a hibernated stream's wake) until they are let go (its
hibernation, its drop).  A creation or a wake is *taken* from the budget
before it allocates, and does not start when the bytes are not free: it waits
(:meth:`.completions.Completions._admit`) while the least recently active idle
learners hibernate and *give* their bytes back.  So the streams never hold
more than the budget, not even while a wake and the hibernation that makes
its room run side by side on two workers; the process holds the budget and
its base (the interpreter, the kernels, the sockets).

Thread-safe: workers take and give (wakes and hibernations), the I/O loop
takes and gives (creations) and reads.  A learner already in memory when it
is first counted (a stream restored at start) is counted whether it fits or
not: the restore keeps within the budget itself.
"""

from __future__ import annotations

import threading

# What a stream holds in memory whatever its learner does: its view (the next symbol's distribution and the
# statistics), its log's handle, its objects and metric series.  Counted beside the learners, so that
# thousands of hibernated streams do not take the daemon past its budget; bench/many_streams.py measures it
# ("hibernated stream in memory").
STREAM_BYTES = 64 << 10


class MemoryBudget:
    """Bytes held against ``limit`` (None: no limit)."""

    def __init__(self, limit: int | None = None):
        self.limit = limit
        self._held = 0
        self._lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    @property
    def free(self) -> int:
        """What a learner may still take (0 when over the limit; very large without one)."""
        if self.limit is None:
            return 1 << 62
        return max(0, self.limit - self._held)

    def try_take(self, nbytes: int) -> bool:
        """Count ``nbytes`` more if they fit; returns whether they were."""
        with self._lock:
            if self.limit is not None and self._held + nbytes > self.limit:
                return False
            self._held += nbytes
            return True

    def take(self, nbytes: int) -> None:
        """Count ``nbytes`` more, fitting or not (memory already held)."""
        with self._lock:
            self._held += nbytes

    def give(self, nbytes: int) -> None:
        """``nbytes`` counted before are let go."""
        with self._lock:
            if nbytes > self._held:
                raise ValueError(f"giving back {nbytes} bytes, more than the {self._held} held")
            self._held -= nbytes


MMAP_THRESHOLD = 256 << 10  # allocations this large or larger are mappings of their own (glibc)


def map_large_allocations() -> None:
    """Large allocations (from :data:`MMAP_THRESHOLD`) get mappings of their own, given back to the system
    when freed, for the whole life of the process.

    glibc starts with such a threshold (128 KiB) but raises it to the size of
    every mapped block freed, up to 32 MiB: after the first snapshot is read or
    written, the megabyte buffers of every later wake and hibernation come
    from the heap, and the heap keeps what they leave behind in holes between
    longer-lived blocks.  With many streams waking and sleeping, that grew the
    daemon by tens of megabytes beyond its learners (``bench/many_streams.py``).
    Setting the threshold fixes it where it is (``mallopt``); elsewhere nothing."""
    if _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def return_freed_memory() -> None:
    """Give the memory a hibernated learner's smaller arrays held back to the system: the C library keeps
    freed heap memory for reuse, and a daemon that lets learners go by the hundred would keep their share
    (glibc's ``malloc_trim``; elsewhere nothing).  The large tables are mappings of their own, unmapped
    when they go."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def _libc():
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        return libc
    except (OSError, AttributeError):
        return None


_M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
_LIBC = _libc()
