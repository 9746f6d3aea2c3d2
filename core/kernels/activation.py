"""Activation functions s, s' by integer code (0 = tanh, 1 = logistic), for use inside kernels."""

from __future__ import annotations

from ..jit import inline_kernel
from .elementary import logistic_of, tanh_of

TANH = 0
LOGISTIC = 1


@inline_kernel
def activate(v, activation, numerics):
    """s(v), computed under ``numerics`` (``elementary.py``)."""
    if activation == TANH:
        return tanh_of(numerics, v)
    return logistic_of(numerics, v)


@inline_kernel
def slope(a, activation):
    """s'(v) expressed through a = s(v)."""
    if activation == TANH:
        return 1.0 - a * a
    return a * (1.0 - a)
