"""The lifelong online learner (``seqd.core.online``) against independent references.

* the discounted metric blocks (Sherman-Morrison inverse and quasi-diagonal
  entries) against dense discounted sums built here (seed 004 §1.3);
* the block step against ``P g`` and the quasi-diagonal reduction of eqs. 34-35
  (``tests/naive.py``);
* the truncated-BPTT window gradient and metric contributions against the
  batch kernels (``forward``, ``backward``, ``accumulate_transition``) run over
  the same window (seed 000 §2, eqs. 22-28);
* constant memory, snapshot and configuration validation, the open
  alphabet's code lengths, and that learning happens (determinism, exact
  snapshots and bad input for every configuration: ``tests/test_contract.py``).

Problems are tiny (a few units, a few symbols, a few thousand steps).
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import struct
import zlib

import numpy as np
import pytest

import naive
from seqd.core.kernels.backward import RBPM, RUOP, Backprop, Scored, backward
from seqd.core.kernels.forward import allocate, evolve_into, forward
from seqd.core.kernels.network import Network
from seqd.core.kernels.transition import TransitionSums, accumulate_transition
from seqd.core.online import OnlineConfig, OnlineLearner
from seqd.core.kit import memory as tables
from seqd.core.online import snapshot
from seqd.core.online.sources import POS
from seqd.core.online.alphabet import RETIRED_ESCAPE_BIAS, activate_symbol
from seqd.core.online.config import F, H
from seqd.core.online.credit import TINY_SCALE, advance_credit
from seqd.core.kernels.metric_blocks import block_step, contribution_and_step, metric_contribution
from seqd.core.online.state import ACTIVE, WINDOW_POS, OnlineState, new_state
from seqd.core.online.window import window_gradient

REL = 1e-10


def close(actual, expected, rel=REL):
    """Entrywise agreement relative to the scale of ``expected``."""
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=rel, atol=rel * scale)


def rel_err(actual, expected):
    return float(np.linalg.norm(actual - expected) / np.linalg.norm(expected))


# -- 1. discounted metric blocks ------------------------------------------------------------

D_SM, LAM_SM, GAMMA_SM, STEPS_SM = 4, 0.5, 1.0 / 64, 3000
CHECKPOINTS = (1, 2, 5, 50, 300, 1000, 2000, STEPS_SM)


def _contributions(seed, steps=STEPS_SM, D=D_SM):
    """Random u and non-negative weights (a few exact zeros, a few large ones)."""
    rng = np.random.default_rng(seed)
    us = rng.standard_normal((steps, D))
    weights = rng.exponential(size=steps)
    weights[rng.random(steps) < 0.05] = 0.0
    weights[rng.random(steps) < 0.02] *= 50.0
    return us, weights


def _dense_full_metric(us, weights, D, lam, gamma, upto):
    """M_0 = lam I; contribution n: M <- (1-gamma) M + w u u^T + D gamma lam e_k e_k^T, k = n mod D."""
    M = lam * np.eye(D)
    for n in range(upto):
        M = (1.0 - gamma) * M + weights[n] * np.outer(us[n], us[n])
        M[n % D, n % D] += D * gamma * lam
    return M


@pytest.mark.parametrize("seed", [0, 1])
def test_sherman_morrison_inverse_matches_dense_inverse(seed):
    D, lam, gamma = D_SM, LAM_SM, GAMMA_SM
    us, weights = _contributions(seed)
    P = np.eye(D) / lam
    work = np.zeros(2 * D)
    M = lam * np.eye(D)
    errors = {}
    for n in range(STEPS_SM):
        metric_contribution(P, us[n].copy(), weights[n], (gamma, lam), n, False, work)
        M = (1.0 - gamma) * M + weights[n] * np.outer(us[n], us[n])
        M[n % D, n % D] += D * gamma * lam
        if n + 1 in CHECKPOINTS:
            errors[n + 1] = rel_err(P, np.linalg.inv(M))
    # the incremental dense M is the same as the one written out in _dense_full_metric
    close(M, _dense_full_metric(us, weights, D, lam, gamma, STEPS_SM), rel=1e-12)
    bad = {n: e for n, e in errors.items() if not e < 1e-8}
    assert not bad, f"P drifts away from inv(M): relative error by contribution count {errors}"


@pytest.mark.parametrize("seed", [0, 1])
def test_sherman_morrison_inverse_stays_exactly_symmetric(seed):
    D, lam, gamma = D_SM, LAM_SM, GAMMA_SM
    us, weights = _contributions(seed)
    P = np.eye(D) / lam
    work = np.zeros(2 * D)
    first_bad = None
    for n in range(STEPS_SM):
        metric_contribution(P, us[n].copy(), weights[n], (gamma, lam), n, False, work)
        if first_bad is None and not np.array_equal(P, P.T):
            first_bad = n
    assert first_bad is None, (
        f"P lost exact symmetry at contribution {first_bad}; after {STEPS_SM} contributions "
        f"max |P - P^T| = {np.abs(P - P.T).max():.3g} (max |P| = {np.abs(P).max():.3g})")


def test_sherman_morrison_single_contribution_is_exact():
    """One contribution: the inverse of (1-gamma) lam I + w u u^T + D gamma lam e_0 e_0^T."""
    D, lam, gamma = 3, 2.0, 0.25
    u = np.array([0.3, -1.2, 0.7])
    P = np.eye(D) / lam
    metric_contribution(P, u.copy(), 1.7, (gamma, lam), 0, False, np.zeros(2 * D))
    M = (1 - gamma) * lam * np.eye(D) + 1.7 * np.outer(u, u)
    M[0, 0] += D * gamma * lam
    close(P, np.linalg.inv(M), rel=1e-13)
    # `updates` picks the coordinate that receives the prior
    P = np.eye(D) / lam
    metric_contribution(P, u.copy(), 1.7, (gamma, lam), 5, False, np.zeros(2 * D))
    M = (1 - gamma) * lam * np.eye(D) + 1.7 * np.outer(u, u)
    M[5 % D, 5 % D] += D * gamma * lam
    close(P, np.linalg.inv(M), rel=1e-13)


@pytest.mark.parametrize("D", [1, 2, 4, 13])
def test_the_metric_blocks_three_sweeps_give_the_bits_of_the_steps_one_after_the_other(D):
    """The kernel fuses the scaling, both rank-one updates and the step into three sweeps of P: the bits must
    be those of the separate steps (naive.metric_update_in_steps), which the coder's replay depends on."""
    rng = np.random.default_rng(D)
    A = rng.normal(size=(D, D))
    P0 = np.linalg.inv(A @ A.T + 0.3 * np.eye(D))
    P0 = np.triu(P0) + np.triu(P0, 1).T  # exactly symmetric, as the kernels keep it
    for n in range(3 * D):
        u = rng.normal(size=D) * (rng.uniform(size=D) < 0.6)  # some sources silent, as in the byte model
        grad = rng.normal(size=D)
        weight, discount, prior = rng.uniform(0.01, 0.25), 2.0 ** -rng.integers(4, 13), rng.uniform(0.5, 20.0)
        want = P0.copy()
        want_step = naive.metric_update_in_steps(want, u, weight, discount, prior, n, grad)
        got = P0.copy()
        metric_contribution(got, u.copy(), weight, (discount, prior), n, False, np.zeros(2 * D))
        assert np.array_equal(got, want), f"metric_contribution, contribution {n}"
        got, out = P0.copy(), np.zeros(D)
        contribution_and_step(got, u.copy(), weight, (discount, prior), n, grad, out, np.zeros(2 * D))
        assert np.array_equal(got, want) and np.array_equal(out, want_step), f"contribution_and_step, {n}"
        P0 = want


def _qd_entries(M):
    """The entries a quasi-diagonal block stores: M00, M0k (k >= 1), Mkk (k >= 1)."""
    return np.concatenate([M[0, :], np.diag(M)[1:]])


