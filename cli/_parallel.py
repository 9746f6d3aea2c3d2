"""An ordered parallel map with bounded read-ahead: ``seqd compress -T`` and ``seqd decompress -T``.

Blocks are coded on ``threads`` threads at once (the kernels release the
GIL), but their results must be written in their input order.  At most
``2 × threads`` items are in flight: enough to keep every thread busy while
the oldest result is written, and memory stays bounded however long the
input is.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

READ_AHEAD = 2  # items in flight per thread


def ordered_map(fn: Callable[[T], R], items: Iterable[T], threads: int) -> Iterator[R]:
    """``fn(item)`` for every item, computed on ``threads`` threads, yielded in the order of ``items``.

    ``items`` is consumed lazily, no further ahead than the read-ahead allows;
    a result is yielded as soon as it and every earlier one are done.

    >>> list(ordered_map(lambda x: x * x, range(6), threads=2))
    [0, 1, 4, 9, 16, 25]
    """
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    with ThreadPoolExecutor(threads) as pool:
        pending: collections.deque = collections.deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            while pending and (len(pending) >= READ_AHEAD * threads or pending[0].done()):
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
