"""The writing step: one discounted quasi-diagonal Newton step on the writing weights per symbol.

Eqs. (17)-(21) online: the gradient is the single symbol's (eq. 17), and the
Hessian terms of eqs. (18)-(19) are discounted sums with a prior mass on the
diagonal, an online Newton (recursive least squares) step with forgetting.
The context units' weights step first: the selected weights (the mixer,
``context.py``) by a Newton step in their outer-product metric, then each
voted symbol's weights with a full metric per symbol.
"""

from __future__ import annotations

from ..jit import inline_kernel, kernel
from .config import BLOCK, DIAGONAL, GRADIENT, F, H
from .context import NNZ
from .metric_blocks import contribution_and_step


@inline_kernel
def writing_step(w, h0, hd, scratch, sel_w, sel_row, sel_h, sel_P, sel_updates, fsel_w, fsel_row, fsel_h, ctx_w, ctx_P,
                 ctx_updates, ctx_updated, feat, feat_nz, ctx_int, ctx_work, symbols, eta, hyper, flags, a_t, pi_t,
                 target, first, width):
    """The writing step for one symbol: the mixer's selected weights, then each voted symbol's context weights,
    then the network's writing weights, each on the error the ones before left (block Gauss-Seidel).

    The arrays are the learner's own (``state.py``), passed one by one.
    ``scratch[0]`` and ``scratch[1]`` receive each symbol's curvature
    pi_y (1 - pi_y) and error 1[y = target] - pi_y.
    """
    curv = scratch[0]
    err = scratch[1]
    for y in range(first, width):
        p = pi_t[y]
        curv[y] = p * (1.0 - p)
        err[y] = (1.0 if y == target else 0.0) - p
    if sel_w.shape[0] > 0:
        selected_writing_update(sel_w, sel_row, sel_h, sel_P, sel_updates, fsel_w, fsel_row, fsel_h, feat, feat_nz,
                                ctx_int, ctx_work, hyper, flags, curv, err)
    if ctx_w.shape[0] > 0:
        context_writing_update(ctx_w, ctx_P, ctx_updates, ctx_updated, feat, feat_nz, ctx_int, ctx_work, symbols,
                               eta, hyper, curv, err, target)
    writing_update(w, h0, hd, scratch, eta, hyper[H.writing_discount], hyper[H.writing_prior],
                   hyper[H.writing_evidence_floor], a_t, first, width)