@pytest.mark.parametrize("seed", [0, 1])
def test_quasi_diagonal_metric_matches_dense_discounted_sum(seed):
    """Quasi-diagonal blocks hold M00, M0k, Mkk of M <- (1-gamma) M + w u u^T + gamma lam I."""
    D, lam, gamma = D_SM, LAM_SM, GAMMA_SM
    us, weights = _contributions(seed)
    block = lam * np.eye(D)  # as activate_symbol initialises a quasi-diagonal block
    work = np.zeros(2 * D)
    M = lam * np.eye(D)
    for n in range(STEPS_SM):
        metric_contribution(block, us[n].copy(), weights[n], (gamma, lam), n, True, work)
        M = (1.0 - gamma) * M + weights[n] * np.outer(us[n], us[n]) + gamma * lam * np.eye(D)
        if n + 1 in CHECKPOINTS:
            close(_qd_entries(block), _qd_entries(M), rel=1e-12)
    # the (k, 0) entries are not stored
    assert np.all(block[1:, 0] == 0.0)
    # off-diagonal (k, l), k, l >= 1, k != l, are never touched
    off = ~naive.quasi_diagonal_mask(D)
    assert np.all(block[off] == 0.0)



def test_learner_full_metric_blocks_stay_symmetric_positive_definite():
    """End to end: after thousands of contributions per block, the stored inverse metrics are still SPD."""
    cfg = OnlineConfig(units=4, degree=2, alphabet_cap=2, window=4, metric_discount=1.0 / 64)
    learner = OnlineLearner(cfg)
    learner.learn(np.random.default_rng(0).integers(0, 2, size=8000))
    assert learner.state.block_updates[1:3, 1:].min() > 3000
    for code in (1, 2):
        for j in range(1, cfg.units + 1):
            P = learner.state.metric[code, j]
            assert np.array_equal(P, P.T), f"block ({code}, {j}): max |P - P^T| = {np.abs(P - P.T).max():.3g}"
            assert np.linalg.eigvalsh(P).min() > 0.0
            # and bounded by the prior: M >= (D gamma lam) e_k e_k^T cycles keep P finite and moderate
            assert np.abs(P).max() < 1e3, f"block ({code}, {j}): max |P| = {np.abs(P).max():.3g}"


# -- 2. block step ---------------------------------------------------------------------------


def _spd(rng, D):
    X = rng.standard_normal((D + 3, D))
    return X.T @ X + 0.1 * np.eye(D)


@pytest.mark.parametrize("seed", range(3))
def test_block_step_full_is_P_g(seed):
    rng = np.random.default_rng(seed)
    D = 4
    P = _spd(rng, D)
    g = rng.standard_normal(D)
    out = np.zeros(D)
    block_step(P, g, False, out)
    close(out, P @ g, rel=1e-13)


@pytest.mark.parametrize("seed", range(3))
def test_block_step_quasi_diagonal_is_eqs_34_35(seed):
    rng = np.random.default_rng(seed)
    D = 4
    M = _spd(rng, D)
    g = rng.standard_normal(D)
    out = np.zeros(D)
    block_step(M.copy(), g, True, out)
    close(out, naive.quasi_diagonal_inverse(g, M, 0.0), rel=1e-12)
    # only M00, M0k, Mkk are read: the stored layout (upper row + diagonal) gives the same step
    stored = np.where(np.triu(naive.quasi_diagonal_mask(D)), M, 0.0)
    out2 = np.zeros(D)
    block_step(stored, g, True, out2)
    assert np.array_equal(out, out2)
    # and agrees with the batch kernel's reduction (tests/naive.py's twin of it)
    G = g[None, None, :].repeat(2, axis=1)
    Mb = M[None, None].repeat(2, axis=1)
    out_b, _ = naive.solve_quasi_diagonal(G, Mb, np.zeros((0, 2)), np.zeros((0, 2)), 0.0, True)
    close(out, out_b[0, 1], rel=1e-12)


# -- 3. window gradient == batch gradient ----------------------------------------------------

K_WIN = 7
SYMBOLS_WIN = (3, 0, 5, 1)  # activated in this order: internal codes 1..4


def _act(v, activation):
    return np.tanh(v) if activation == "tanh" else 1.0 / (1.0 + np.exp(-v))


def _window_problem(seed, method, model="glnn", activation="tanh", escape=False, prior=True, credit_horizon=0):
    """An OnlineState with a filled window of K+1 read codes, perturbed off its initial point.

    The initial transition weights, as the symbols joined, are ``st.saved_tau`` (a work array, written only by
    a tried step)."""
    cfg = OnlineConfig(units=5, degree=3, alphabet_cap=6, window=K_WIN, method=method, model=model,
                       activation=activation, metric_discount=1.0 / 8, metric_prior=0.5, seed=seed,
                       transition_prior=prior, credit_horizon=credit_horizon)
    st = new_state(cfg)
    hyper, flags = cfg.hyper(), cfg.flags()
    codes = [activate_symbol(st, hyper, flags, s) for s in SYMBOLS_WIN]
    assert codes == list(range(1, len(SYMBOLS_WIN) + 1))
    st.saved_tau[...] = st.tau
    width = len(codes) + 1
    N1, D = st.inputs.shape
    rng = np.random.default_rng(100 + seed)
    st.w[:, :width] += 0.3 * rng.standard_normal((N1, width))
    st.tau[1:width, 1:, :] += 0.3 * rng.standard_normal((width - 1, N1 - 1, D))
    K = K_WIN
    x = rng.integers(1, width, size=K + 1)
    x[:3] = [1, 2, 1]  # some code read twice, so a block gets several contributions
    targets = x.copy()
    if escape:  # output 4 scores a first occurrence on the escape code while its transition reads the symbol
        targets[4] = 0
    st.x[:] = x
    st.targets[:] = targets
    st.V[0, 1:] = 0.7 * rng.standard_normal(N1 - 1)
    st.V[0, 0] = 0.0
    st.a[0] = _act(st.V[0], activation)
    st.a[0, 0] = 1.0
    net = Network(st.inputs, st.tau, np.zeros((0, 0)), hyper[H.leak], True, flags[F.activation_code], st.numerics)
    for k in range(K + 1):
        evolve_into(net, st.V[k], st.a[k], st.x[k], st.V[k + 1], st.a[k + 1])
    return cfg, st, hyper, flags, width


def _batch_window(cfg, st, hyper, flags, width):
    """forward / backward / accumulate_transition over the K+1 transitions of the window."""
    K = cfg.window
    N1, D = st.inputs.shape
    x = st.x.copy()
    targets = st.targets.copy()
    w = np.ascontiguousarray(st.w[:, :width])
    V, a, pi = allocate(K + 1, N1 - 1, width)
    net = Network(st.inputs, st.tau, np.zeros((1, N1)), hyper[H.leak], True, flags[F.activation_code], st.numerics)
    forward(net, x, np.ones(K + 1), w, st.V[0].copy(), V, a, pi)
    chi = np.ones(K + 1)
    chi[0] = 0.0  # output 0 comes before the window's transitions
    B = np.zeros((K + 2, N1))
    m = np.zeros((K + 2, N1))
    backward(net, Scored(x, targets, chi), w, a, pi, flags[F.modulus], Backprop(B, m), np.zeros((3, N1)))
    S = st.tau.shape[0]
    G = np.zeros((S, N1, D))
    M = np.zeros((S, N1, D, D))
    accumulate_transition(net, x, a, Backprop(B, m), False, TransitionSums(G, np.zeros((0, N1)), M, np.zeros((0, N1))))
    loglik = sum(math.log(pi[k, targets[k]]) for k in range(1, K + 1))
    return V, a, pi, B, m, G, loglik


