"""The window step: truncated BPTT over K symbols, metric contributions, and the tried step on tau.

Every K symbols, a truncated BPTT pass (eqs. 22-24) runs over the window's K
transitions and K outputs after them (the last transition sees the next
output's loss).  Each transition contributes to its (unit, symbol) block the
gradient a_in B_j^{t+1} (eq. 25) and the metric term u u^T with
u = a_in sqrt(m_j^{t+1}) (eq. 26); the blocks' inverse discounted metrics are
updated by Sherman-Morrison (``metric_blocks``, seed 004 §1.3); the
transitions before the window get their credit through each unit's forward
sensitivities (``credit.py``); the prior on
tau whose mass the blocks hold adds its pull to the gradient (``prior_pull``);
and the step P G is tried: the window is replayed with the trial weights and
the step is kept (eta_tau x 1.1) only if the window's log-likelihood did not
go down, else undone (eta_tau / 2); seed 000 §2's rule, per window.
"""

from __future__ import annotations

import math

from ..jit import kernel
from ..kernels.backward import Backprop, Scored, backward
from ..kernels.elementary import log_of
from ..kernels.forward import evolve_into, softmax_offset_into
from .config import F, H
from .alphabet import initial_transition
from .credit import advance_credit, credit_before_window
from ..kernels.metric_blocks import block_step, contribute
from .state import ETA_TAU, NONFINITE, REJECTED, WINDOW_GAIN, WINDOWS, network


@kernel
def _window_loglik(st, a, width, K, pi):
    """sum_{k=1..K} log pi_k(target_k) for the window's activities ``a`` with the current w.

    The predictions are written into rows 1..K of ``pi`` (a row is reused when
    ``pi`` has a single row).
    """
    total = 0.0
    w = st.w[:, :width]
    single = pi.shape[0] == 1
    for k in range(1, K + 1):
        row = pi[0, :width] if single else pi[k, :width]
        softmax_offset_into(a[k], w, st.offset[k], row, st.numerics)
        total += log_of(st.numerics, row[st.targets[k]])
    return total


@kernel
def window_gradient(st, hyper, flags, width):
    """Truncated BPTT over the full window; gradient into ``st.G`` and metric contributions per block.

    Returns (log-likelihood of outputs 1..K with the current w, number of
    distinct codes read, listed in ``st.touched``); the count is -1, and
    nothing is stored, when the backward pass is not finite.
    """
    K = flags[F.window]
    N1, D = st.inputs.shape
    qd = flags[F.quasi_diagonal] == 1
    # the window's predictions again, with the writing weights as they are now, so that the
    # backward pass sees one consistent (w, pi) and the trial below has a fair baseline
    before = _window_loglik(st, st.a, width, K, st.pi)
    chi = st.scratch[0, : K + 1]
    for k in range(K + 1):
        chi[k] = 1.0
    # B and m over outputs 1..K, with B^{K+1} = m^{K+1} = 0 (the window's end)
    for i in range(N1):
        st.B[K + 1, i] = 0.0
        st.m[K + 1, i] = 0.0
    backward(network(st.inputs, st.tau, st.numerics, hyper, flags), Scored(st.x[1:K + 1], st.targets[1:K + 1],
             chi[1:K + 1]), st.w[:, :width], st.a[1:K + 2], st.pi[1:K + 1, :width], flags[F.modulus],
             Backprop(st.B[1:K + 2], st.m[1:K + 2]), st.scratch[1:4, :N1])
    credit = flags[F.credit_horizon] > 0
    if credit:  # eq. 22 one step further back, through transition 0, for the credit beyond the window: B^0, m^0
        chi[0] = 0.0  # output 0 belongs to the previous window
        backward(network(st.inputs, st.tau, st.numerics, hyper, flags), Scored(st.x[0:1], st.targets[0:1], chi[0:1]),
                 st.w[:, :width], st.a[0:2], st.pi[0:1, :width], flags[F.modulus], Backprop(st.B[0:2], st.m[0:2]),
                 st.scratch[1:4, :N1])
    # a non-finite backward pass must not reach the metric blocks, where it would stay for good
    for k in range(0 if credit else 1, K + 1):
        for j in range(N1):
            if not (math.isfinite(st.B[k, j]) and math.isfinite(st.m[k, j])):
                return before, -1
    # distinct codes read in the window
    n_touched = 0
    for k in range(K):
        code = st.x[k]
        seen = False
        for q in range(n_touched):
            if st.touched[q] == code:
                seen = True
                break
        if not seen:
            st.touched[n_touched] = code
            n_touched += 1
    if credit:  # what the window's outputs owe the transitions before it
        credit_before_window(st, hyper, flags, n_touched)
    # gradient and metric contributions of transitions 0..K-1
    u = st.scratch[0, :D]
    work = st.scratch[1, : 2 * D]
    discounting = (hyper[H.metric_discount], hyper[H.metric_prior])
    for k in range(K):
        code = st.x[k]
        for j in range(1, N1):
            b = st.B[k + 1, j]
            mj = st.m[k + 1, j]
            for q in range(D):
                u[q] = st.a[k, st.inputs[j, q]]
            st.block_updates[code, j] = contribute(st.G[code, j], st.metric[code, j], u, (b, mj), discounting,
                                                   st.block_updates[code, j], qd, work)
    if flags[F.transition_prior] == 1:
        prior_pull(st, hyper, flags, n_touched)
    return before, n_touched


