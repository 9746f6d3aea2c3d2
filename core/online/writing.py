"""The writing step: one discounted quasi-diagonal Newton step on the writing weights per symbol.

Eqs. (17)-(21) online: the gradient is the single symbol's (eq. 17), and the
Hessian terms of eqs. (18)-(19) are discounted sums with a prior mass on the
diagonal, an online Newton (recursive least squares) step with forgetting.
With context units, the mixer's weights step first (``mixer.py``), and
``steps.writing_step`` runs the two in turn.  The echo-state network's
readout (``core/esn``) takes the same step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import kernel


class Writing(NamedTuple):
    """The network's writing weights and the discounted Hessian terms of their step (``state.OnlineState``),
    with the step's work rows; the echo-state network's readout (``core/esn``) has the same."""

    w: np.ndarray
    h0: np.ndarray
    hd: np.ndarray
    scratch: np.ndarray


@kernel
def writing_update(wr, eta, discount, prior_mass, floor, a_t, first, width):
    """Discounted quasi-diagonal Newton step on w for one symbol (eqs. 17-21 online).

    The step minimises the discounted log-loss plus a Gaussian prior
    (lambda / 2) |w|^2 that is renewed at the rate it is discounted: each
    symbol adds gamma * lambda to the Hessian's diagonal and -gamma * lambda * w
    to the gradient.  Without the prior's gradient a symbol that has always
    followed a context would drive its weight to infinity (separable data),
    and a later surprise would cost without bound.

    ``discount`` is gamma, ``prior_mass`` lambda, ``floor`` the evidence floor.
    Symbol y's sums are discounted at gamma_y = gamma * max(4 c_y, floor),
    c_y = pi_y (1 - pi_y) its curvature (``writing_evidence_floor``): old
    evidence fades as fast as new evidence comes, so a symbol predicted with
    certainty, or long absent, keeps what it learned (a line end that comes
    every thousand symbols), and one at probability 1/2 forgets at the
    clock's rate (4 = 1 / the largest curvature).  The floor bounds the
    memory when the representation the weights read moves.  With floor 1 it
    is the clock's discount for every symbol.

    ``scratch[0]`` and ``scratch[1]`` hold each symbol's curvature and error
    (``steps.writing_step``).  With context units, their weights step first
    (``mixer.selected_writing_update``, then ``mixer.context_writing_update``) and leave
    in ``scratch[1]`` the error that remains under the local quadratic model,
    e_y - c_y * (change of y's logit), for the network's weights to step on:
    block Gauss-Seidel.  Two Newton steps taken at once on the same error by
    correlated blocks would overshoot, and can diverge.
    """
    w, h0, hd, scratch = wr.w, wr.h0, wr.hd, wr.scratch
    N1 = a_t.shape[0]
    g = discount
    keep_clock = 1.0 - g
    prior_clock = g * prior_mass
    # per-symbol quantities first (unit 0), then unit by unit with the symbol loop innermost,
    # which walks w, h0 and hd along their contiguous rows
    curv = scratch[0]
    err = scratch[1]
    h00 = scratch[2]
    bias = scratch[3]
    g0 = scratch[4]
    evidence = floor < 1.0  # else every symbol at the clock's discount
    keep_y = scratch[-2]  # with evidence, each symbol's keep and prior renewal: scratch's last two rows (state.py)
    prior_y = scratch[-1]
    if evidence:
        for y in range(first, width):
            gy = g * max(4.0 * curv[y], floor)
            keep_y[y] = 1.0 - gy
            prior_y[y] = gy * prior_mass
    for y in range(first, width):
        keep = keep_y[y] if evidence else keep_clock
        prior = prior_y[y] if evidence else prior_clock
        h = keep * hd[0, y] + prior + curv[y]
        hd[0, y] = h
        h00[y] = h
        g0[y] = err[y] - prior * w[0, y]
        bias[y] = g0[y] / h
    # two sweeps per unit, the sums and then the step, each with few enough arrays for the compiler
    # to vectorise (one sweep has too many to check for overlap); every entry gets the same
    # operations as in one sweep, so the same bits.  The sweeps run over range(width) and test
    # y >= first: a loop from ``first`` would index with a value that might be negative, which
    # Numba wraps around, and the wrap keeps the compiler from vectorising.
    for i in range(1, N1):
        ai = a_t[i]
        w_i = w[i]
        h0_i = h0[i]
        hd_i = hd[i]
        for y in range(width):
            if y >= first:
                c = curv[y]
                keep = keep_y[y] if evidence else keep_clock
                prior = prior_y[y] if evidence else prior_clock
                h0_i[y] = keep * h0_i[y] + c * ai
                hd_i[y] = keep * hd_i[y] + prior + c * ai * ai
        for y in range(width):
            if y >= first:
                prior = prior_y[y] if evidence else prior_clock
                h0i = h0_i[y]
                ratio = h0i / h00[y]
                step = (err[y] * ai - prior * w_i[y] - g0[y] * ratio) / (hd_i[y] - h0i * ratio)
                w_i[y] += eta * step
                bias[y] -= ratio * step
    for y in range(first, width):
        w[0, y] += eta * bias[y]