WINDOW_CASES = [
    ("glnn", "tanh"),
    ("glnn", "logistic"),
    ("gnn", "tanh"),
]


def _prior_gradient(cfg, st, tau0):
    """The transition prior's part of the window's gradient, from the definition: each contribution (a
    transition of the window reading block (y, j)) renews gamma lambda of the prior (lambda / 2)|tau - tau0|^2,
    whose gradient it adds."""
    out = np.zeros_like(st.tau)
    if not cfg.transition_prior:
        return out
    for k in range(cfg.window):
        y = st.x[k]
        out[y, 1:] -= cfg.metric_discount * cfg.metric_prior * (st.tau[y, 1:] - tau0[y, 1:])
    return out


@pytest.mark.parametrize("model,activation", WINDOW_CASES)
@pytest.mark.parametrize("method", ["rbpm", "ruop", "qdrbpm"])
@pytest.mark.parametrize("escape", [False, True], ids=["plain", "escape-target"])
@pytest.mark.parametrize("prior", [True, False], ids=["prior", "damping-only"])
def test_window_gradient_equals_batch_gradient(model, activation, method, escape, prior):
    cfg, st, hyper, flags, width = _window_problem(1, method, model, activation, escape, prior)
    tau0 = st.saved_tau.copy()
    V, a, pi, B, m, G, loglik = _batch_window(cfg, st, hyper, flags, width)
    G = G + _prior_gradient(cfg, st, tau0)
    assert prior == np.any(_prior_gradient(cfg, st, tau0) != 0.0)
    K = cfg.window
    close(st.V, V)  # the window's states are the batch forward pass's
    close(st.a, a)
    assert np.all(st.G == 0.0)
    before, n_touched = window_gradient(st, hyper, flags, width)
    assert before == pytest.approx(loglik, rel=REL)
    close(st.pi[1:K + 1, :width], pi[1:K + 1])
    close(st.B[1:K + 2], B[1:K + 2])
    close(st.m[1:K + 2], m[1:K + 2])
    assert np.all(B[K + 1] == 0.0)
    close(st.G, G)
    assert np.any(G != 0.0)
    # transition K (reading x[K]) sees B^{K+1} = 0: it contributes nothing in batch either
    G_last = np.zeros_like(G)
    N1 = st.inputs.shape[0]
    net = Network(st.inputs, st.tau, np.zeros((1, N1)), hyper[H.leak], True, flags[F.activation_code], st.numerics)
    accumulate_transition(net, st.x[K:K + 1].copy(), a[K:K + 2].copy(), Backprop(B[K:K + 2].copy(), m[K:K + 2].copy()),
                          False, TransitionSums(G_last, np.zeros((0, N1)), np.zeros_like(st.metric), np.zeros((0, N1))))
    assert np.all(G_last == 0.0)
    # distinct codes read by transitions 0..K-1, in order of first appearance
    expected_touched = list(dict.fromkeys(int(c) for c in st.x[:K]))
    assert n_touched == len(expected_touched)
    assert list(st.touched[:n_touched]) == expected_touched
    # every read block counted its contributions
    for c in range(width):
        assert np.all(st.block_updates[c, 1:] == np.count_nonzero(st.x[:K] == c))


def _closed_window_loglik(st, cfg, tau, closed_from):
    """sum_k log pi_k(target_k) over the window's outputs 1..K from its first state, in NumPy: the states by
    eq. (13) with transition weights ``tau``, each output a softmax over the active codes (eq. 6) that leaves
    the escape out from output ``closed_from`` on (the alphabet filled inside the window)."""
    width = int(st.counts[ACTIVE]) + 1
    w = st.w[:, :width]
    V, a = st.V[0].copy(), st.a[0].copy()
    total = 0.0
    for k in range(cfg.window + 1):
        if k >= 1:
            logits = a @ w
            codes = np.arange(1 if k >= closed_from else 0, width)
            pi = naive.softmax(logits[codes])
            total += math.log(pi[list(codes).index(st.targets[k])])
        V, a = naive.one_step(V, a, st.x[k], tau, None, st.inputs, cfg.leak, True, cfg.activation)
    return total


@pytest.mark.parametrize("method", ["rbpm", "qdrbpm"])
def test_a_window_in_which_the_alphabet_fills_learns_the_predictions_it_scored(method):
    """When the alphabet fills inside a window, its later outputs were predicted without the escape; the
    window's gradient is that of those predictions' log-likelihood (central finite differences of a NumPy
    forward pass), and the predictions it recomputes are theirs."""
    closed_from = 3
    cfg, st, hyper, flags, width = _window_problem(3, method, prior=False)
    cfg = dataclasses.replace(cfg, alphabet_cap=width - 1)  # every symbol is active: the alphabet is full
    flags = cfg.flags()
    st.offset[closed_from:, 0] = RETIRED_ESCAPE_BIAS  # what predict_step leaves for outputs once it is full
    tau = st.tau.copy()
    before, _ = window_gradient(st, hyper, flags, width)
    assert before == pytest.approx(_closed_window_loglik(st, cfg, tau, closed_from), rel=1e-12)
    assert np.all(st.pi[closed_from:cfg.window + 1, 0] == 0.0) and np.all(st.pi[1:closed_from, 0] > 0.0)
    h = 1e-6
    checked = 0
    for code in range(1, width):
        for j in range(1, st.inputs.shape[0]):
            for q in range(st.inputs.shape[1]):
                up, down = tau.copy(), tau.copy()
                up[code, j, q] += h
                down[code, j, q] -= h
                fd = (_closed_window_loglik(st, cfg, up, closed_from)
                      - _closed_window_loglik(st, cfg, down, closed_from)) / (2 * h)
                assert st.G[code, j, q] == pytest.approx(fd, rel=1e-5, abs=1e-7), (code, j, q)
                checked += st.G[code, j, q] != 0.0
    assert checked > 10


def _dense_window_metric(cfg, st_x, a, m, inputs, code, j, quasi_diagonal, first=None):
    """The discounted metric of block (code, j) after the window's contributions, from the prior; ``first``,
    (u, modulus), is a contribution before them (the credit beyond the window's)."""
    D = inputs.shape[1]
    lam, gamma = cfg.metric_prior, cfg.metric_discount
    M = lam * np.eye(D)
    n = 0
    for k in range(-1, cfg.window):
        if k < 0:
            if first is None:
                continue
            u, weight = first
        elif st_x[k] != code:
            continue
        else:
            u, weight = a[k, inputs[j]], m[k + 1, j]
        M = (1.0 - gamma) * M + weight * np.outer(u, u)
        if quasi_diagonal:
            M += gamma * lam * np.eye(D)
        else:
            M[n % D, n % D] += D * gamma * lam
        n += 1
    return M, n


@pytest.mark.parametrize("method", ["qdrbpm", "qdruop", "rbpm", "ruop"])
@pytest.mark.parametrize("escape", [False, True], ids=["plain", "escape-target"])
def test_window_metric_contributions_match_dense_discounted_sums(method, escape):
    cfg, st, hyper, flags, width = _window_problem(2, method, escape=escape)
    assert cfg.modulus == (RUOP if method.endswith("ruop") else RBPM)
    _, a, _, _, m, _, _ = _batch_window(cfg, st, hyper, flags, width)
    window_gradient(st, hyper, flags, width)
    N1 = st.inputs.shape[0]
    contributed = 0
    for code in range(1, width):
        for j in range(1, N1):
            M, n = _dense_window_metric(cfg, st.x, a, m, st.inputs, code, j, cfg.quasi_diagonal)
            block = st.metric[code, j]
            if cfg.quasi_diagonal:
                close(_qd_entries(block), _qd_entries(M), rel=1e-12)
            else:
                close(block, np.linalg.inv(M), rel=1e-10)
            contributed += n
    assert contributed == cfg.window * (N1 - 1)
    # the moduli are not trivially zero (else the comparison would only test the prior)
    assert np.max(m[1:cfg.window + 1]) > 1e-3


