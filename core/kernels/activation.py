"""Activation functions s, s' by integer code (0 = tanh, 1 = logistic), for use inside kernels."""

from __future__ import annotations

import math

from ..jit import inline_kernel

TANH = 0
LOGISTIC = 1


@inline_kernel
def activate(v, activation):
    """s(v)."""
    if activation == TANH:
        return math.tanh(v)
    return 1.0 / (1.0 + math.exp(-v))


@inline_kernel
def slope(a, activation):
    """s'(v) expressed through a = s(v)."""
    if activation == TANH:
        return 1.0 - a * a
    return a * (1.0 - a)
