"""Transition-weight gradients and metric blocks (eqs. 25-28, 34-35), and the V^0 step (eq. 29)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..jit import kernel


class TransitionSums(NamedTuple):
    """The gradient and metric sums of the transition (and RNN input) weights, per (symbol, unit) block."""

    G: np.ndarray  # (S, N+1, D) gradient, eq. (25)
    G_rho: np.ndarray  # (A, N+1) input-weight gradient (RNN)
    M: np.ndarray  # (S, N+1, D, D) metric blocks, eq. (26) (quasi-diagonal: eqs. 34-35)
    M_rho: np.ndarray  # (A, N+1) input-weight metric (RNN)


@kernel
def accumulate_transition(net, x, a, back, quasi_diagonal, sums):
    """Add every time step's contribution to the gradient and metric of each (unit, symbol) block.

    ``net`` is the ``network.Network`` (its graph and whether it is gated),
    ``back`` the backward pass's ``Backprop`` (B and m), ``sums`` the
    :class:`TransitionSums` accumulated into.

    For t = 0..T-1 and each unit j, with u = a_in^t the activities of j's
    incoming slots (unit 0 first) and sym = x_t (gated) or 0 (RNN):

        G[sym, j, k]    += u_k B_j^{t+1}                       eq. (25)
        M[sym, j, k, l] += u_k u_l m_j^{t+1}                   eq. (26)

    With ``quasi_diagonal`` only M[.., 0, 0], M[.., 0, k] and M[.., k, k] are
    filled (eqs. 34-35).  For the RNN, the input weights rho_{jy} act as
    weights from an input unit that is 1 when x_t = y:

        G_rho[y, j] += 1_{x_t=y} B_j^{t+1},   M_rho[y, j] += 1_{x_t=y} m_j^{t+1}

    (M_rho is both the rho-rho diagonal entry and the rho-bias cross term.)
    The arrays are accumulated into, not reset.
    """
    inputs = net.inputs
    gated = net.gated
    B, m = back
    G, G_rho, M, M_rho = sums
    T = x.shape[0]
    N1, D = inputs.shape
    for t in range(T):
        xt = x[t]
        sym = xt if gated else 0
        for j in range(1, N1):
            b = B[t + 1, j]
            mj = m[t + 1, j]
            for k in range(D):
                uk = a[t, inputs[j, k]]
                G[sym, j, k] += uk * b
                if quasi_diagonal:
                    M[sym, j, 0, k] += uk * mj
                    if k > 0:
                        M[sym, j, k, k] += uk * uk * mj
                else:
                    ukm = uk * mj
                    for l in range(k + 1):
                        M[sym, j, k, l] += ukm * a[t, inputs[j, l]]
            if not gated:
                G_rho[xt, j] += b
                M_rho[xt, j] += mj
    if not quasi_diagonal:
        # mirror the lower triangle
        for s in range(M.shape[0]):
            for j in range(1, N1):
                for k in range(D):
                    for l in range(k):
                        M[s, j, l, k] = M[s, j, k, l]


@kernel
def solve_blocks(G, M, damping, out, work):
    """out[s, j] = (M[s, j] + damping I)^-1 G[s, j] for every block: eqs. (26)-(27).

    Cholesky factorisation in place of a general inverse; ``work`` is (D, D).
    Returns the number of blocks that were not positive definite (left at 0).
    """
    S, N1, D, _ = M.shape
    failed = 0
    for s in range(S):
        for j in range(1, N1):
            ok = True
            for r in range(D):
                for c in range(r + 1):
                    v = M[s, j, r, c]
                    if r == c:
                        v += damping
                    for q in range(c):
                        v -= work[r, q] * work[c, q]
                    if r == c:
                        if not v > 0.0:
                            ok = False
                            break
                        work[r, r] = math.sqrt(v)
                    else:
                        work[r, c] = v / work[c, c]
                if not ok:
                    break
            if not ok:
                failed += 1
                for r in range(D):
                    out[s, j, r] = 0.0
                continue
            for r in range(D):  # forward substitution L z = g
                v = G[s, j, r]
                for q in range(r):
                    v -= work[r, q] * out[s, j, q]
                out[s, j, r] = v / work[r, r]
            for r in range(D - 1, -1, -1):  # back substitution L^T x = z
                v = out[s, j, r]
                for q in range(r + 1, D):
                    v -= work[q, r] * out[s, j, q]
                out[s, j, r] = v / work[r, r]
    for s in range(S):
        for r in range(D):
            out[s, 0, r] = 0.0
    return failed


@kernel
def quasi_diagonal_block(M, G, damping, out):
    """One block's quasi-diagonal inverse, eqs. (34)-(35), with ``damping`` added to M_00 and M_kk.

    Reads only M[0, 0], M[0, k] and M[k, k]: unit 0 is coupled to every
    incoming unit, the incoming units are treated as mutually orthogonal.
    """
    D = G.shape[0]
    m00 = M[0, 0] + damping
    g0 = G[0]
    bias = g0 / m00
    for k in range(1, D):
        m0k = M[0, k]
        step = (G[k] - g0 * m0k / m00) / (M[k, k] + damping - m0k * m0k / m00)
        out[k] = step
        bias -= m0k / m00 * step
    out[0] = bias


@kernel
def solve_quasi_diagonal(G, M, G_rho, M_rho, damping, out, out_rho):
    """Quasi-diagonal reduction of the metric inverse, eqs. (34)-(35), for every block.

    For each block, with the damped diagonal (M_00 + eps, M_kk + eps):

        step_k = (G_k - G_0 M_0k / M_00) / (M_kk - M_0k^2 / M_00)          k != 0
        step_0 = G_0 / M_00 - sum_{k != 0} (M_0k / M_00) step_k

    The RNN's input weights rho_{jy} are further "incoming units" of unit j in
    the shared block s = 0; gated models pass ``G_rho``/``M_rho`` with no rows.
    """
    S, N1, D, _ = M.shape
    A = G_rho.shape[0]
    for s in range(S):
        for j in range(1, N1):
            quasi_diagonal_block(M[s, j], G[s, j], damping, out[s, j])
            if s == 0:
                m00 = M[s, j, 0, 0] + damping
                g0 = G[s, j, 0]
                for y in range(A):
                    m0k = M_rho[y, j]
                    step = (G_rho[y, j] - g0 * m0k / m00) / (m0k + damping - m0k * m0k / m00)
                    out_rho[y, j] = step
                    out[s, j, 0] -= m0k / m00 * step
    for s in range(S):
        for r in range(D):
            out[s, 0, r] = 0.0
    for y in range(A):
        out_rho[y, 0] = 0.0