# -- 3b. credit beyond the window ------------------------------------------------------------


def _credit_problem(seed, degree, horizon, past_windows, self_loops, activation="tanh", prior=True):
    """A state driven by hand through ``past_windows`` windows of K_WIN transitions, its weights held, the
    credit advanced after each as ``window_update`` does, then filled with one more window (as
    ``_window_problem``).  ``self_loops(rng, shape)`` draws the self-loop weights tau[y, j, 1].

    Returns (cfg, st, hyper, flags, width, X, v0, tau0): X every code read, v0 the first potentials."""
    cfg = OnlineConfig(units=5, degree=degree, alphabet_cap=6, window=K_WIN, activation=activation,
                       metric_discount=1.0 / 8, metric_prior=0.5, seed=seed, credit_horizon=horizon,
                       transition_prior=prior)
    st = new_state(cfg)
    hyper, flags = cfg.hyper(), cfg.flags()
    codes = [activate_symbol(st, hyper, flags, s) for s in SYMBOLS_WIN]
    tau0 = st.tau.copy()
    width = len(codes) + 1
    N1, D = st.inputs.shape
    rng = np.random.default_rng(200 + seed)
    st.w[:, :width] += 0.3 * rng.standard_normal((N1, width))
    st.tau[1:width, 1:, :] += 0.3 * rng.standard_normal((width - 1, N1 - 1, D))
    st.tau[1:width, 1:, 1] = self_loops(rng, (width - 1, N1 - 1))
    K = K_WIN
    X = rng.integers(1, width, size=past_windows * K + K + 1)
    X[past_windows * K:past_windows * K + width - 1] = codes  # the last window reads every code
    v0 = 0.7 * rng.standard_normal(N1)
    v0[0] = 0.0
    st.V[0] = v0
    st.a[0] = _act(v0, activation)
    st.a[0, 0] = 1.0
    net = Network(st.inputs, st.tau, np.zeros((0, 0)), hyper[H.leak], True, flags[F.activation_code], st.numerics)
    for p in range(past_windows + 1):
        n = K + 1 if p == past_windows else K
        st.x[:n] = X[p * K:p * K + n]
        st.targets[:n] = st.x[:n]
        for k in range(n):
            evolve_into(net, st.V[k], st.a[k], st.x[k], st.V[k + 1], st.a[k + 1])
        if p < past_windows:
            if horizon:
                advance_credit(st, hyper, flags, width)
            st.V[0] = st.V[K]
            st.a[0] = st.a[K]
    return cfg, st, hyper, flags, width, X, v0, tau0


def _whole_sequence(cfg, st, hyper, flags, width, X, v0):
    """forward / backward / accumulate_transition over every transition of X, only the last window's outputs
    scored: the exact gradient of the window's log-likelihood through the whole past, with (V, B, m, G)."""
    K, T = cfg.window, len(X)
    N1, D = st.inputs.shape
    w = np.ascontiguousarray(st.w[:, :width])
    V, a, pi = allocate(T, N1 - 1, width)
    net = Network(st.inputs, st.tau, np.zeros((1, N1)), hyper[H.leak], True, flags[F.activation_code], st.numerics)
    forward(net, X, np.ones(T), w, v0, V, a, pi)
    chi = np.zeros(T)
    chi[T - K:] = 1.0  # outputs 1..K of the last window (its row 0 is the previous window's last output)
    B, m = np.zeros((T + 1, N1)), np.zeros((T + 1, N1))
    backward(net, Scored(X, X.copy(), chi), w, a, pi, flags[F.modulus], Backprop(B, m), np.zeros((3, N1)))
    G = np.zeros((st.tau.shape[0], N1, D))
    accumulate_transition(net, X, a, Backprop(B, m), False,
                          TransitionSums(G, np.zeros((0, N1)), np.zeros((st.tau.shape[0], N1, D, D)), np.zeros((0, N1))))
    return V, B, m, G


def _stable_self_loops(rng, shape):
    """Self-loops whose factor 1 + tau s' stays in [0, 1]: the clip never acts."""
    return -rng.uniform(0.1, 1.0, shape)


def _credit_pull(cfg, st, tau0, touched):
    """The prior's pull on the touched blocks, one contribution per transition reading them and one for the credit."""
    out = np.zeros_like(st.tau)
    for y in touched:
        n = np.count_nonzero(st.x[:cfg.window] == y) + 1
        out[y, 1:] -= n * cfg.metric_discount * cfg.metric_prior * (st.tau[y, 1:] - tau0[y, 1:])
    return out


@pytest.mark.parametrize("activation", ["tanh", "logistic"])
def test_credit_beyond_the_window_is_the_exact_gradient_through_the_whole_past_on_self_loops(activation):
    """On a graph of self-loops alone (degree 1) the diagonal sensitivities are exact: with a horizon that
    never decays, the window's gradient (its BPTT, plus B^0 times the sensitivities) is the gradient of its
    outputs' log-likelihood through every transition since the stream began, as batch BPTT computes it."""
    cfg, st, hyper, flags, width, X, v0, tau0 = _credit_problem(3, 1, 60, 5, _stable_self_loops, activation)
    assert cfg.credit_decay == 1.0 and st.inputs.shape[1] == 2
    V, B, m, G_exact = _whole_sequence(cfg, st, hyper, flags, width, X, v0)
    P = len(X) - cfg.window - 1  # transitions before the window
    close(st.V[:cfg.window + 2], V[P:])
    _, n_touched = window_gradient(st, hyper, flags, width)
    touched = list(st.touched[:n_touched])
    assert sorted(touched) == list(range(1, width))
    close(st.B[0], B[P])  # eq. 22 one step further back
    close(st.m[0], m[P])
    close(st.G - _credit_pull(cfg, st, tau0, touched), G_exact)
    # without the credit the window would have only part of it
    cfg0, st0, hyper0, flags0, *_ = _credit_problem(3, 1, 0, 5, _stable_self_loops, activation)
    window_gradient(st0, hyper0, flags0, width)
    assert rel_err(st0.G - _prior_gradient(cfg, st0, tau0), G_exact) > 0.05


def test_forward_sensitivities_follow_their_rule_with_the_clip_and_the_scale_folded():
    """Degree 3 (the diagonal rule is an approximation there), self-loops that would amplify (the clip acts),
    a decay of 1/2 over 280 transitions (each unit's scale is folded into its values at least once)."""
    def amplifying(rng, shape):
        return rng.uniform(-1.0, 1.5, shape)

    cfg, st, hyper, flags, width, X, v0, _ = _credit_problem(4, 3, 1, 40, amplifying)
    P = 40 * cfg.window
    assert cfg.credit_decay == 0.5 and 0.5 ** P < TINY_SCALE
    V, *_ = _whole_sequence(cfg, st, hyper, flags, width, X, v0)
    factors = 1.0 + st.tau[X[:P], :, 1] * naive.s_prime(V[np.arange(P)], "tanh")
    assert factors[:, 1:].max() > 1.0  # the clip acted
    e = naive.forward_sensitivities(X[:P], V, st.tau, st.inputs, 1.0, "tanh", cfg.credit_decay,
                                    np.zeros_like(st.tau))
    close(st.credit * st.credit_scale[None, :, None], e, rel=1e-12)
    assert np.all(np.abs(st.credit_scale[1:]) >= TINY_SCALE) and np.abs(e[1:width, 1:]).max() > 0.1


