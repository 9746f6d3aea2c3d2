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
from ..kernels.transition import quasi_diagonal_block


@inline_kernel
def _sherman_morrison(P, u, work):
    """P <- (P^-1 + u u^T)^-1 in place, exactly symmetric."""
    D = u.shape[0]
    denom = 1.0
    for r in range(D):
        acc = 0.0
        for c in range(D):
            acc += P[r, c] * u[c]
        work[r] = acc
        denom += u[r] * acc
    _symmetric_downdate(P, work, 1.0 / denom)


@inline_kernel
def _sherman_morrison_coordinate(P, k, mass, work):
    """P <- (P^-1 + mass e_k e_k^T)^-1 in place: the rank-one update along a coordinate axis."""
    D = P.shape[0]
    for r in range(D):
        work[r] = P[r, k]
    _symmetric_downdate(P, work, mass / (1.0 + mass * work[k]))


@inline_kernel
def _symmetric_downdate(P, z, scale):
    """P <- P - scale z z^T, one product per pair, mirrored: rounding cannot make P asymmetric."""
    D = P.shape[0]
    for r in range(D):
        zr = z[r] * scale
        for c in range(r, D):
            v = P[r, c] - zr * z[c]
            P[r, c] = v
            P[c, r] = v


@inline_kernel
def metric_contribution(block, u, weight, discount, prior, updates, quasi_diagonal, work):
    """Add weight * u u^T to a block's discounted metric, keeping a prior mass on its diagonal.

    Full blocks hold the *inverse* P of the metric M, updated by Sherman-Morrison:
    M <- (1 - gamma) M + weight u u^T is P <- P / (1 - gamma), then a rank-one
    update.  A full-rank prior gamma*lambda*I per contribution is not rank-one,
    so it is added one coordinate at a time, cycling: coordinate (updates mod D)
    receives D*gamma*lambda, which keeps lambda I on average.  Quasi-diagonal
    blocks hold M_00, M_0k, M_kk themselves (eqs. 34-35) and get the exact prior.
    """
    D = u.shape[0]
    keep = 1.0 - discount
    if quasi_diagonal:
        for k in range(D):
            block[0, k] = keep * block[0, k] + weight * u[0] * u[k]
            if k > 0:
                block[k, k] = keep * block[k, k] + weight * u[k] * u[k] + discount * prior
        block[0, 0] += discount * prior
        return
    inv_keep = 1.0 / keep
    for r in range(D):
        for c in range(D):
            block[r, c] *= inv_keep
    scaled = work[D:2 * D]
    root = math.sqrt(weight)
    for r in range(D):
        scaled[r] = u[r] * root
    _sherman_morrison(block, scaled, work[:D])
    _sherman_morrison_coordinate(block, updates % D, D * discount * prior, work[:D])


@inline_kernel
def block_step(block, grad, quasi_diagonal, out):
    """out = M^-1 grad for one block: P grad (full) or the quasi-diagonal inverse (eqs. 34-35)."""
    D = grad.shape[0]
    if quasi_diagonal:  # the prior mass is already inside the block
        quasi_diagonal_block(block, grad, 0.0, out)
        return
    for r in range(D):
        acc = 0.0
        for c in range(D):
            acc += block[r, c] * grad[c]
        out[r] = acc
