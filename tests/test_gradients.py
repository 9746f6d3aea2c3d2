"""Finite-difference checks of every derivative the training step uses (seed 000, Section 2, Appendix B).

The objective is the full-sequence log-likelihood of eq. (16),
``L = sum_t chi_t log pi_t(x_t)``, as returned by the ``forward`` kernel.  It
is differentiated numerically (central differences) with respect to

* the writing weights w: eq. (17), W_iy = sum_t chi_t a_i^t (1_{x_t=y} - pi_t(y))
  (= C^0_iy of eqs. 90, 93), with chi = 1 and with a random mask;
* the transition weights tau: eq. (25), G_i^{(jy)} = sum_t 1_{x_t=y} a_i^t B_j^{t+1}
  (= D^0 of eqs. 91, 94);
* the RNN input weights rho: dL/drho_{jy} = sum_t 1_{x_t=y} B_j^{t+1} (eq. 8);
* the initial potentials V^0: B^0 (text after eq. 91);

and B_i^t itself is checked as dL/dV_i^t (the meaning given after eq. 95) by
adding a perturbation to V_i^t in a small stand-alone forward pass.  The
Hessian terms of eqs. (18)-(19) are checked as minus the derivatives of W.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from naive import Case
from kernel_runs import k_network, k_writing, pipeline
from seqd.core.kernels.backward import NO_MODULUS, RBPM
from seqd.core.kernels.forward import allocate, forward

MODELS = ("glnn", "gnn", "rnn")
ACTIVATIONS = ("tanh", "logistic")
STEP = 1e-6
REL = 2e-6  # central differences with step 1e-6 on an objective of size ~10: ~1e-9 absolute noise

models = pytest.mark.parametrize("model", MODELS)
activations = pytest.mark.parametrize("activation", ACTIVATIONS)
masks = pytest.mark.parametrize("mask", ["ones", "binary"])


def close_fd(numeric, analytic, rel=REL):
    analytic = np.asarray(analytic, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(analytic))))
    np.testing.assert_allclose(numeric, analytic, rtol=rel, atol=rel * scale)


def loglik(c: Case, w=None, tau=None, rho=None, v0=None) -> float:
    V, a, pi = allocate(c.T, c.N, c.A)
    return forward(k_network(c, tau, rho), c.x, c.chi, c.w if w is None else w, c.v0 if v0 is None else v0, V, a, pi)


def numeric_gradient(c: Case, name: str, indices, h=STEP) -> np.ndarray:
    """Central differences of ``loglik`` with respect to ``getattr(c, name)[index]``."""
    base = getattr(c, name)
    out = np.zeros(base.shape)
    for idx in indices:
        plus, minus = base.copy(), base.copy()
        plus[idx] += h
        minus[idx] -= h
        out[idx] = (loglik(c, **{name: plus}) - loglik(c, **{name: minus})) / (2 * h)
    return out


def analytic(c: Case, modulus=NO_MODULUS):
    """Kernel pipeline: forward, backward (eq. 22), accumulate_transition (eq. 25), accumulate_writing (eq. 17)."""
    V, a, pi, B, m, G, G_rho, _, _ = pipeline(c, modulus, False)
    W, h0, hd = k_writing(c, a, pi)
    return dict(V=V, a=a, pi=pi, B=B, m=m, G=G, G_rho=G_rho, W=W, h0=h0, hd=hd)


def all_indices(shape):
    return list(np.ndindex(*shape))


# -- writing weights: eq. (17) ----------------------------------------------------------------


@models
@activations
@masks
def test_writing_gradient_eq17(model, activation, mask):
    c = Case(model, activation, seed=21, mask=mask)
    numeric = numeric_gradient(c, "w", all_indices(c.w.shape))
    close_fd(numeric, analytic(c)["W"])


@models
@activations
def test_writing_hessian_terms_eq18_19(model, activation):
    """h_ii^y - eps_y and h_0i^y are minus the second derivatives of L in (w_iy, w_iy) and (w_0y, w_iy)."""
    c = Case(model, activation, seed=22)
    ref = analytic(c)
    h = 1e-5
    for y in range(c.A):
        for i in range(c.N + 1):
            plus, minus = c.w.copy(), c.w.copy()
            plus[i, y] += h
            minus[i, y] -= h
            saved = c.w
            c.w = plus
            Wp = analytic(c)["W"]
            c.w = minus
            Wm = analytic(c)["W"]
            c.w = saved
            dW = (Wp - Wm) / (2 * h)  # column i of d W / d w_{. y}
            assert -dW[i, y] == pytest.approx(ref["hd"][i, y], rel=1e-6, abs=1e-8)
            assert -dW[0, y] == pytest.approx(ref["h0"][i, y], rel=1e-6, abs=1e-8)


# -- transition weights: eq. (25) ---------------------------------------------------------------


@models
@activations
@masks
def test_transition_gradient_eq25(model, activation, mask):
    c = Case(model, activation, seed=23, mask=mask)
    numeric = numeric_gradient(c, "tau", all_indices(c.tau.shape))
    G = analytic(c)["G"]
    close_fd(numeric, G)
    assert np.all(numeric[:, 0, :] == 0.0)  # unit 0 has no incoming weights


@activations
@masks
def test_rnn_input_gradient(activation, mask):
    c = Case("rnn", activation, seed=24, mask=mask)
    numeric = numeric_gradient(c, "rho", all_indices(c.rho.shape))
    close_fd(numeric, analytic(c)["G_rho"])


@models
@activations
@masks
def test_initial_potential_gradient_is_B0(model, activation, mask):
    c = Case(model, activation, seed=25, mask=mask)
    numeric = numeric_gradient(c, "v0", [(i,) for i in range(1, c.N + 1)])
    close_fd(numeric, analytic(c)["B"][0])


@models
@activations
def test_gradient_does_not_depend_on_the_modulus(model, activation):
    c = Case(model, activation, seed=26)
    plain, with_m = analytic(c, NO_MODULUS), analytic(c, RBPM)
    np.testing.assert_array_equal(plain["B"], with_m["B"])
    np.testing.assert_array_equal(plain["G"], with_m["G"])


# -- B_i^t = dL / dV_i^t (after eq. 95) ----------------------------------------------------------


def loglik_with_kick(c: Case, t0: int, i0: int, eps: float) -> float:
    """A stand-alone forward pass (loops over the incoming slots) that adds ``eps`` to V_{i0}^{t0}.

    The kick is applied after V^{t0} is computed and before a^{t0} = s(V^{t0}),
    so it reaches both the output at time t0 and every later time.
    """
    act = math.tanh if c.activation == "tanh" else (lambda v: 1.0 / (1.0 + math.exp(-v)))
    N1, D = c.inputs.shape
    V = [0.0] + [float(v) for v in c.v0[1:]]
    total = 0.0
    for t in range(c.T + 1):
        if t == t0:
            V[i0] += eps
        a = [1.0] + [act(v) for v in V[1:]]
        if t == c.T:
            break
        E = [sum(a[i] * c.w[i, y] for i in range(N1)) for y in range(c.A)]
        log_norm = math.log(sum(math.exp(e) for e in E))
        total += c.chi[t] * (E[c.x[t]] - log_norm)
        sym = c.x[t] if c.gated else 0
        new = [0.0] * N1
        for j in range(1, N1):
            v = c.leak * V[j] + sum(c.tau[sym, j, k] * a[c.inputs[j, k]] for k in range(D))
            if not c.gated:
                v += c.rho[c.x[t], j]
            new[j] = v
        V = new
    return total


@models
@activations
@masks
def test_B_is_the_derivative_with_respect_to_V(model, activation, mask):
    c = Case(model, activation, seed=27, mask=mask)
    assert loglik_with_kick(c, 0, 1, 0.0) == pytest.approx(loglik(c), rel=1e-12)
    B = analytic(c)["B"]
    numeric = np.zeros_like(B)
    for t in range(c.T + 1):
        for i in range(1, c.N + 1):
            numeric[t, i] = (loglik_with_kick(c, t, i, STEP) - loglik_with_kick(c, t, i, -STEP)) / (2 * STEP)
    close_fd(numeric, B)
    assert np.all(numeric[c.T] == 0.0)  # V^T influences nothing: B^T = 0