def test_credit_gradient_and_metric_term_of_a_window():
    """Degree 3: each read block (y, j) gets B_j^0 e_j[y] and the metric contribution m_j^0 e e^T before the
    window's own, and the prior's pull counts the credit's contribution."""
    cfg, st, hyper, flags, width, X, v0, tau0 = _credit_problem(5, 3, 4, 3, _stable_self_loops)
    P = len(X) - cfg.window - 1
    V, _, _, _ = _whole_sequence(cfg, st, hyper, flags, width, X, v0)
    e = naive.forward_sensitivities(X[:P], V, st.tau, st.inputs, 1.0, "tanh", cfg.credit_decay, np.zeros_like(st.tau))
    # the window alone, as test_window_gradient_equals_batch_gradient computes it
    _, a, _, B, m, G_window, _ = _batch_window(cfg, st, hyper, flags, width)
    B0, m0 = np.zeros((2, st.B.shape[1])), np.zeros((2, st.B.shape[1]))
    B0[1], m0[1] = B[1], m[1]
    N1 = st.inputs.shape[0]
    net = Network(st.inputs, st.tau, np.zeros((1, N1)), hyper[H.leak], True, flags[F.activation_code], st.numerics)
    backward(net, Scored(st.x[:1].copy(), st.targets[:1].copy(), np.zeros(1)), np.ascontiguousarray(st.w[:, :width]),
             a[:2].copy(), np.zeros((1, width)), flags[F.modulus], Backprop(B0, m0), np.zeros((3, N1)))
    _, n_touched = window_gradient(st, hyper, flags, width)
    touched = list(st.touched[:n_touched])
    close(st.B[0], B0[0])
    expected = G_window + B0[0][None, :, None] * e + _credit_pull(cfg, st, tau0, touched)
    close(st.G, expected)
    assert np.abs(B0[0][None, :, None] * e).max() > 1e-3
    for y in touched:
        for j in range(1, N1):
            M, n = _dense_window_metric(cfg, st.x, a, m, st.inputs, y, j, False, first=(e[y, j], m0[0, j]))
            close(st.metric[y, j], np.linalg.inv(M), rel=1e-10)
            assert st.block_updates[y, j] == n


# -- 4. snapshots of context tables ---------------------------------------------------------
# (determinism across chunkings and exact snapshots of every configuration: tests/test_contract.py)


def test_context_tables_of_megabytes_are_mapped_on_huge_page_boundaries_and_restored_so():
    """The tables go to the kernel as candidates for transparent huge pages (a speed matter only): their
    values, their snapshots and what the learner does with them are those of ordinary arrays."""
    small = tables.table_array((10,), np.int64)
    assert small.shape == (10,) and not small.any()
    table = tables.table_array((3, 1 << 19), np.uint16)
    assert table.shape == (3, 1 << 19) and table.dtype == np.uint16 and not table.any()
    table[2, -1] = 7  # writable, to its last element
    huge_pages = hasattr(mmap, "MADV_HUGEPAGE")
    cfg = OnlineConfig.bytes_default()
    text = b"GET /index.html 200\nGET /about.html 404\n" * 40
    learner = OnlineLearner(cfg)
    learner.learn(text)
    restored = OnlineLearner.from_bytes(learner.to_bytes())
    for name in ("ctx_tag", "ctx_sym", "ctx_cnt", "hist", "match_table"):
        for state in (learner.state, restored.state):
            arr = getattr(state, name)
            assert arr.nbytes >= tables.HUGE_PAGE and arr.flags.writeable and arr.flags.c_contiguous
            if huge_pages:
                assert arr.ctypes.data % tables.HUGE_PAGE == 0, name
        assert np.array_equal(getattr(learner.state, name), getattr(restored.state, name))
    assert np.array_equal(restored.learn(text[:200]), learner.learn(text[:200]))


# -- 5. constant memory ----------------------------------------------------------------------


def test_snapshot_size_does_not_grow_with_the_stream():
    cfg = OnlineConfig(units=8, degree=3, alphabet_cap=16, window=6)
    rng = np.random.default_rng(3)
    x = np.concatenate([np.arange(16), rng.integers(0, 16, size=4984)])
    learner = OnlineLearner(cfg)
    learner.learn(x[:100])
    size_100 = len(learner.to_bytes())
    nbytes_100 = sum(arr.nbytes for arr in learner.state)
    learner.learn(x[100:])
    assert learner.stats["symbols"] == 5000
    assert len(learner.to_bytes()) == size_100
    assert sum(arr.nbytes for arr in learner.state) == nbytes_100


# -- 6. bad input ----------------------------------------------------------------------------


# (bad symbols given to learn: tests/test_contract.py)


def test_learn_one_rejects_bad_symbols():
    learner = OnlineLearner(OnlineConfig(units=4, alphabet_cap=16, window=3))
    with pytest.raises(ValueError, match="outside the alphabet"):
        learner.learn_one(16)
    with pytest.raises(ValueError, match="integers"):
        learner.learn_one(1.5)


def _trained_snapshot():
    learner = OnlineLearner(OnlineConfig(units=4, degree=2, alphabet_cap=8, window=3))
    learner.learn(np.arange(8).repeat(3))
    return learner


def _with_crc(payload: bytes) -> bytes:
    return payload + struct.pack("<I", zlib.crc32(payload))


def _snapshot_built_here(learner, version: int = snapshot.FORMAT_VERSION, without: tuple[str, ...] = (),
                         without_settings: tuple[str, ...] = ()) -> bytes:
    """``learner``'s snapshot built here from the format's description: the header (configuration, each
    array's name, dtype and shape, and from version 10 how much history it holds), each array's
    little-endian bytes in field order, a CRC-32 of all that.  From version 10 the history ring is stored
    as the symbols it holds, oldest first, and a table that grows as far as it has grown.  With
    ``without``/``without_settings``, as an older seqd wrote it: without arrays and settings it lacked."""
    import json
    config = {k: v for k, v in dataclasses.asdict(learner.config).items() if k not in without_settings}
    names = [name for name in learner.state._fields if name not in without]
    stored = {name: np.ascontiguousarray(getattr(learner.state, name)) for name in names}
    if version < 10 and "hist" in stored:  # the ring whole, as uint16 whatever the alphabet
        stored["hist"] = stored["hist"].astype(np.uint16)
    if version >= 10:
        st = learner.state
        t = int(st.ctx_int[POS]) if st.ctx_int.size else 0  # the stream position
        if st.hist.size:
            n = min(t, st.hist.size)
            stored["hist"] = np.array([st.hist[p % st.hist.size] for p in range(t - n, t)], st.hist.dtype)
        if st.grown.size:
            sizes = [1 << int(b) for b in st.grown[:, 0]]
            for name in ("ctx_tag", "ctx_sym", "ctx_cnt"):
                stored[name] = np.concatenate([getattr(st, name)[s, :sizes[s]] for s in range(st.ctx_tag.shape[0])])
            if st.match_table.size:
                stored["match_table"] = st.match_table[:sizes[-1]]
    meta = {"config": config, "arrays": [[name, a.dtype.str, list(a.shape)] for name, a in stored.items()]}
    if version >= 10:
        meta["history"] = {"held": len(stored["hist"]), "elsewhere": False}
    header = json.dumps(meta, sort_keys=True).encode()
    payload = snapshot._HEADER.pack(snapshot.FORMAT_MAGIC, version, len(header)) + header \
        + b"".join(a.astype(a.dtype.newbyteorder("<")).tobytes() for a in stored.values())
    return _with_crc(payload)


def test_snapshot_parts_are_the_format_built_independently_and_views_of_the_state():
    """The buffers a snapshot is written from, against the format built here from its description, and
    without copies."""
    learner = _trained_snapshot()
    parts = learner.snapshot_parts()
    assert b"".join(parts) == _snapshot_built_here(learner) == learner.to_bytes()
    if np.little_endian:  # the arrays are written from the state itself, not from a copy
        for part, arr in zip(parts[1:-1], learner.state):
            assert arr.nbytes == 0 or np.shares_memory(np.frombuffer(part, dtype=np.uint8), arr)


