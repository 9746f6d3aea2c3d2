"""Numba kernels of the online learner: one call learns a whole buffer of symbols.

Per symbol x_t:

1. predict pi_t from the current activities (eq. 6, over the active codes);
   the prequential code length is -log2 pi_t(x_t), plus log2(#unseen) for a
   first occurrence, which is scored on the escape code;
2. writing weights: the quasi-diagonal Newton step of eqs. (20)-(21) with
   the single-symbol gradient (eq. 17) and the Hessian terms of eqs. (18)-(19)
   kept as discounted sums with a prior mass on the diagonal;
3. advance the state with x_t (eq. 13 / eq. 10).

Every K symbols, a truncated BPTT pass (eqs. 22-24) runs over the window's K
transitions and K outputs after them (the last transition sees the next
output's loss), each transition contributes to its (unit, symbol) block the
gradient a_in B_j^{t+1} (eq. 25) and the metric term u u^T with
u = a_in sqrt(m_j^{t+1}) (eq. 26), the blocks' inverse discounted metrics are
updated by Sherman-Morrison (seed 004 §1.3), and the step P G is tried: the
window is replayed with the trial weights and the step is kept (eta_tau x 1.1)
only if the window's log-likelihood did not go down, else undone (eta_tau / 2);
seed 000 §2's rule, per window.
"""

from __future__ import annotations

import math

import numpy as np

from ..jit import kernel
from ..kernels.backward import backward
from ..kernels.forward import evolve_into, softmax_offset_into
from ..kernels.transition import quasi_diagonal_block
from .context import NNZ, clear_features, features, observe
from .state import ACTIVE, ETA_TAU, ETA_W, NONFINITE, REJECTED, SYMBOLS, WINDOW_GAIN, WINDOW_POS, WINDOWS

# hyper (float) and flags (int) positions: see OnlineConfig.hyper / OnlineConfig.flags
H_LEAK, H_INPUT_SCALE, H_GW, H_LW, H_GT, H_LT, H_MAXRATE, H_GROW, H_SHRINK, H_CTX_WEIGHT, H_CTX_PRIOR = range(11)
F_WINDOW, F_ACT, F_MODULUS, F_QD, F_CAP, F_SEED, F_CTX_BITS, F_LIMIT, F_MATCH_MIN = range(9)

ALPHA = 0.5
# once every symbol of the alphabet has been seen, the escape can no longer occur: its bias is set
# so low that exp() of it is exactly 0 (and its square still finite), and its column stops learning
RETIRED_ESCAPE_BIAS = -1.0e150
LN2 = math.log(2.0)
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