@kernel
def prior_pull(st, hyper, flags, n_touched):
    """The transition prior's part of the gradient of each block the window read.

    Block (y, j) holds the prior (lambda_tau / 2)|tau - tau^0|^2, tau^0 its
    initial weights (eqs. 31-33), renewed at the rate its metric is
    discounted: each contribution adds gamma_tau lambda_tau of mass to the
    metric (``metric_contribution``) and, here, -gamma_tau lambda_tau
    (tau - tau^0) to the gradient, so a block that received n contributions
    in the window (one per transition reading it, and one more from the
    credit beyond the window, ``credit.py``) is pulled by
    -n gamma_tau lambda_tau (tau - tau^0).  The
    step M^-1 G is then a MAP step, as the writing layer's is with its own
    prior (``writing.py``).
    """
    K = flags[F.window]
    N1, D = st.inputs.shape
    rate = hyper[H.metric_discount] * hyper[H.metric_prior]
    credited = 1 if flags[F.credit_horizon] > 0 else 0  # the credit's contribution to every block it reads
    for q in range(n_touched):
        code = st.touched[q]
        n = credited
        for k in range(K):
            if st.x[k] == code:
                n += 1
        pull = n * rate
        symbol = st.symbol_of[code]
        for j in range(1, N1):
            self_loop, bias = initial_transition(hyper, flags, j, symbol)
            st.G[code, j, 0] -= pull * (st.tau[code, j, 0] - bias)
            st.G[code, j, 1] -= pull * (st.tau[code, j, 1] - self_loop)
            for r in range(2, D):
                st.G[code, j, r] -= pull * st.tau[code, j, r]


@kernel
def window_update(st, hyper, flags, width):
    """One window: gradient and metric (``window_gradient``), then the tried step on tau."""
    K = flags[F.window]
    N1, D = st.inputs.shape
    qd = flags[F.quasi_diagonal] == 1
    before, n_touched = window_gradient(st, hyper, flags, width)
    if flags[F.credit_horizon] > 0:  # through the transitions just credited, with the weights they ran with
        advance_credit(st, hyper, flags, width)
    if n_touched < 0:  # non-finite backward pass: nothing was stored
        st.counts[WINDOWS] += 1
        st.counts[NONFINITE] += 1
        st.counts[REJECTED] += 1
        st.reals[ETA_TAU] = st.reals[ETA_TAU] * hyper[H.rate_shrink]
        return
    # the step on touched blocks
    finite = True
    for q in range(n_touched):
        code = st.touched[q]
        for j in range(1, N1):
            block_step(st.metric[code, j], st.G[code, j], qd, st.step[code, j])
            for r in range(D):
                st.G[code, j, r] = 0.0
                if not math.isfinite(st.step[code, j, r]):
                    finite = False
    st.counts[WINDOWS] += 1
    eta = st.reals[ETA_TAU]
    if not finite:
        st.counts[NONFINITE] += 1
        st.counts[REJECTED] += 1
        st.reals[ETA_TAU] = eta * hyper[H.rate_shrink]
        return
    for q in range(n_touched):
        code = st.touched[q]
        for j in range(1, N1):
            for r in range(D):
                st.saved_tau[code, j, r] = st.tau[code, j, r]
                st.tau[code, j, r] += eta * st.step[code, j, r]
    # replay the window's transitions with the trial weights
    net = network(st.inputs, st.tau, st.numerics, hyper, flags)
    for i in range(N1):
        st.trial_V[0, i] = st.V[0, i]
        st.trial_a[0, i] = st.a[0, i]
    for k in range(K):
        evolve_into(net, st.trial_V[k], st.trial_a[k], st.x[k], st.trial_V[k + 1], st.trial_a[k + 1])
    after = _window_loglik(st, st.trial_a, width, K, st.scratch[0:1])
    if math.isfinite(after) and after >= before:
        st.reals[ETA_TAU] = min(eta * hyper[H.rate_growth], hyper[H.max_transition_rate])
        st.reals[WINDOW_GAIN] = after - before
        for i in range(N1):
            st.V[K, i] = st.trial_V[K, i]
            st.a[K, i] = st.trial_a[K, i]
    else:
        if not math.isfinite(after):
            st.counts[NONFINITE] += 1
        st.counts[REJECTED] += 1
        st.reals[ETA_TAU] = eta * hyper[H.rate_shrink]
        for q in range(n_touched):  # undo exactly: restore the saved weights
            code = st.touched[q]
            for j in range(1, N1):
                for r in range(D):
                    st.tau[code, j, r] = st.saved_tau[code, j, r]