def test_a_snapshot_without_the_settings_of_seqd_0_11_is_a_learner_of_seqd_0_10_and_continues_exactly():
    """seqd 0.10 wrote no ``transition_prior`` nor ``writing_evidence_floor``: its learners had only the prior's
    mass and the clock's writing discount, and a snapshot it wrote restores as such
    (``OnlineConfig.from_settings``), not with today's defaults."""
    cfg = OnlineConfig(units=4, degree=2, alphabet_cap=8, window=3, metric_prior=1.0, transition_prior=False,
                       writing_evidence_floor=1.0, transition_rate=None, credit_horizon=0, close_escape=False)
    x = np.random.default_rng(3).integers(0, 8, 600)
    learner = OnlineLearner(cfg)
    learner.learn(x[:300])
    restored = OnlineLearner.from_bytes(_snapshot_built_here(
        learner, 8, snapshot.NEW_IN_9,
        without_settings=("transition_prior", "writing_evidence_floor", "credit_horizon", "close_escape")))
    assert restored.config == cfg
    assert np.array_equal(restored.learn(x[300:]), learner.learn(x[300:]))
    # and each of today's settings learns differently on the same symbols: neither is ignored
    for today in (dict(transition_prior=True), dict(writing_evidence_floor=0.25)):
        assert not np.array_equal(OnlineLearner(dataclasses.replace(cfg, **today)).learn(x),
                                  OnlineLearner(cfg).learn(x))


def test_a_snapshot_without_close_escape_is_a_learner_of_seqd_0_12_and_continues_exactly():
    """seqd 0.12 wrote no ``close_escape``: its learners kept the escape's share until the window that filled
    the alphabet ended, and a snapshot it wrote (taken inside that window) restores as such."""
    cfg = OnlineConfig(units=4, degree=2, alphabet_cap=8, window=16, close_escape=False)
    x = np.random.default_rng(5).integers(0, 8, 600)
    learner = OnlineLearner(cfg)
    learner.learn(x[:40])
    restored = OnlineLearner.from_bytes(_snapshot_built_here(learner, snapshot.FORMAT_VERSION, (), ("close_escape",)))
    assert restored.config == cfg
    assert np.array_equal(restored.learn(x[40:]), learner.learn(x[40:]))
    assert not np.array_equal(OnlineLearner(dataclasses.replace(cfg, close_escape=True)).learn(x),
                              OnlineLearner(cfg).learn(x))


def test_a_snapshot_whose_table_size_is_damaged_is_refused_before_its_tables_are_read():
    """A growing table's size (``grown``) says how much of each table a snapshot holds: a damaged one is
    refused as soon as it is read, before the checksum, not used to size a read (a MemoryError, found by the
    hostile-state suite)."""
    from seqd.core.kit.growth import BITS

    learner = OnlineLearner(OnlineConfig.bytes_default(context_bits=12, history_bits=12, match_bits=12))
    learner.learn(b"".join(b"%05d GET /item/%d 200\n" % (i, i % 5) for i in range(40)))
    parts = [bytes(p) for p in learner.snapshot_parts()]
    k = 1 + OnlineState._fields.index("grown")  # the arrays before it are stored whole, one part each
    grown = np.frombuffer(parts[k], dtype="<i8").reshape(-1, 2).copy()
    assert grown.shape == learner.state.grown.shape
    for row, bits in ((0, 1 << 40), (0, 1), (-1, 63)):
        damaged = grown.copy()
        damaged[row, BITS] = bits
        data = b"".join(parts[:k] + [damaged.astype("<i8").tobytes()] + parts[k + 1:])
        with pytest.raises(ValueError, match="table's size is out of range"):
            OnlineLearner.from_bytes(data)


def test_a_snapshot_without_context_step_floor_is_a_learner_of_seqd_0_18_and_continues_exactly():
    """seqd 0.18 wrote no ``context_step_floor``: every symbol its context units voted for stepped its context
    weights, and a byte-model snapshot it wrote restores as such, not with today's floor."""
    cfg = OnlineConfig.bytes_default(context_bits=10, history_bits=12, match_bits=10, context_step_floor=0.0)
    x = np.frombuffer(b"".join(b"%05d GET /item/%d 200 OK\n" % (i, i % 7) for i in range(120)), dtype=np.uint8)
    learner = OnlineLearner(cfg)
    learner.learn(x[:1500])
    restored = OnlineLearner.from_bytes(_snapshot_built_here(learner, snapshot.FORMAT_VERSION, (),
                                                             ("context_step_floor",)))
    assert restored.config == cfg
    assert np.array_equal(restored.learn(x[1500:]), learner.learn(x[1500:]))
    assert not np.array_equal(OnlineLearner(dataclasses.replace(cfg, context_step_floor=1e-5)).learn(x),
                              OnlineLearner(cfg).learn(x))


def test_a_snapshot_without_the_credit_beyond_the_window_is_a_learner_of_seqd_0_11_and_continues_exactly():
    """seqd 0.11 wrote no ``credit_horizon`` and no sensitivities (format 8): its learners credited the window
    alone, and a snapshot it wrote restores as such, not with today's default horizon; a format-8 snapshot
    that claims the credit is refused."""
    cfg = OnlineConfig(units=4, degree=2, alphabet_cap=8, window=3, credit_horizon=0, close_escape=False)
    x = np.random.default_rng(4).integers(0, 8, 600)
    learner = OnlineLearner(cfg)
    learner.learn(x[:300])
    old = _snapshot_built_here(learner, 8, snapshot.NEW_IN_9, ("credit_horizon", "close_escape"))
    restored = OnlineLearner.from_bytes(old)
    assert restored.config == cfg and restored.state.credit.size == 0
    assert np.array_equal(restored.learn(x[300:]), learner.learn(x[300:]))
    credited = OnlineLearner(dataclasses.replace(cfg, credit_horizon=10))
    credited.learn(x[:300])
    with pytest.raises(ValueError, match="cannot hold credit beyond the window"):
        OnlineLearner.from_bytes(_snapshot_built_here(credited, 8, snapshot.NEW_IN_9, ()))
    # the credit changes what is learned: the setting is not ignored
    assert not np.array_equal(OnlineLearner(dataclasses.replace(cfg, credit_horizon=10)).learn(x),
                              OnlineLearner(cfg).learn(x))


def test_a_snapshot_of_seqd_0_16_restores_its_byte_model_and_continues_exactly():
    """seqd 0.16 wrote format 9: the history ring whole, as uint16, and tables of their full size, with no
    ``table_growth`` setting.  Such a snapshot restores (its history as bytes), its learner has the tables
    it had, and it continues bit for bit; a format-9 snapshot that claims tables that grow is refused."""
    cfg = OnlineConfig.bytes_default(context_bits=10, history_bits=12, match_bits=10, table_growth=False)
    lines = b"".join(f"12:{i % 60:02d} node{i % 7} GET /item/{i * 31 % 977} 200\n".encode() for i in range(400))
    x = np.frombuffer(lines, np.uint8).astype(np.int64)
    learner = OnlineLearner(cfg)
    learner.learn(x[:6000])  # past the 4096 symbols of the ring: it has wrapped
    restored = OnlineLearner.from_bytes(_snapshot_built_here(learner, 9, snapshot.NEW_IN_10, ("table_growth",)))
    assert restored.config == cfg and restored.state.hist.dtype == np.uint8
    assert np.array_equal(restored.learn(x[6000:]), learner.learn(x[6000:]))
    grown = OnlineLearner(dataclasses.replace(cfg, table_growth=True))
    grown.learn(x[:100])
    with pytest.raises(ValueError, match="cannot hold tables that grow"):
        OnlineLearner.from_bytes(_snapshot_built_here(grown, 9, snapshot.NEW_IN_10, ()))


