"""Backpropagation through time (eq. 22) and the backpropagated moduli (eqs. 23-24)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import kernel
from .activation import slope

RBPM = 0  # recurrent backpropagated metric, eq. (24)
RUOP = 1  # recurrent unitwise outer product metric, eq. (23)
NO_MODULUS = 2  # non-invariant methods need B only


class Scored(NamedTuple):
    """The sequence a backward pass runs over: what each transition read and each output was scored on."""

    x: np.ndarray  # (T,) int64: the symbol read by the transition at time t
    targets: np.ndarray  # (T,) int64: the symbol the output at time t is scored on
    chi: np.ndarray  # (T,) float: the weight of output t's loss (0: not scored)


class Backprop(NamedTuple):
    """What a backward pass fills: B (eq. 22) and the modulus m (eqs. 23-24), rows 0..T (row T read as given)."""

    B: np.ndarray  # (T+1, N+1)
    m: np.ndarray  # (T+1, N+1)


@kernel
def backward(net, seq, w, a, pi, modulus, out, scratch):
    """For ``net`` (a ``network.Network``) with writing weights ``w``, fill ``out`` (a :class:`Backprop`):
    ``B[t, i] = d log Pr / d V_i^t`` and the modulus ``m[t, i]`` for t = T-1 .. 0.

    ``B[T]`` and ``m[T]`` are read as boundary values (zero for a whole
    sequence, eq. 22 "initialized with B^T = 0"; a truncated window passes its
    own).  ``scratch`` is a work array of shape (3, N+1).  ``seq`` (a
    :class:`Scored`) holds ``x[t]``, the symbol read by the transition at time
    t, ``targets[t]``, the symbol whose probability the output at time t is
    scored on (the same sequence in batch training; an online learner scores a
    first occurrence on its escape symbol), and ``chi[t]``, that output's weight.
    The sums over y run over the columns of ``w`` and ``pi``, so an online
    learner passes only its active symbols.

    B (eq. 22, generalised to the three models through
    dV_j^{t+1}/dV_i^t = leak 1_{i=j} + tau_{ij x_t} s'(V_i^t)):

        B_i^t = leak B_i^{t+1} + s'(V_i^t) (chi_t (w_{i x_t} - sum_y pi_t(y) w_iy)
                                           + sum_j tau_{i j x_t} B_j^{t+1})

    RBPM modulus (eq. 24; eq. 63 in general):

        m_i^t = s'(V_i^t)^2 chi_t Var_{pi_t}(w_i.) + sum_j (dV_j^{t+1}/dV_i^t)^2 m_j^{t+1}

    RUOP modulus (eq. 23): m_i^t = (B_i^t)^2.
    """
    inputs, tau, _, leak, gated, activation, _ = net
    x, targets, chi = seq
    B, m = out
    T = x.shape[0]
    N1, D = inputs.shape
    A = w.shape[1]
    back = scratch[0]
    mback = scratch[1]
    sprime = scratch[2]
    for t in range(T - 1, -1, -1):
        sym = x[t] if gated else 0
        target = targets[t]
        for i in range(N1):
            back[i] = 0.0
            mback[i] = 0.0
            sprime[i] = slope(a[t, i], activation)
        # scatter along the edges i -> j: transmitted terms of eqs. (22) and (24)
        for j in range(1, N1):
            bj = B[t + 1, j]
            mj = m[t + 1, j]
            for k in range(1, D):
                i = inputs[j, k]
                coef = tau[sym, j, k]
                back[i] += coef * bj
                if modulus == 0:
                    jac = coef * sprime[i]
                    if i == j:
                        jac += leak
                    mback[i] += jac * jac * mj
        for i in range(1, N1):
            source = 0.0
            variance = 0.0
            if chi[t] != 0.0:
                mean = 0.0
                mean2 = 0.0
                for y in range(A):
                    p = pi[t, y]
                    wy = w[i, y]
                    mean += p * wy
                    mean2 += p * wy * wy
                source = chi[t] * (w[i, target] - mean)
                variance = chi[t] * (mean2 - mean * mean)
            s1 = sprime[i]
            b = leak * B[t + 1, i] + s1 * (source + back[i])
            B[t, i] = b
            if modulus == 0:
                m[t, i] = s1 * s1 * variance + mback[i]
            elif modulus == 1:
                m[t, i] = b * b
            else:
                m[t, i] = 0.0
        B[t, 0] = 0.0
        m[t, 0] = 0.0
