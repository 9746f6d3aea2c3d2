"""The bitwise model's constant tables: the logistic function and its loss by interpolation, reciprocals.

Each is computed once, at import, with seqd's own exp and log (``kernels/elementary.py``) and IEEE
division, so every machine holds the same numbers; Numba compiles them into the kernels as constants.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from ..kernels.elementary import exp, log

TABLE_LIMIT = 12.0  # the tables below cover [-12, 12], 64 points to a unit
TABLE_SCALE = 64.0


def _tables():
    x = (np.arange(int(2 * TABLE_LIMIT * TABLE_SCALE) + 1) - TABLE_LIMIT * TABLE_SCALE) / TABLE_SCALE
    sq = np.array([1.0 / (1.0 + exp(-v)) for v in x])
    loss = np.array([log(1.0 + exp(-v)) for v in x])
    return sq, loss


SQUASH_TABLE, LOSS_TABLE = _tables()  # constants: compiled into the kernels
RECIPROCALS = 1.0 / (np.arange(1024) + 1.5)  # each the IEEE quotient the division below would give
BEYOND = 1.0 / (1024 + 1.5)  # 1 / (n + 1.5) for every n >= 1024 is at most this


@inline_kernel
def rate_of(n, floor):
    """max(1 / (n + 1.5), floor), the step of an adaptive count met n times, by a table for n < 1024.

    Past the table, a floor of at least ``BEYOND`` is the answer without dividing: n + 1.5 and 1 / (n + 1.5)
    are each correctly rounded, so monotone in n, and 1 / (n + 1.5) <= 1 / 1025.5 <= floor.  Every floor
    the bitwise model uses (1/256, 1/1023) is such a floor, so its counts never divide."""
    if n < 1024.0:
        return max(RECIPROCALS[np.int64(n)], floor)
    if floor >= BEYOND:
        return floor
    return max(1.0 / (n + 1.5), floor)


@inline_kernel
def _interpolate(table, x):
    at = (min(max(x, -TABLE_LIMIT), TABLE_LIMIT) + TABLE_LIMIT) * TABLE_SCALE
    lo = min(np.int64(at), table.shape[0] - 2)
    return table[lo] + (table[lo + 1] - table[lo]) * (at - lo)


@inline_kernel
def squash_fast(x):
    """1 / (1 + e^-x) by linear interpolation in a table of 64 points a unit over [-12, 12] (within 4e-6)."""
    return _interpolate(SQUASH_TABLE, x)


@inline_kernel
def loss_fast(x):
    """log(1 + e^-x) (-log of squash(x), nats), by the same interpolation; beyond [-12, 12], -x or 0."""
    if x < -TABLE_LIMIT:
        return -x
    return _interpolate(LOSS_TABLE, x)