MIXER_SETTINGS = ("selected_weights", "selected_prior", "selected_step", "selected_rate", "selected_discount")


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6])
def test_an_older_snapshot_restores_without_what_it_did_not_have_and_continues_exactly(version):
    cfg = OnlineConfig(units=3, degree=2, context_orders=(1, 2, 3), word_context=True, match_min=4,
                       context_bits=10, history_bits=10, match_bits=10, selected_weights=version >= 3, credit_horizon=0,
                       close_escape=False)
    x = np.frombuffer(b"GET /index.html 200\nGET /login 302\nPOST /login 200\n" * 30, dtype=np.uint8)
    learner = OnlineLearner(cfg)
    learner.learn(x[:700])
    lacked = snapshot.NEW_IN_9 + snapshot.NEW_IN_8 + snapshot.NEW_IN_7 + (snapshot.NEW_IN_6 if version < 6 else ()) \
        + (snapshot.NEW_IN_5 if version < 5 else ()) + (snapshot.NEW_IN_4 if version < 4 else ()) \
        + (snapshot.NEW_IN_3 if version < 3 else ())
    old = _snapshot_built_here(learner, version, lacked, ("number_context", "probability_maps", "credit_horizon",
                                                          "close_escape")
                               + (("field_selected_weights",) if version < 6 else ())
                               + (("indirect_context",) if version < 5 else ())
                               + (("field_column_context",) if version < 4 else ()) + (MIXER_SETTINGS if version < 3 else ()))
    restored = OnlineLearner.from_bytes(old)
    assert restored.config == cfg and restored.state.fields.size == 0 and restored.state.followers.size == 0
    assert restored.state.fsel_w.size == 0 and restored.state.number_table.size == 0
    assert np.array_equal(restored.learn(x[700:]), learner.learn(x[700:]))
    # an older snapshot that claims what its version did not have is refused
    if version < 3:
        mixed = OnlineLearner(dataclasses.replace(cfg, selected_weights=True))
        with pytest.raises(ValueError, match="cannot hold a mixer"):
            OnlineLearner.from_bytes(_snapshot_built_here(mixed, version, lacked, ()))
    fielded = OnlineLearner(dataclasses.replace(cfg, field_column_context=True))
    if version < 5:
        with pytest.raises(ValueError, match="cannot hold a field column" if version < 4 else "field column of seqd 0.3"):
            OnlineLearner.from_bytes(_snapshot_built_here(fielded, version, lacked if version < 4 else
                                                          snapshot.NEW_IN_5 + snapshot.NEW_IN_6 + snapshot.NEW_IN_7, ()))
        indirect = OnlineLearner(dataclasses.replace(cfg, indirect_context=True))
        with pytest.raises(ValueError, match="cannot hold an indirect source"):
            OnlineLearner.from_bytes(_snapshot_built_here(indirect, version, lacked, ()))
    if 3 <= version < 6:
        both = OnlineLearner(dataclasses.replace(cfg, field_column_context=True, field_selected_weights=True))
        with pytest.raises(ValueError, match="cannot hold field-selected weights|field column"):
            OnlineLearner.from_bytes(_snapshot_built_here(both, version, lacked, ()))
    numbered = OnlineLearner(dataclasses.replace(cfg, number_context=True))
    with pytest.raises(ValueError, match="cannot hold a number source"):
        OnlineLearner.from_bytes(_snapshot_built_here(numbered, version, lacked, ()))


def test_from_bytes_rejects_damaged_snapshots():
    learner = _trained_snapshot()
    data = learner.to_bytes()
    OnlineLearner.from_bytes(data)  # the intact snapshot loads
    with pytest.raises(ValueError, match="truncated"):
        OnlineLearner.from_bytes(data[:10])
    with pytest.raises(ValueError, match="truncated"):
        OnlineLearner.from_bytes(b"")
    # cut short inside the arrays, with a valid checksum over what is left
    with pytest.raises(ValueError, match="truncated"):
        OnlineLearner.from_bytes(_with_crc(data[:-4][:-100]))
    # cut short, checksum not rebuilt
    with pytest.raises(ValueError, match="truncated|checksum"):
        OnlineLearner.from_bytes(data[:-100])
    with pytest.raises(ValueError, match="wrong magic"):
        OnlineLearner.from_bytes(b"NOTSEQD!" + data[8:])
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0x40
    with pytest.raises(ValueError, match="checksum"):
        OnlineLearner.from_bytes(bytes(flipped))
    last = bytearray(data)
    last[-1] ^= 0x01
    with pytest.raises(ValueError, match="checksum"):
        OnlineLearner.from_bytes(bytes(last))
    # a newer format version
    newer = bytearray(data[:-4])
    struct.pack_into("<I", newer, 8, snapshot.FORMAT_VERSION + 1)
    with pytest.raises(ValueError, match="newer"):
        OnlineLearner.from_bytes(_with_crc(bytes(newer)))