@kernel
def unit_uniform(seed, j, y):
    """A reproducible uniform number in [0, 1) for (seed, unit, symbol): SplitMix64 of the triple."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(j) * np.uint64(0xBF58476D1CE4E5B9) \
        + np.uint64(y) * np.uint64(0x94D049BB133111EB) + np.uint64(0x2545F4914F6CDD1D)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel
def activate_symbol(st, hyper, flags, symbol):
    """Give ``symbol`` the next internal code and initialise its parameters; returns the code.

    Writing weights: the new code starts with the escape's bias less the log of
    the number of symbols still unseen, so it takes its share of the escape's
    mass.  Transition weights per seed 000 Appendix A (eqs. 31-33): tau_jj = -1/2,
    tau_0j = beta_j + input_scale * mu_j/4 * (u_jy - 1/2).  Online the symbol
    frequencies of eq. (32) are unknown, so the reading rates u_jy are centred
    on their expectation 1/2 instead.  The GNN takes the RNN principle of eq. (69)
    (self-loop 1 - 1/j, reading rate (u - 1/2)/2 x input_scale).  Logistic
    units get the same network through the affine map of model.reparametrize.
    """
    N1, D = st.inputs.shape
    cap = flags[F_CAP]
    n = st.counts[ACTIVE]
    code = n + 1
    st.code_of[symbol] = code
    st.symbol_of[code] = symbol
    st.counts[ACTIVE] = n + 1
    for i in range(N1):
        st.w[i, code] = 0.0
        st.h0[i, code] = 0.0
        st.hd[i, code] = hyper[H_LW]
    st.w[0, code] = st.w[0, 0] - math.log(cap - n)
    S = st.ctx_w.shape[0]
    for s in range(S):
        st.ctx_w[s, code] = hyper[H_CTX_WEIGHT]
        for r in range(S):
            st.ctx_P[code, s, r] = 1.0 / hyper[H_CTX_PRIOR] if r == s else 0.0
    if S > 0:
        st.ctx_updates[code] = 0
        st.ctx_updated[code] = 0
    for k in range(st.pi.shape[0]):
        st.pi[k, code] = 0.0
    leak = hyper[H_LEAK]
    scale = hyper[H_INPUT_SCALE]
    logistic = flags[F_ACT] == 1
    lam = hyper[H_LT]
    for j in range(1, N1):
        u = unit_uniform(flags[F_SEED], j, symbol) - 0.5
        if leak != 0.0:
            mu = 1.0 / (j + 1.0)
            self_loop = -ALPHA
            bias = -math.sqrt(ALPHA * (ALPHA - mu)) + scale * 0.25 * mu * u
        else:
            self_loop = 1.0 - 1.0 / j
            bias = scale * 0.5 * u
        for k in range(D):
            st.tau[code, j, k] = 0.0
        if logistic:  # tanh -> logistic coordinates (model.reparametrize)
            st.tau[code, j, 1] = 4.0 * self_loop
            st.tau[code, j, 0] = 2.0 * (bias - self_loop)
        else:
            st.tau[code, j, 1] = self_loop
            st.tau[code, j, 0] = bias
        for r in range(D):
            for c in range(D):
                st.metric[code, j, r, c] = 0.0
            if flags[F_QD]:
                st.metric[code, j, r, r] = lam
            else:
                st.metric[code, j, r, r] = 1.0 / lam
        st.block_updates[code, j] = 0
    return code


@kernel
def writing_update(st, hyper, a_t, pi_t, target, first, width):
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
    g = hyper[H_GW]
    keep = 1.0 - g
    prior = g * hyper[H_LW]
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
    g = hyper[H_GW]
    prior = hyper[H_CTX_PRIOR]
    centre = hyper[H_CTX_WEIGHT]
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


@kernel
def _sherman_morrison_coordinate(P, k, mass, work):
    """P <- (P^-1 + mass e_k e_k^T)^-1 in place: the rank-one update along a coordinate axis."""
    D = P.shape[0]
    for r in range(D):
        work[r] = P[r, k]
    _symmetric_downdate(P, work, mass / (1.0 + mass * work[k]))


@kernel
def _symmetric_downdate(P, z, scale):
    """P <- P - scale z z^T, one product per pair, mirrored: rounding cannot make P asymmetric."""
    D = P.shape[0]
    for r in range(D):
        zr = z[r] * scale
        for c in range(r, D):
            v = P[r, c] - zr * z[c]
            P[r, c] = v
            P[c, r] = v


@kernel
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


@kernel
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
        softmax_offset_into(a[k], w, st.offset[k], row)
        total += math.log(row[st.targets[k]])
    return total


@kernel
def window_gradient(st, hyper, flags, width):
    """Truncated BPTT over the full window; gradient into ``st.G`` and metric contributions per block.

    Returns (log-likelihood of outputs 1..K with the current w, number of
    distinct codes read, listed in ``st.touched``); the count is -1, and
    nothing is stored, when the backward pass is not finite.
    """
    K = flags[F_WINDOW]
    N1, D = st.inputs.shape
    leak = hyper[H_LEAK]
    activation = flags[F_ACT]
    qd = flags[F_QD] == 1
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
    backward(st.x[1:K + 1], st.targets[1:K + 1], chi[1:K + 1], st.w[:, :width], st.tau, st.a[1:K + 2],
             st.pi[1:K + 1, :width], st.inputs, leak, True, activation, flags[F_MODULUS], st.B[1:K + 2],
             st.m[1:K + 2], st.scratch[1:4, :N1])
    # a non-finite backward pass must not reach the metric blocks, where it would stay for good
    for k in range(1, K + 1):
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
    # gradient and metric contributions of transitions 0..K-1
    u = st.scratch[0, :D]
    work = st.scratch[1, : 2 * D]
    for k in range(K):
        code = st.x[k]
        for j in range(1, N1):
            b = st.B[k + 1, j]
            mj = st.m[k + 1, j]
            for q in range(D):
                u[q] = st.a[k, st.inputs[j, q]]
                st.G[code, j, q] += u[q] * b
            metric_contribution(st.metric[code, j], u, mj, hyper[H_GT], hyper[H_LT], st.block_updates[code, j], qd, work)
            st.block_updates[code, j] += 1
    return before, n_touched


@kernel
def window_update(st, hyper, flags, width):
    """One window: gradient and metric (``window_gradient``), then the tried step on tau."""
    K = flags[F_WINDOW]
    N1, D = st.inputs.shape
    leak = hyper[H_LEAK]
    activation = flags[F_ACT]
    qd = flags[F_QD] == 1
    before, n_touched = window_gradient(st, hyper, flags, width)
    if n_touched < 0:  # non-finite backward pass: nothing was stored
        st.counts[WINDOWS] += 1
        st.counts[NONFINITE] += 1
        st.counts[REJECTED] += 1
        st.reals[ETA_TAU] = st.reals[ETA_TAU] * hyper[H_SHRINK]
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
        st.reals[ETA_TAU] = eta * hyper[H_SHRINK]
        return
    for q in range(n_touched):
        code = st.touched[q]
        for j in range(1, N1):
            for r in range(D):
                st.saved_tau[code, j, r] = st.tau[code, j, r]
                st.tau[code, j, r] += eta * st.step[code, j, r]
    # replay the window's transitions with the trial weights
    empty = st.tau[0, :0, 0:0]
    for i in range(N1):
        st.trial_V[0, i] = st.V[0, i]
        st.trial_a[0, i] = st.a[0, i]
    for k in range(K):
        evolve_into(st.trial_V[k], st.trial_a[k], st.x[k], st.tau, empty, st.inputs, leak, True, activation,
                    st.trial_V[k + 1], st.trial_a[k + 1])
    after = _window_loglik(st, st.trial_a, width, K, st.scratch[0:1])
    if math.isfinite(after) and after >= before:
        st.reals[ETA_TAU] = min(eta * hyper[H_GROW], hyper[H_MAXRATE])
        st.reals[WINDOW_GAIN] = after - before
        for i in range(N1):
            st.V[K, i] = st.trial_V[K, i]
            st.a[K, i] = st.trial_a[K, i]
    else:
        if not math.isfinite(after):
            st.counts[NONFINITE] += 1
        st.counts[REJECTED] += 1
        st.reals[ETA_TAU] = eta * hyper[H_SHRINK]
        for q in range(n_touched):  # undo exactly: restore the saved weights
            code = st.touched[q]
            for j in range(1, N1):
                for r in range(D):
                    st.tau[code, j, r] = st.saved_tau[code, j, r]


@kernel
def learn_buffer(st, hyper, flags, symbols, bits):
    """Predict, score and learn every symbol of ``symbols``; bits[t] = its prequential code length."""
    cap = flags[F_CAP]
    for t in range(symbols.shape[0]):
        symbol = symbols[t]
        predict_step(st, flags)
        pi_t = st.pi[st.counts[WINDOW_POS]]
        code = st.code_of[symbol]
        if code == 0:  # first occurrence: scored on the escape, then named among the unseen
            bits[t] = -math.log2(pi_t[0]) + math.log2(cap - st.counts[ACTIVE])
        else:
            bits[t] = -math.log2(pi_t[code])
        learn_step(st, hyper, flags, symbol)


@kernel
def predict_step(st, flags):
    """The prediction for the next symbol, into ``st.pi[window position]``; returns the active width.

    With context units it leaves their activities in ``st.feat`` for ``learn_step``.
    """
    k = st.counts[WINDOW_POS]
    width = st.counts[ACTIVE] + 1
    if st.ctx_kind.shape[0] > 0:
        features(st, flags[F_CAP], flags[F_CTX_BITS], st.offset[k], width)
    softmax_offset_into(st.a[k], st.w[:, :width], st.offset[k], st.pi[k, :width])
    return width


@kernel
def learn_step(st, hyper, flags, symbol):
    """Learn ``symbol`` after ``predict_step``: writing step, new code if needed, window, advance."""
    K = flags[F_WINDOW]
    cap = flags[F_CAP]
    N1 = st.inputs.shape[0]
    k = st.counts[WINDOW_POS]
    width = st.counts[ACTIVE] + 1
    a_t = st.a[k]
    pi_t = st.pi[k]
    code = st.code_of[symbol]
    target = code
    writing_update(st, hyper, a_t, pi_t, target, 1 if st.counts[ACTIVE] == cap else 0, width)
    if code == 0:
        code = activate_symbol(st, hyper, flags, symbol)
        width += 1
    if st.ctx_kind.shape[0] > 0:
        clear_features(st)
        observe(st, symbol, flags[F_LIMIT], flags[F_MATCH_MIN])
    st.x[k] = code
    st.targets[k] = target
    st.counts[SYMBOLS] += 1
    if k == K:
        if N1 > 1:  # without recurrent units there are no transitions to learn
            window_update(st, hyper, flags, width)
        for i in range(N1):
            st.V[0, i] = st.V[K, i]
            st.a[0, i] = st.a[K, i]
        for y in range(width):
            st.pi[0, y] = st.pi[K, y]
            st.offset[0, y] = st.offset[K, y]
        st.x[0] = st.x[K]
        st.targets[0] = st.targets[K]
        k = 0
        # retire the escape between windows, never inside one: a window that scored an
        # output on the escape must still see its probability
        if st.counts[ACTIVE] == cap and st.w[0, 0] != RETIRED_ESCAPE_BIAS:
            for i in range(N1):
                st.w[i, 0] = 0.0
            st.w[0, 0] = RETIRED_ESCAPE_BIAS
    empty = st.tau[0, :0, 0:0]
    evolve_into(st.V[k], st.a[k], code, st.tau, empty, st.inputs, hyper[H_LEAK], True, flags[F_ACT],
                st.V[k + 1], st.a[k + 1])
    st.counts[WINDOW_POS] = k + 1


@kernel
def predict_into(st, flags, out):
    """The distribution of the next symbol over the active codes (escape at 0), without learning."""
    k = st.counts[WINDOW_POS]
    width = st.counts[ACTIVE] + 1
    if st.ctx_kind.shape[0] > 0:
        features(st, flags[F_CAP], flags[F_CTX_BITS], st.offset[k], width)
        clear_features(st)
    softmax_offset_into(st.a[k], st.w[:, :width], st.offset[k], out[:width])
    return width
