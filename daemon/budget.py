"""The learners' memory budget: the bytes they hold in memory, against ``max_state_bytes``.

A learner is counted from the moment before its arrays are allocated (a
stream's creation, a hibernated stream's wake) until they are let go (its
hibernation, its drop).  A creation or a wake is *taken* from the budget
before it allocates, and does not start when the bytes are not free: it waits
(:meth:`.completions.Completions._admit`) while the least recently active idle
learners hibernate and *give* their bytes back.  So the learners in memory
never hold more than the budget, not even while a wake and the hibernation
that makes its room run side by side on two workers.

Thread-safe: workers take and give (wakes and hibernations), the I/O loop
takes and gives (creations) and reads.  A learner already in memory when it
is first counted (a stream restored at start) is counted whether it fits or
not: the restore keeps within the budget itself.
"""

from __future__ import annotations

import threading


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
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()
