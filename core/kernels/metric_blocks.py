"""The discounted metric blocks: Sherman-Morrison updates and the step M^-1 g of one block.

Each (symbol, unit) block of the transition weights, and each symbol's block
of context weights, keeps a discounted sum of rank-one metric terms u u^T
(eq. 26) with a prior mass on its diagonal.  A full block holds the sum's
*inverse*, kept up to date by Sherman-Morrison (seed 004 §1.3): O(D^2) per
contribution and no matrix inversion in the hot path.  A quasi-diagonal block
holds M_00, M_0k, M_kk themselves (eqs. 34-35).
"""

from __future__ import annotations

import math

from ..jit import inline_kernel
from .transition import quasi_diagonal_block


@inline_kernel
def _full_update(P, u, weight, discounting, updates, work, grad, out):
    """The full block's update of ``metric_contribution`` and, if ``grad`` is not empty, out = P grad after it.

    P <- P / (1 - gamma); Sherman-Morrison with s = sqrt(weight) u: z = P s,
    P <- P - z z^T / (1 + s.z); then the coordinate update along e_k with
    mass m (``metric_contribution``): c = column k of P, P <- P - m c c^T /
    (1 + m c_k).  The scaling and the product z = P s share one sweep; c is
    formed from the scaled P and z, entry by entry as the first downdate
    computes it; one sweep applies both downdates to each entry of the upper
    triangle, mirrored (rounding cannot make P asymmetric).  Every entry gets
    the same operations in the same order as when the steps are taken one
    after the other, so the same bits (``tests/naive.py``,
    ``metric_update_in_steps``); the sums run two rows at a time, each in
    its own order, because a sum's additions wait on each other and two
    sums' do not.  ``work`` holds 2D.
    """
    discount, prior = discounting
    D = u.shape[0]
    inv_keep = 1.0 / (1.0 - discount)
    root = math.sqrt(weight)
    z = work[:D]
    s = work[D:2 * D]  # then c: s is not read after the first sweep
    for r in range(D):
        s[r] = u[r] * root
    denom = 1.0
    for r in range(0, D - 1, 2):  # two rows at a time: two independent sums, each in its own order
        acc0 = 0.0
        acc1 = 0.0
        for c in range(D):
            v0 = P[r, c] * inv_keep
            v1 = P[r + 1, c] * inv_keep
            P[r, c] = v0
            P[r + 1, c] = v1
            acc0 += v0 * s[c]
            acc1 += v1 * s[c]
        z[r] = acc0
        z[r + 1] = acc1
        denom += s[r] * acc0
        denom += s[r + 1] * acc1
    if D % 2 == 1:
        r = D - 1
        acc = 0.0
        for c in range(D):
            v = P[r, c] * inv_keep
            P[r, c] = v
            acc += v * s[c]
        z[r] = acc
        denom += s[r] * acc
    scale = 1.0 / denom
    k = updates % D
    mass = D * discount * prior
    col = s
    for r in range(D):  # column k after the first downdate, which computes entry (min, max) and mirrors it
        if r <= k:
            col[r] = P[r, k] - (z[r] * scale) * z[k]
        else:
            col[r] = P[k, r] - (z[k] * scale) * z[r]
    scale_k = mass / (1.0 + mass * col[k])
    for r in range(D):
        zr = z[r] * scale
        cr = col[r] * scale_k
        for c in range(r, D):
            v = (P[r, c] - zr * z[c]) - cr * col[c]
            P[r, c] = v
            P[c, r] = v
    if grad.shape[0] > 0:
        _product(P, grad, out)


@inline_kernel
def _product(P, g, out):
    """out = P g, each entry summed over the columns in order, two rows at a time (two independent sums)."""
    D = g.shape[0]
    for r in range(0, D - 1, 2):
        acc0 = 0.0
        acc1 = 0.0
        for c in range(D):
            acc0 += P[r, c] * g[c]
            acc1 += P[r + 1, c] * g[c]
        out[r] = acc0
        out[r + 1] = acc1
    if D % 2 == 1:
        acc = 0.0
        for c in range(D):
            acc += P[D - 1, c] * g[c]
        out[D - 1] = acc


@inline_kernel
def metric_contribution(block, u, weight, discounting, updates, quasi_diagonal, work):
    """Add weight * u u^T to a block's discounted metric, keeping a prior mass on its diagonal.

    Full blocks hold the *inverse* P of the metric M, updated by Sherman-Morrison:
    M <- (1 - gamma) M + weight u u^T is P <- P / (1 - gamma), then a rank-one
    update.  A full-rank prior gamma*lambda*I per contribution is not rank-one,
    so it is added one coordinate at a time, cycling: coordinate (updates mod D)
    receives D*gamma*lambda, which keeps lambda I on average.  Quasi-diagonal
    blocks hold M_00, M_0k, M_kk themselves (eqs. 34-35) and get the exact prior.

    ``discounting`` is the pair (gamma, lambda): the metric's discount and its prior mass.
    """
    discount, prior = discounting
    D = u.shape[0]
    keep = 1.0 - discount
    if quasi_diagonal:
        for k in range(D):
            block[0, k] = keep * block[0, k] + weight * u[0] * u[k]
            if k > 0:
                block[k, k] = keep * block[k, k] + weight * u[k] * u[k] + discount * prior
        block[0, 0] += discount * prior
        return
    _full_update(block, u, weight, discounting, updates, work, u[:0], u[:0])


@inline_kernel
def contribute(grad, block, u, backprop, discounting, updates, quasi_diagonal, work):
    """One contribution to a transition block: b u to its gradient ``grad`` (eq. 25) and m u u^T to its metric
    (``metric_contribution``; eq. 26), ``backprop`` the unit's pair (b, m) = (B_j, m_j) of the backward pass;
    returns the block's count of contributions, one more."""
    b, weight = backprop
    for r in range(u.shape[0]):
        grad[r] += b * u[r]
    metric_contribution(block, u, weight, discounting, updates, quasi_diagonal, work)
    return updates + 1


@inline_kernel
def contribution_and_step(block, u, weight, discounting, updates, grad, out, work):
    """``metric_contribution`` on a full block, then out = P grad (``block_step``)."""
    _full_update(block, u, weight, discounting, updates, work, grad, out)


@inline_kernel
def block_step(block, grad, quasi_diagonal, out):
    """out = M^-1 grad for one block: P grad (full) or the quasi-diagonal inverse (eqs. 34-35)."""
    if quasi_diagonal:  # the prior mass is already inside the block
        quasi_diagonal_block(block, grad, 0.0, out)
        return
    _product(block, grad, out)
