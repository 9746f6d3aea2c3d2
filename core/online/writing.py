"""The writing step: one discounted quasi-diagonal Newton step on the writing weights per symbol.

Eqs. (17)-(21) online: the gradient is the single symbol's (eq. 17), and the
Hessian terms of eqs. (18)-(19) are discounted sums with a prior mass on the
diagonal, an online Newton (recursive least squares) step with forgetting.
The context units' weights step first: the selected weights (the mixer,
``context.py``) by a Newton step in their outer-product metric, then each
voted symbol's weights with a full metric per symbol.
"""

from __future__ import annotations

from ..jit import kernel
from .config import BLOCK, DIAGONAL, GRADIENT, F, H
from .context import NNZ
from .metric_blocks import block_step, metric_contribution
from .state import ETA_W, SYMBOLS


@kernel
def writing_update(st, hyper, flags, a_t, pi_t, target, first, width):
    """Discounted quasi-diagonal Newton step on w for one symbol (eqs. 17-21 online).

    The step minimises the discounted log-loss plus a Gaussian prior
    (lambda / 2) |w|^2 that is renewed at the rate it is discounted: each
    symbol adds gamma * lambda to the Hessian's diagonal and -gamma * lambda * w
    to the gradient.  Without the prior's gradient a symbol that has always
    followed a context would drive its weight to infinity (separable data),
    and a later surprise would cost without bound.

    With context units, their weights step first (``context_writing_update``)
    and the network's weights then step on the error that remains under the
    local quadratic model, e_y - c_y * (change of y's logit): block
    Gauss-Seidel.  Two Newton steps taken at once on the same error by
    correlated blocks would overshoot, and can diverge.
    """
    N1 = a_t.shape[0]
    g = hyper[H.writing_discount]
    keep = 1.0 - g
    prior = g * hyper[H.writing_prior]
    eta = st.reals[ETA_W]
    # per-symbol quantities first (unit 0), then unit by unit with the symbol loop innermost,
    # which walks w, h0 and hd along their contiguous rows
    curv = st.scratch[0]
    err = st.scratch[1]
    h00 = st.scratch[2]
    bias = st.scratch[3]
    g0 = st.scratch[4]
    for y in range(first, width):
        p = pi_t[y]
        curv[y] = p * (1.0 - p)
        err[y] = (1.0 if y == target else 0.0) - p
    if st.sel_w.shape[0] > 0:
        selected_writing_update(st, hyper, flags, curv, err)
    if st.ctx_w.shape[0] > 0:
        context_writing_update(st, hyper, curv, err)
    for y in range(first, width):
        h = keep * st.hd[0, y] + prior + curv[y]
        st.hd[0, y] = h
        h00[y] = h
        g0[y] = err[y] - prior * st.w[0, y]
        bias[y] = g0[y] / h
    for i in range(1, N1):
        ai = a_t[i]
        w_i = st.w[i]
        h0_i = st.h0[i]
        hd_i = st.hd[i]
        for y in range(first, width):
            c = curv[y]
            h0i = keep * h0_i[y] + c * ai
            hii = keep * hd_i[y] + prior + c * ai * ai
            h0_i[y] = h0i
            hd_i[y] = hii
            ratio = h0i / h00[y]
            step = (err[y] * ai - prior * w_i[y] - g0[y] * ratio) / (hii - h0i * ratio)
            w_i[y] += eta * step
            bias[y] -= ratio * step
    for y in range(first, width):
        st.w[0, y] += eta * bias[y]


