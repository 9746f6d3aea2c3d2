"""The bitwise model's recurrent units (``seqd.core.bits.units``): the window's back-propagation against finite
differences of the tree's log-likelihood, the RBPM modulus against its recursion written out, the writing step
against eqs. 17-21 term by term (in ``test_bits.py``), and the tried step's rule: kept only when the window's
log-likelihood did not go down, else undone exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive_bits
from contract import log_bytes
from seqd.core.bits import BitsConfig, BitsLearner, units

SMALL = dict(table_bits=10, history_bits=12, match_bits=10, units=4, unit_window=8)


def _mid_stream(seed: int = 0):
    """A learner with units that has seen some log, and a window of its own filled afresh: K + 1 bytes from
    the same log, its potentials and activities run forward from its first row."""
    learner = BitsLearner(BitsConfig(**SMALL))
    data = log_bytes(4000, seed)
    learner.learn(data[:3000])
    st = learner.state
    un = units.units_of.py_func(st)
    K = un.x.shape[0] - 1
    un.x[:] = np.frombuffer(data[3000:3001 + K], np.uint8)
    for k in range(K):
        units._evolve.py_func(un, un.V[k], un.a[k], un.x[k], un.V[k + 1], un.a[k + 1])
    return learner, un


def _tree_loglik(v, a, x) -> float:
    """log p(x) (nats) under the units alone: the sum over x's path of log sigma(+-u), math's exp and log."""
    total, c0 = 0.0, 1
    for bit in range(7, -1, -1):
        u = float(np.dot(a, v[c0]))
        y = (x >> bit) & 1
        s = u if y else -u
        total -= math.log1p(math.exp(-s)) if s > -30 else -s
        c0 = 2 * c0 + y
    return total


def _window_loglik(un, tau) -> float:
    """The window's outputs 1..K after running transitions 0..K-1 with ``tau`` from its first row (math's tanh)."""
    N1, D = un.inputs.shape
    V = un.V[0].astype(float).copy()
    a = un.a[0].astype(float).copy()
    total = 0.0
    for k in range(un.x.shape[0] - 1):
        Vn = V.copy()
        for j in range(1, N1):
            Vn[j] = V[j] + sum(tau[un.x[k], j, q] * a[un.inputs[j, q]] for q in range(D))
        V, a = Vn, np.concatenate(([1.0], np.tanh(Vn[1:])))
        total += _tree_loglik(un.v, a, un.x[k + 1])
    return total


def test_the_window_s_gradient_is_the_derivative_of_its_log_likelihood():
    """dL/dtau[y, j, q] = sum over the window's transitions k that read y of B_j^{k+1} a^k_{in(j, q)} (eqs. 22,
    25), against central differences of L, the window's tree log-likelihood (the kernels' tanh and sigma are
    tables good to about 1e-5, hence the tolerance)."""
    _, un = _mid_stream()
    N1, D = un.inputs.shape
    K = un.x.shape[0] - 1
    B, m = np.zeros((K + 2, N1)), np.zeros((K + 2, N1))
    loglik = units._backward.py_func(un, un.a, B, m)
    assert loglik == pytest.approx(_window_loglik(un, un.tau), rel=1e-4)
    checked = 0
    for k in range(K):
        y = int(un.x[k])
        for j in range(1, N1):
            for q in range(D):
                analytic = sum(B[t + 1, j] * un.a[t, un.inputs[j, q]] for t in range(K) if un.x[t] == y)
                h = 1e-5
                tau = un.tau.copy()
                tau[y, j, q] += h
                up = _window_loglik(un, tau)
                tau[y, j, q] -= 2 * h
                numeric = (up - _window_loglik(un, tau)) / (2 * h)
                assert analytic == pytest.approx(numeric, rel=2e-3, abs=1e-6), (k, j, q)
                checked += 1
    assert checked == K * (N1 - 1) * D


def test_the_rbpm_modulus_follows_its_recursion():
    """m_i^t = s'(V_i^t)^2 sum over x_t's path of sigma (1 - sigma) v[c0, i]^2 + sum_j (dV_j^{t+1} / dV_i^t)^2
    m_j^{t+1} (eq. 24 with the tree's curvature), m^{K+1} = 0, written out."""
    _, un = _mid_stream(1)
    N1, D = un.inputs.shape
    K = un.x.shape[0] - 1
    B, m = np.zeros((K + 2, N1)), np.zeros((K + 2, N1))
    units._backward.py_func(un, un.a, B, m)
    want = np.zeros((K + 2, N1))
    for t in range(K, 0, -1):
        x = int(un.x[t])
        slope = 1.0 - un.a[t] ** 2
        for i in range(1, N1):
            c0, curvature = 1, 0.0
            for bit in range(7, -1, -1):
                p = naive_bits.squash_table(float(np.dot(un.a[t], un.v[c0])))
                curvature += p * (1 - p) * un.v[c0, i] ** 2
                c0 = 2 * c0 + ((x >> bit) & 1)
            carried = 0.0
            for j in range(1, N1):
                jac = (1.0 if i == j else 0.0) + sum(un.tau[x, j, q] * slope[i] for q in range(1, D)
                                                      if un.inputs[j, q] == i)
                carried += jac ** 2 * want[t + 1, j]
            want[t, i] = slope[i] ** 2 * curvature + carried
    assert np.allclose(m[1:K + 1], want[1:K + 1], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("rate, kept", [(1e-6, True), (-1e-6, False)])
def test_the_tried_step_is_kept_only_if_the_window_does_not_lose(rate, kept):
    """A tiny step along P G (P positive definite) raises the window's log-likelihood and is kept; the same step
    backwards lowers it and is undone: tau comes back bit for bit and the rate halves."""
    _, un = _mid_stream(2)
    before = _window_loglik(un, un.tau)
    tau = un.tau.copy()
    un.reals[units.ETA_TAU] = rate
    rejected = int(un.ints[units.REJECTED])
    units._window(un, BitsConfig(**SMALL).hyper())
    if kept:
        assert un.ints[units.REJECTED] == rejected and not np.array_equal(un.tau, tau)
        assert _window_loglik(un, un.tau) >= before - 1e-9
        assert un.reals[units.ETA_TAU] == pytest.approx(rate * units.RATE_GROWTH)
    else:
        assert un.ints[units.REJECTED] == rejected + 1 and np.array_equal(un.tau, tau)
        assert un.reals[units.ETA_TAU] == rate * units.RATE_SHRINK


def test_units_start_as_seed_000_says():
    """Each (byte, unit) block starts at eqs. 31-33: self-loop -1/2, bias beta_j + input_scale mu_j/4 (u - 1/2);
    the potentials at their fixed point arctanh(beta_j / alpha); the metric blocks at the prior's inverse."""
    config = BitsConfig(**SMALL)
    st = BitsLearner(config).state
    N = config.units
    for j in range(1, N + 1):
        mu = 1.0 / (j + 1)
        beta = -math.sqrt(0.5 * (0.5 - mu))
        assert np.all(st.unit_tau[:, j, 1] == -0.5)
        assert np.all(np.abs(st.unit_tau[:, j, 0] - beta) <= config.unit_input_scale * mu / 8 + 1e-12)
        assert st.unit_V[0, j] == pytest.approx(math.atanh(beta / 0.5), rel=1e-12)
    assert np.allclose(st.unit_metric[0, 1], np.eye(config.unit_degree + 1) / config.unit_metric_prior)