@pytest.mark.parametrize("name", ["w", "tau", "metric", "V", "reals"])
def test_from_bytes_rejects_non_finite_values(name):
    learner = _trained_snapshot()
    arr = getattr(learner.state, name)
    arr.reshape(-1)[arr.size // 2] = np.nan if name != "reals" else np.inf
    data = snapshot.to_bytes(learner.config, learner.state)  # a valid checksum over the NaN
    with pytest.raises(ValueError, match=f"non-finite value in '{name}'"):
        OnlineLearner.from_bytes(data)


@pytest.mark.parametrize("name", ["w", "hd", "G"])
def test_from_bytes_rejects_wrong_shapes(name):
    learner = _trained_snapshot()
    st = learner.state._replace(**{name: np.zeros((3, 3))})
    with pytest.raises(ValueError, match=f"'{name}' is float64"):
        OnlineLearner.from_bytes(snapshot.to_bytes(learner.config, st))


@pytest.mark.parametrize("corrupt", ["window_pos", "active", "code", "target", "graph"])
def test_from_bytes_rejects_indices_out_of_range(corrupt):
    """Indices the kernels trust without bounds checks are validated on restore."""
    learner = _trained_snapshot()
    st = OnlineState(*(np.array(a, copy=True) for a in learner.state))
    if corrupt == "window_pos":
        st.counts[WINDOW_POS] = 10**6
    elif corrupt == "active":
        st.counts[ACTIVE] = learner.config.alphabet_cap + 1
    elif corrupt == "code":
        st.code_of[np.flatnonzero(st.code_of)[0]] = 10**6
    elif corrupt == "target":
        st.targets[0] = 10**6
    else:
        st.inputs[1, 1] = 10**6
    with pytest.raises(ValueError, match="inconsistent"):
        OnlineLearner.from_bytes(snapshot.to_bytes(learner.config, st))


def test_filling_the_alphabet_mid_window_is_not_a_numerical_failure():
    learner = OnlineLearner(OnlineConfig(units=6, alphabet_cap=4, window=8))
    learner.learn([0, 1, 2, 3] * 50)
    assert learner.stats["nonfinite_windows"] == 0
    assert learner.predict_proba_one()[None] == 0.0


def test_a_rejected_window_leaves_the_weights_exactly_as_they_were():
    rng = np.random.default_rng(5)
    # steps four times the Newton step of the metric, so that some windows reject theirs
    learner = OnlineLearner(OnlineConfig(units=6, alphabet_cap=8, window=4, transition_rate=4.0,
                                         max_transition_rate=4.0))
    x = rng.integers(0, 8, 4000)
    rejected = 0
    for t in range(len(x)):
        before = learner.state.tau.copy()
        stats = learner.stats
        learner.learn(x[t:t + 1])
        if learner.stats["rejected_windows"] > stats["rejected_windows"]:
            rejected += 1
            assert np.array_equal(learner.state.tau, before)
    assert rejected > 0


@pytest.mark.parametrize("bad", [dict(input_scale=float("inf")), dict(transition_rate=float("nan")),
                                 dict(rate_shrink=0.0), dict(rate_growth=0.5), dict(transition_rate=5.0)])
def test_config_rejects_settings_that_would_ruin_the_learner(bad):
    with pytest.raises(ValueError):
        OnlineConfig(**bad)


@pytest.mark.parametrize("kwargs,message", [
    (dict(model="rnn"), "glnn"),
    (dict(model="lstm"), "glnn"),
    (dict(method="sgd"), "method"),
    (dict(method="qdh"), "method"),
    (dict(metric_discount=0.0), "metric_discount"),
    (dict(metric_discount=1.0), "metric_discount"),
    (dict(metric_discount=-0.1), "metric_discount"),
    (dict(metric_discount=1.5), "metric_discount"),
    (dict(writing_discount=0.0), "writing_discount"),
    (dict(writing_discount=1.0), "writing_discount"),
    (dict(activation="relu"), "activation"),
    (dict(window=0), "window"),
    (dict(alphabet_cap=0), "alphabet_cap"),
    (dict(units=4, degree=5), "degree"),
    (dict(metric_prior=0.0), "metric_prior"),
    (dict(credit_horizon=-1), "credit_horizon"),
    (dict(credit_horizon=61), "credit_horizon"),
])
def test_config_rejects_bad_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OnlineConfig(**kwargs)


# -- 7. open alphabet ------------------------------------------------------------------------


def test_first_symbol_costs_log2_cap():
    for cap in (2, 7, 256):
        learner = OnlineLearner(OnlineConfig(units=4, alphabet_cap=cap, window=3))
        assert learner.predict_one() is None
        assert learner.predict_proba_one() == {None: 1.0}
        close(learner.predict_proba(), np.full(cap, 1.0 / cap), rel=1e-15)
        bits = learner.learn([cap - 1])
        assert bits[0] == math.log2(cap)


@pytest.mark.parametrize("method", ["rbpm", "qdruop"])
def test_open_alphabet_code_lengths_and_predictions(method):
    cap = 10
    cfg = OnlineConfig(units=6, degree=3, alphabet_cap=cap, window=4, method=method)
    learner = OnlineLearner(cfg)
    rng = np.random.default_rng(5)
    # a few symbols first, new ones trickling in, then every symbol, then more learning
    x = list(rng.integers(0, 3, size=40)) + [7] + list(rng.integers(0, 4, size=30)) + list(range(cap)) \
        + list(rng.integers(0, cap, size=300))
    seen: list[int] = []
    for t, s in enumerate(int(v) for v in x):
        dist = learner.predict_proba_one()
        assert set(dist) == set(seen) | {None}
        assert sum(dist.values()) == pytest.approx(1.0, abs=1e-12)
        proba = learner.predict_proba()
        assert proba.shape == (cap,)
        assert np.all(proba >= 0.0)
        if len(seen) < cap:
            assert proba.sum() == pytest.approx(1.0, abs=1e-12)
            unseen = np.setdiff1d(np.arange(cap), seen)
            close(proba[unseen], np.full(len(unseen), dist[None] / (cap - len(seen))), rel=1e-12)
        for y in seen:
            assert proba[y] == dist[y]
        bits = learner.learn([s])[0]
        if s in seen:
            expected = -math.log2(dist[s])
        else:
            expected = -math.log2(dist[None]) + math.log2(cap - len(seen))
            seen.append(s)
        assert bits == pytest.approx(expected, rel=1e-12, abs=1e-12), f"symbol {t}"
        assert learner.stats["alphabet_size"] == len(seen)
    assert len(seen) == cap
    # learning continues once every symbol is known
    more = learner.learn(rng.integers(0, cap, size=500))
    assert np.all(np.isfinite(more)) and np.all(more > 0.0)
    assert learner.stats["alphabet_size"] == cap
    assert learner.stats["symbols"] == len(x) + 500


@pytest.mark.parametrize("close", [True, False], ids=["closed", "seqd-0.12"])
def test_the_escape_gets_nothing_from_the_symbol_after_the_alphabet_fills(close):
    """The symbol that fills the alphabet is the last that can be a first occurrence: from the next one on the
    escape's probability is exactly 0, although the escape is retired only when the window ends (as seqd 0.12,
    ``close_escape=False``, kept its share until then)."""
    cap, K = 4, 16
    learner = OnlineLearner(OnlineConfig(units=4, degree=2, alphabet_cap=cap, window=K, close_escape=close))
    learner.learn([0, 1, 2, 3])  # full after 4 symbols, well inside the first window
    seen = set()
    for symbol in [0, 1, 2, 3] * 4:
        retired = learner.state.w[0, 0] == RETIRED_ESCAPE_BIAS  # at the end of the window that filled it
        dist, proba = learner.predict_proba_one(), learner.predict_proba()
        assert proba.sum() == pytest.approx(1.0 - dist[None], abs=1e-12)  # the escape's share names no symbol
        if close or retired:
            assert dist[None] == 0.0
        else:
            assert dist[None] > 0.0
        seen.add(retired)
        learner.learn([symbol])
    assert seen == {False, True}  # the 16 symbols reach past the window that filled the alphabet


def test_predict_proba_sums_to_one_when_alphabet_is_full():
    """Once every symbol has been seen the escape is retired: no probability is wasted on it."""
    cap = 4
    learner = OnlineLearner(OnlineConfig(units=4, degree=2, alphabet_cap=cap, window=3))
    learner.learn([0, 1, 2, 3, 0, 1])
    dist = learner.predict_proba_one()
    proba = learner.predict_proba()
    assert dist[None] == 0.0
    assert proba.sum() == pytest.approx(1.0, abs=1e-12)
    bits = learner.learn([2, 3, 0, 1] * 50)
    assert np.all(np.isfinite(bits)) and bits[-20:].mean() < bits[:8].mean()


# -- 8. learning happens ---------------------------------------------------------------------


@pytest.mark.parametrize("method", ["rbpm", "qdrbpm"])
def test_periodic_sequence_is_learned(method):
    learner = OnlineLearner(OnlineConfig(units=8, degree=3, alphabet_cap=16, window=8, method=method))
    bits = learner.learn(np.array([0, 1, 2, 3] * 300))
    assert bits[-200:].mean() < 0.1, (bits[:200].mean(), bits[-200:].mean())
    assert learner.predict_one() == 0


# -- 9. a window longer than the stream ------------------------------------------------------


def test_no_window_update_before_the_first_window_is_full():
    cfg = OnlineConfig(units=6, degree=3, alphabet_cap=8, window=1000)
    x = np.random.default_rng(9).integers(0, 8, size=600)
    learner = OnlineLearner(cfg)
    initial = new_state(cfg)
    bits = learner.learn(x)
    st = learner.state
    assert learner.stats["windows"] == 0 and learner.stats["rejected_windows"] == 0
    # transition weights, metrics and their counters are exactly as activation left them
    fresh = new_state(cfg)
    hyper, flags = cfg.hyper(), cfg.flags()
    for s in dict.fromkeys(int(v) for v in x):
        activate_symbol(fresh, hyper, flags, s)
    assert np.array_equal(st.tau, fresh.tau)
    assert np.array_equal(st.metric, fresh.metric)
    assert np.all(st.block_updates == 0)
    assert np.all(st.G == 0.0)
    assert st.reals[0] == initial.reals[0]  # eta_tau untouched
    # the writing weights did learn
    assert not np.array_equal(st.w, fresh.w)
    assert np.all(np.isfinite(bits))
    # the window buffer holds the whole stream so far
    assert st.counts[WINDOW_POS] == len(x)
    assert np.array_equal(st.symbol_of[st.x[:len(x)]], x)
