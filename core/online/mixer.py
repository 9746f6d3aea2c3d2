"""The mixer: what each source's vote is worth, learned online.

The context sources (``sources.py``) give, for the next symbol, activities
x_s(y); the mixer turns them into the votes added to the network's logits,

    sum_s x_s(y) c_sy,

and learns the weights c_sy: per voted symbol, a block of S context weights
(S sources) with its own full metric, stepped by ``context_writing_update``
(eqs. 17-21 with a full block, seed 004 section 1.3's Sherman-Morrison
update of its inverse).

**The selected weights** (``selected_weights``; ``docs/online.md``, "The
mixer").  Each vote also carries weights shared by all symbols, chosen by
small selecting contexts:

    sum_s x_s(y) (c_sy + u[r_s, s] + v[q, s] + z[o, s] + z'[n, s]),   r_s = b_s * (S + 1) + k,

b_s the state of source s's context (how often it was seen and how many
distinct symbols followed it; for the match and number sources, the length
or position of their prediction), k how many sources found their context,
and q (``field_selected_weights``) where the next symbol falls in its line
and field: ((min(field number, F - 1) * 2 + the field so far repeats the line
above) * P + min(position in the field, P - 1)) * 4 + the kind of the last
symbol (digit, letter, space/tab/newline, other), F and P the settings
``field_selecting_fields`` and ``field_selecting_positions``,
o (``order2_selected_weights``) the last two symbols, hashed into 4096
rows, and n (``unit_selected_weights``) the signs of the recurrent units'
activities a_1 ... a_U (U = min(units, 8), 2^U rows): the recurrent state
chooses a weight vector of the mix.  The PAQ compressors choose their
mixers' weight vectors by such small contexts (Mahoney, "Data Compression
Explained", on context mixing).
``selected_writing_update`` steps them first, by a Newton step in
their outer-product metric (seed 004, Definition 14), kept per weight by
default; the per-symbol weights then step on the error that remains.

The order of a symbol's mixing: ``select`` turns the sources' states into
the rows r_s (after ``selecting.set_rows`` chose the shared sets' rows),
``vote`` writes the votes; after the symbol, ``selected_writing_update`` and
then ``context_writing_update`` step the weights, before the network's
writing weights step on the error they leave (``writing.writing_step``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import inline_kernel, kernel
from .config import BLOCK, DIAGONAL, GRADIENT, F, H
from ..kernels.metric_blocks import contribution_and_step


class Mixer(NamedTuple):
    """The mixer's arrays of the learner's state (``state.OnlineState``, which documents each): the sources'
    activities (its input), the context weights and their metric blocks, the selected weights and their
    metrics, and the rows they select."""

    feat: np.ndarray
    feat_nz: np.ndarray
    ctx_w: np.ndarray
    ctx_P: np.ndarray
    ctx_updates: np.ndarray
    ctx_updated: np.ndarray
    ctx_work: np.ndarray
    sel_w: np.ndarray
    sel_P: np.ndarray
    sel_h: np.ndarray
    sel_updates: np.ndarray
    sel_row: np.ndarray
    fsel_w: np.ndarray
    fsel_h: np.ndarray
    fsel_row: np.ndarray


@inline_kernel
def mixer_of(st):
    """The mixer's arrays of the state ``st`` (``Mixer``)."""
    return Mixer(st.feat, st.feat_nz, st.ctx_w, st.ctx_P, st.ctx_updates, st.ctx_updated, st.ctx_work, st.sel_w,
                 st.sel_P, st.sel_h, st.sel_updates, st.sel_row, st.fsel_w, st.fsel_h, st.fsel_row)


@inline_kernel
def select(mix):
    """The selected weights' rows r_s = b_s * (S + 1) + k into ``mix.sel_row``, where
    ``sources.activities`` left each source's state b_s and, at index S, k."""
    if mix.sel_w.shape[0] > 0:
        row = mix.sel_row
        S = row.shape[0] - 1
        k = row[S]
        for s in range(S):
            row[s] = row[s] * (S + 1) + k