@kernel
def context_writing_update(st, hyper, curv, err):
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
    """
    S = st.ctx_w.shape[0]
    g = hyper[H.writing_discount]
    prior = hyper[H.context_prior]
    centre = hyper[H.context_weight]
    eta = st.reals[ETA_W]
    x = st.ctx_work[0, :S]
    grad = st.ctx_work[1, :S]
    out = st.ctx_work[2, :S]
    work = st.ctx_work[3]
    for q in range(st.ctx_int[NNZ]):
        y = st.feat_nz[q, 1]
        if st.ctx_updated[y] == st.counts[SYMBOLS] + 1:  # this symbol's block is done already
            continue
        st.ctx_updated[y] = st.counts[SYMBOLS] + 1
        for s in range(S):
            x[s] = st.feat[s, y]
        metric_contribution(st.ctx_P[y], x, curv[y], g, prior, st.ctx_updates[y], False, work)
        st.ctx_updates[y] += 1
        for s in range(S):
            grad[s] = err[y] * x[s] - g * prior * (st.ctx_w[s, y] - centre)
        block_step(st.ctx_P[y], grad, False, out)
        change = 0.0
        for s in range(S):
            st.ctx_w[s, y] += eta * out[s]
            change += x[s] * out[s]
        err[y] -= curv[y] * eta * change  # what is left for the network's weights (writing_update)


@kernel
def selected_writing_update(st, hyper, flags, curv, err):
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
    * ``block``: one full S x S block per k (``st.sel_row[S]``, the number of
      sources whose context was found), discounted sum of g g^T kept inverted
      by Sherman-Morrison (``metric_contribution``); the step is P g.  The
      block pools every row selected under that k, so a row met rarely steps
      as if it had been met every time: measured, it learns more slowly.
    * ``gradient``: no metric, ``selected_rate`` times g: the ablation that
      compares the metric's step with a tuned plain gradient step (measured
      in docs/benchmarks.md: the diagonal step is within 0.0003 bits/byte of
      the best of four rates on the public logs, 0.004 held out, with no
      rate to choose).

    The field-selected weights v[q, s] (``field_selected_weights``), in every
    logit beside u, have the same gradient g_s (plus their own prior term)
    and step on it in the same sweep, by their own diagonal metric term kept
    the same way (by the plain gradient under ``gradient``; under ``block``
    too by the diagonal term: a block per row would pool nothing).

    The error that remains under the local quadratic model is left in
    ``err`` for the per-symbol weights (block Gauss-Seidel, as in
    ``writing_update``).
    """
    S = st.sel_w.shape[1]
    g = hyper[H.selected_discount]
    prior = hyper[H.selected_prior]
    rate = hyper[H.selected_rate]
    method = flags[F.selected_method]
    k = st.sel_row[S]
    gsum = st.ctx_work[0, :S]
    grad = st.ctx_work[1, :S]
    out = st.ctx_work[2, :S]
    work = st.ctx_work[3]
    for s in range(S):
        gsum[s] = 0.0
    for q in range(st.ctx_int[NNZ]):
        s = st.feat_nz[q, 0]
        y = st.feat_nz[q, 1]
        gsum[s] += st.feat[s, y] * err[y]
    for s in range(S):
        grad[s] = gsum[s] - g * prior * st.sel_w[st.sel_row[s], s]
    if method == DIAGONAL:
        for s in range(S):
            r = st.sel_row[s]
            h = (1.0 - g) * st.sel_h[r, s] + gsum[s] * gsum[s] + g * prior
            st.sel_h[r, s] = h
            out[s] = grad[s] / h
    elif method == BLOCK:
        metric_contribution(st.sel_P[k], gsum, 1.0, g, prior, st.sel_updates[k], False, work)
        st.sel_updates[k] += 1
        block_step(st.sel_P[k], grad, False, out)
    else:
        for s in range(S):
            out[s] = grad[s]
    for s in range(S):
        st.sel_w[st.sel_row[s], s] += rate * out[s]
    if st.fsel_w.shape[0] > 0:  # the field-selected weights, on the same gradient (one Jacobi sweep with u)
        q = st.fsel_row[0]
        for s in range(S):
            step = gsum[s] - g * prior * st.fsel_w[q, s]
            if method != GRADIENT:
                h = (1.0 - g) * st.fsel_h[q, s] + gsum[s] * gsum[s] + g * prior
                st.fsel_h[q, s] = h
                step = step / h
            st.fsel_w[q, s] += rate * step
            out[s] += step
    for q in range(st.ctx_int[NNZ]):
        s = st.feat_nz[q, 0]
        y = st.feat_nz[q, 1]
        err[y] -= curv[y] * rate * st.feat[s, y] * out[s]