@kernel
def writing_update(w, h0, hd, scratch, eta, discount, prior_mass, floor, a_t, first, width):
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
    (``writing_step``).  With context units, their weights step first
    (``selected_writing_update``, then ``context_writing_update``) and leave
    in ``scratch[1]`` the error that remains under the local quadratic model,
    e_y - c_y * (change of y's logit), for the network's weights to step on:
    block Gauss-Seidel.  Two Newton steps taken at once on the same error by
    correlated blocks would overshoot, and can diverge.
    """
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


@kernel
def context_writing_update(ctx_w, ctx_P, ctx_updates, ctx_updated, feat, feat_nz, ctx_int, ctx_work, symbols, eta,
                           hyper, curv, err, target):
    """Newton step on the context weights of every symbol a context unit voted for.

    Symbol y's context weights c_.y form one block with the full discounted
    metric sum c_y x(y) x(y)^T (the one-symbol Fisher information of eq. 18
    with the activities x_s(y) of context.py), kept inverted by Sherman-Morrison
    like the transition blocks, with the prior of ``writing_update`` centred on
    the initial weight.  The block is full, not quasi-diagonal: the sources
    are strongly correlated (every order of a chain votes for the same
    symbols), and independent coordinate steps would add up to several times
    the Newton step.  A symbol no context voted for keeps its block untouched,
    as a transition block is only discounted when it receives a contribution.

    Nor does a voted symbol other than ``target`` whose curvature c_y is
    below ``context_step_floor``: its gradient e_y x(y) = -pi_y x(y) and its
    metric term c_y x(y) x(y)^T are both of the order of pi_y, and most of
    the symbols a log's contexts vote for are predicted at well under 10^-3
    (docs/benchmarks.md, "Three times the throughput").  The symbol that came
    always steps, however improbable it was: its error is 1 - pi_y.
    """
    S = ctx_w.shape[0]
    g = hyper[H.writing_discount]
    floor = hyper[H.context_step_floor]
    prior = hyper[H.context_prior]
    centre = hyper[H.context_weight]
    x = ctx_work[0, :S]
    grad = ctx_work[1, :S]
    out = ctx_work[2, :S]
    work = ctx_work[3]
    for q in range(ctx_int[NNZ]):
        y = feat_nz[q, 1]
        if ctx_updated[y] == symbols + 1:  # this symbol's block is done already
            continue
        if curv[y] < floor and y != target:  # a negligible step: the block is left as it is
            continue
        ctx_updated[y] = symbols + 1
        for s in range(S):
            x[s] = feat[s, y]
            grad[s] = err[y] * x[s] - g * prior * (ctx_w[s, y] - centre)
        contribution_and_step(ctx_P[y], x, curv[y], g, prior, ctx_updates[y], grad, out, work)
        ctx_updates[y] += 1
        change = 0.0
        for s in range(S):
            ctx_w[s, y] += eta * out[s]
            change += x[s] * out[s]
        err[y] -= curv[y] * eta * change  # what is left for the network's weights (writing_update)


@kernel
def selected_writing_update(sel_w, sel_row, sel_h, sel_P, sel_updates, fsel_w, fsel_row, fsel_h, feat, feat_nz,
                            ctx_int, ctx_work, hyper, flags, curv, err):
    """One step on the selected weights u[r_s, s] of this symbol (the mixer of ``context.py``).

    Every symbol's logit holds sum_s x_s(y) u[r_s, s], so the log-loss
    gradient of the active weights is g_s = sum_y (1[y = x_t] - pi_y) x_s(y)
    (``err`` holds 1[y = x_t] - pi_y), plus the prior's -gamma lambda u.  The
    metric is the outer-product metric (seed 004, Definition 14), discounted
    with a prior mass as every metric here:

    * ``diagonal`` (the default): each weight keeps its own diagonal term,
      h <- (1 - gamma) h + g_s^2 + gamma lambda, accumulated only on the
      symbols where its row is selected, and steps by g_s / h.  A row met
      rarely keeps a small h and a large step; one met on every line settles.
    * ``block``: one full S x S block per k (``sel_row[S]``, the number of
      sources whose context was found), discounted sum of g g^T kept inverted
      by Sherman-Morrison (``metric_blocks``); the step is P g.  The
      block pools every row selected under that k, so a row met rarely steps
      as if it had been met every time: measured, it learns more slowly.
    * ``gradient``: no metric, ``selected_rate`` times g: the ablation that
      compares the metric's step with a tuned plain gradient step (measured
      in docs/benchmarks.md: the diagonal step is within 0.0003 bits/byte of
      the best of four rates on the public logs, 0.004 held out, with no
      rate to choose).

    The field-selected weights v[q, s] (``field_selected_weights``), the
    order-2-selected ones (``order2_selected_weights``) and the unit-selected
    ones (``unit_selected_weights``), one row of each set in every logit
    beside u, have the same gradient g_s (plus their own prior
    term) and step on it in the same sweep, each by its own diagonal metric
    term kept the same way (by the plain gradient under ``gradient``; under
    ``block`` too by the diagonal term: a block per row would pool nothing).

    The error that remains under the local quadratic model is left in
    ``err`` for the per-symbol weights (block Gauss-Seidel, as in
    ``writing_update``).
    """
    S = sel_w.shape[1]
    g = hyper[H.selected_discount]
    prior = hyper[H.selected_prior]
    rate = hyper[H.selected_rate]
    method = flags[F.selected_method]
    k = sel_row[S]
    gsum = ctx_work[0, :S]
    grad = ctx_work[1, :S]
    out = ctx_work[2, :S]
    work = ctx_work[3]
    for s in range(S):
        gsum[s] = 0.0
    for q in range(ctx_int[NNZ]):
        s = feat_nz[q, 0]
        y = feat_nz[q, 1]
        gsum[s] += feat[s, y] * err[y]
    for s in range(S):
        grad[s] = gsum[s] - g * prior * sel_w[sel_row[s], s]
    if method == DIAGONAL:
        for s in range(S):
            r = sel_row[s]
            h = (1.0 - g) * sel_h[r, s] + gsum[s] * gsum[s] + g * prior
            sel_h[r, s] = h
            out[s] = grad[s] / h
    elif method == BLOCK:
        contribution_and_step(sel_P[k], gsum, 1.0, g, prior, sel_updates[k], grad, out, work)
        sel_updates[k] += 1
    else:
        for s in range(S):
            out[s] = grad[s]
    for s in range(S):
        sel_w[sel_row[s], s] += rate * out[s]
    if fsel_w.shape[0] > 0:  # the field-, order-2- and unit-selected sets, on the same gradient (one sweep with u)
        for j in range(fsel_row.shape[0]):
            q = fsel_row[j]
            for s in range(S):
                step = gsum[s] - g * prior * fsel_w[q, s]
                if method != GRADIENT:
                    h = (1.0 - g) * fsel_h[q, s] + gsum[s] * gsum[s] + g * prior
                    fsel_h[q, s] = h
                    step = step / h
                fsel_w[q, s] += rate * step
                out[s] += step
    for q in range(ctx_int[NNZ]):
        s = feat_nz[q, 0]
        y = feat_nz[q, 1]
        err[y] -= curv[y] * rate * feat[s, y] * out[s]