@kernel
def vote(mix, nnz, offset, width):
    """The context units' votes over the active codes y < ``width``: ``offset[y] = sum_s x_s(y) c_sy``, plus
    ``x_s(y) u[r_s, s]`` with the selected weights (their rows in ``mix.sel_row``) and ``x_s(y) v[q, s]``
    with each other shared set (one row of each in ``mix.fsel_row``, which ``selecting.set_rows`` wrote),
    over the ``nnz`` activities listed in ``mix.feat_nz``."""
    feat, feat_nz, ctx_w, sel_w, sel_row, fsel_w, fsel_row = mix.feat, mix.feat_nz, mix.ctx_w, mix.sel_w, \
        mix.sel_row, mix.fsel_w, mix.fsel_row
    selected = sel_w.shape[0] > 0
    sets = fsel_row.shape[0]  # the shared weight sets beside u, stacked in fsel_w (set_rows)
    for y in range(width):
        offset[y] = 0.0
    for q in range(nnz):
        s = feat_nz[q, 0]
        y = feat_nz[q, 1]
        weight = ctx_w[s, y]
        if selected:
            weight += sel_w[sel_row[s], s]
            for j in range(sets):
                weight += fsel_w[fsel_row[j], s]
        offset[y] += feat[s, y] * weight


@kernel
def context_writing_update(mix, nnz, symbols, eta, hyper, curv, err, target):
    """Newton step on the context weights of every symbol a context unit voted for.

    Symbol y's context weights c_.y form one block with the full discounted
    metric sum c_y x(y) x(y)^T (the one-symbol Fisher information of eq. 18
    with the activities x_s(y) of ``sources.py``), kept inverted by Sherman-Morrison
    like the transition blocks, with the prior of ``writing.writing_update`` centred on
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

    ``nnz`` is the number of activities listed in ``mix.feat_nz``, ``symbols``
    the number of symbols learned so far.
    """
    ctx_w, ctx_P, ctx_updates, ctx_updated, feat, feat_nz = mix.ctx_w, mix.ctx_P, mix.ctx_updates, mix.ctx_updated, \
        mix.feat, mix.feat_nz
    ctx_work = mix.ctx_work
    S = ctx_w.shape[0]
    g = hyper[H.writing_discount]
    floor = hyper[H.context_step_floor]
    prior = hyper[H.context_prior]
    centre = hyper[H.context_weight]
    x = ctx_work[0, :S]
    grad = ctx_work[1, :S]
    out = ctx_work[2, :S]
    work = ctx_work[3]
    for q in range(nnz):
        y = feat_nz[q, 1]
        if ctx_updated[y] == symbols + 1:  # this symbol's block is done already
            continue
        if curv[y] < floor and y != target:  # a negligible step: the block is left as it is
            continue
        ctx_updated[y] = symbols + 1
        for s in range(S):
            x[s] = feat[s, y]
            grad[s] = err[y] * x[s] - g * prior * (ctx_w[s, y] - centre)
        contribution_and_step(ctx_P[y], x, curv[y], (g, prior), ctx_updates[y], grad, out, work)
        ctx_updates[y] += 1
        change = 0.0
        for s in range(S):
            ctx_w[s, y] += eta * out[s]
            change += x[s] * out[s]
        err[y] -= curv[y] * eta * change  # what is left for the network's weights (writing_update)


@kernel
def selected_writing_update(mix, nnz, hyper, flags, curv, err):
    """One step on the selected weights u[r_s, s] of this symbol.

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
    ``writing.writing_update``).
    """
    sel_w, sel_row, sel_h, sel_P, sel_updates = mix.sel_w, mix.sel_row, mix.sel_h, mix.sel_P, mix.sel_updates
    fsel_w, fsel_row, fsel_h, feat, feat_nz, ctx_work = mix.fsel_w, mix.fsel_row, mix.fsel_h, mix.feat, mix.feat_nz, \
        mix.ctx_work
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
    for q in range(nnz):
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
        contribution_and_step(sel_P[k], gsum, 1.0, (g, prior), sel_updates[k], grad, out, work)
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
    for q in range(nnz):
        s = feat_nz[q, 0]
        y = feat_nz[q, 1]
        err[y] -= curv[y] * rate * feat[s, y] * out[s]
