"""Every Numba kernel of ``seqd.core.kernels`` against its NumPy twin in ``tests/naive.py``.

Small random problems (N=5 units, d=3 incoming units, A=4 symbols, T=12),
all three models of seed 000 (RNN eq. 8, GNN eq. 10, GLNN eq. 13) and both
activations, random parameters away from the initialisation point, random
prediction masks chi with zeros.  Agreement is required to ~1e-10 relative:
the kernels and the references compute the same sums in different orders.
"""

from __future__ import annotations

import numpy as np
import pytest

import naive
from naive import Case
from kernel_runs import k_backward, k_forward, k_transition, k_writing, pipeline
from seqd.core.kernels.backward import NO_MODULUS, RBPM, RUOP
from seqd.core.kernels.forward import regularized_log2_probs
from seqd.core.kernels.transition import solve_blocks, solve_quasi_diagonal
from seqd.core.kernels.writing import diagonal_step, quasi_diagonal_step

MODELS = ("glnn", "gnn", "rnn")
ACTIVATIONS = ("tanh", "logistic")
REL = 1e-10

models = pytest.mark.parametrize("model", MODELS)
activations = pytest.mark.parametrize("activation", ACTIVATIONS)


def close(actual, expected, rel=REL):
    """Entrywise agreement relative to the scale of ``expected``."""
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=rel, atol=rel * scale)


# -- kernel drivers (argument lists as in core/training/batch.py) ---------------------------


# -- forward ---------------------------------------------------------------------------------


@models
@activations
@pytest.mark.parametrize("mask", ["ones", "binary", "weights"])
def test_forward(model, activation, mask):
    c = Case(model, activation, seed=1, mask=mask)
    V, a, pi, ll = k_forward(c)
    Vn, an, pin, lln = c.naive_forward()
    close(V, Vn)
    close(a, an)
    close(pi, pin)
    assert ll == pytest.approx(lln, rel=REL)
    assert np.all(a[:, 0] == 1.0) and np.all(V[:, 0] == 0.0)
    close(pi.sum(axis=1), np.ones(c.T))


@models
@activations
def test_forward_equals_time_unfolded_network_with_tied_copies(model, activation):
    """Section 3.3: setting every dummy parameter theta^t to theta gives back the recurrent network."""
    c = Case(model, activation, seed=2)
    tau_t, rho_t = naive.unfold_parameters(c.x, c.tau, c.rho, c.gated)
    Vu, au, piu, llu = naive.unfolded_forward(c.x, c.chi, c.w, tau_t, rho_t, c.v0, c.inputs, c.leak, c.gated,
                                              c.activation)
    V, a, pi, ll = k_forward(c)
    close(V, Vu)
    close(pi, piu)
    assert ll == pytest.approx(llu, rel=REL)


@activations
def test_gated_models_ignore_rho(activation):
    c = Case("glnn", activation, seed=3)
    *_, ll = k_forward(c)
    c.rho = np.random.default_rng(0).standard_normal(c.rho.shape)
    *_, ll2 = k_forward(c)
    assert ll == ll2


@models
def test_regularized_log2_probs(model):
    c = Case(model, "tanh", seed=4)
    _, _, pi, _ = k_forward(c)
    out = np.empty(c.T)
    regularized_log2_probs(c.x, pi, out)
    close(out, naive.regularized_log2_probs(c.x, pi))


# -- backward --------------------------------------------------------------------------------


@models
@activations
@pytest.mark.parametrize("modulus", [RBPM, RUOP, NO_MODULUS])
def test_backward(model, activation, modulus):
    c = Case(model, activation, seed=5)
    V, a, pi, _ = k_forward(c)
    B, m = k_backward(c, a, pi, modulus)
    Bn, mn = naive.backward(c.x, c.chi, c.w, c.tau, V, pi, c.inputs, c.leak, c.gated, c.activation, modulus)
    close(B, Bn)
    close(m, mn)
    assert np.all(B[:, 0] == 0.0) and np.all(m[:, 0] == 0.0)
    if modulus == NO_MODULUS:
        assert np.all(m[: c.T] == 0.0)
    else:
        assert np.all(m >= 0.0)


@models
@activations
@pytest.mark.parametrize("modulus", [RBPM, RUOP])
def test_backward_with_boundary_values(model, activation, modulus):
    """A truncated window passes its own B^T and m^T (kernel docstring); both are propagated."""
    c = Case(model, activation, seed=6, mask="weights")
    V, a, pi, _ = k_forward(c)
    rng = np.random.default_rng(11)
    B_T = rng.standard_normal(c.N + 1)
    m_T = rng.random(c.N + 1)
    B_T[0] = m_T[0] = 0.0
    B, m = k_backward(c, a, pi, modulus, B_T, m_T)
    Bn, mn = naive.backward(c.x, c.chi, c.w, c.tau, V, pi, c.inputs, c.leak, c.gated, c.activation, modulus,
                            B_T, m_T)
    close(B, Bn)
    close(m, mn)


@activations
def test_rbpm_modulus_is_eq_24_for_the_glnn(activation):
    """Eq. (24) literally (the GLNN form of eq. 63), with the self-loop term split off."""
    c = Case("glnn", activation, seed=7)
    V, a, pi, _ = k_forward(c)
    _, m = k_backward(c, a, pi, RBPM)
    T, N1 = c.T, c.N + 1
    ref = np.zeros((T + 1, N1))
    for t in range(T - 1, -1, -1):
        sp = naive.s_prime(V[t], c.activation)
        Tm = naive.dense_transition(c.tau[c.x[t]], c.inputs)
        for i in range(1, N1):
            var = np.dot(pi[t], c.w[i] ** 2) - np.dot(pi[t], c.w[i]) ** 2
            others = sum(Tm[i, j] ** 2 * ref[t + 1, j] for j in range(1, N1) if j != i)
            ref[t, i] = sp[i] ** 2 * (c.chi[t] * var + others) + (1 + Tm[i, i] * sp[i]) ** 2 * ref[t + 1, i]
    close(m, ref)


# -- transition gradient and metric ----------------------------------------------------------


@models
@activations
@pytest.mark.parametrize("modulus", [RBPM, RUOP])
@pytest.mark.parametrize("quasi_diagonal", [False, True], ids=["full", "qd"])
def test_accumulate_transition(model, activation, modulus, quasi_diagonal):
    c = Case(model, activation, seed=8)
    V, a, pi, B, m, G, G_rho, M, M_rho = pipeline(c, modulus, quasi_diagonal)
    Gn, G_rhon, Mn, M_rhon = naive.accumulate_transition(c.x, a, B, m, c.inputs, c.gated, c.A, quasi_diagonal)
    close(G, Gn)
    close(G_rho, G_rhon)
    close(M, Mn)
    close(M_rho, M_rhon)
    if c.gated:
        assert np.all(G_rho == 0.0) and np.all(M_rho == 0.0)
    else:
        # the rho_{jy} cross term with the bias equals its diagonal entry (0/1 input activity)
        _, M_ext = naive.transition_blocks(c.x, a, B, m, c.inputs, c.gated, c.A)
        close(M_rho.T, M_ext[0, :, 0, c.D:])
    if not quasi_diagonal:
        close(M, np.swapaxes(M, -1, -2), rel=0)
    assert np.all(G[:, 0] == 0.0) and np.all(M[:, 0] == 0.0)


@models
@pytest.mark.parametrize("quasi_diagonal", [False, True], ids=["full", "qd"])
def test_accumulate_transition_adds_into_its_outputs(model, quasi_diagonal):
    c = Case(model, "tanh", seed=9)
    V, a, pi, B, m, *first = pipeline(c, RBPM, quasi_diagonal)
    twice = k_transition(c, a, B, m, quasi_diagonal, out=tuple(arr.copy() for arr in first))
    for one, two in zip(first, twice):
        close(two, 2.0 * one)


@models
@activations
@pytest.mark.parametrize("modulus", [RBPM, RUOP])
@pytest.mark.parametrize("damping", [1.0, 1e-3])
def test_solve_blocks(model, activation, modulus, damping):
    c = Case(model, activation, seed=10)
    *_, G, G_rho, M, M_rho = pipeline(c, modulus, False)
    out = np.full((c.S, c.N + 1, c.D), np.nan)
    failed = solve_blocks(G, M, damping, out, np.zeros((c.D, c.D)))
    assert failed == 0
    close(out, naive.solve_blocks(G, M, damping), rel=1e-9)


def test_solve_blocks_reports_and_zeroes_non_positive_blocks():
    rng = np.random.default_rng(0)
    S, N1, D = 2, 4, 3
    X = rng.standard_normal((S, N1, D, D))
    M = X @ np.swapaxes(X, -1, -2)
    M[1, 2] = -np.eye(D) * 5.0  # indefinite even after damping
    G = rng.standard_normal((S, N1, D))
    out = np.full((S, N1, D), np.nan)
    failed = solve_blocks(G, M, 1.0, out, np.zeros((D, D)))
    assert failed == 1
    assert np.all(out[1, 2] == 0.0) and np.all(out[:, 0] == 0.0)
    ref = naive.solve_blocks(G, M, 1.0)
    ref[1, 2] = 0.0
    close(out, ref, rel=1e-9)


@models
@activations
@pytest.mark.parametrize("modulus", [RBPM, RUOP])
@pytest.mark.parametrize("damping", [1.0, 1e-3])
def test_solve_quasi_diagonal(model, activation, modulus, damping):
    c = Case(model, activation, seed=12)
    *_, G, G_rho, M, M_rho = pipeline(c, modulus, True)
    out = np.full((c.S, c.N + 1, c.D), np.nan)
    out_rho = np.full((c.A, c.N + 1), np.nan)
    solve_quasi_diagonal(G, M, G_rho, M_rho, damping, out, out_rho)
    ref, ref_rho = naive.solve_quasi_diagonal(G, M, G_rho, M_rho, damping, c.gated)
    close(out, ref, rel=1e-9)
    close(out_rho, ref_rho, rel=1e-9)


@pytest.mark.parametrize("model", ["glnn", "gnn"])
@pytest.mark.parametrize("modulus", [RBPM, RUOP])
def test_quasi_diagonal_equals_full_solve_with_a_single_non_bias_input(model, modulus):
    """With D = 2 (bias + self-loop), the quasi-diagonal block IS the full block ([Oll13 §2.3])."""
    c = Case(model, "logistic", seed=13, degree=1)
    *_, G, G_rho, M, M_rho = pipeline(c, modulus, False)
    full = np.zeros_like(G)
    solve_blocks(G, M, 1.0, full, np.zeros((c.D, c.D)))
    qd = np.zeros_like(G)
    solve_quasi_diagonal(G, M, G_rho, M_rho, 1.0, qd, np.zeros_like(G_rho))
    close(qd, full, rel=1e-9)


# -- writing weights -------------------------------------------------------------------------


@models
@activations
@pytest.mark.parametrize("mask", ["ones", "binary", "weights"])
def test_accumulate_writing(model, activation, mask):
    c = Case(model, activation, seed=14, mask=mask)
    _, a, pi, _ = k_forward(c)
    W, h0, hd = k_writing(c, a, pi)
    Wn, h0n, hdn = naive.writing_terms(c.x, c.chi, a, pi)
    close(W, Wn)
    close(h0, h0n)
    close(hd, hdn)
    for y in range(c.A):  # diagonal and bias row of the Fisher matrix of eq. (50)
        H = naive.writing_hessian(c.x, c.chi, a, pi, y)
        close(hd[:, y], np.diag(H))
        close(h0[:, y], H[0])


@models
@activations
def test_quasi_diagonal_and_diagonal_steps(model, activation):
    c = Case(model, activation, seed=15)
    _, a, pi, _ = k_forward(c)
    W, h0, hd = k_writing(c, a, pi)
    counts = np.bincount(c.x, weights=c.chi, minlength=c.A)
    damping = counts / c.chi.sum() + np.finfo(float).eps  # eps_y of eq. (18)
    out = np.full_like(W, np.nan)
    quasi_diagonal_step(W, h0, hd, damping, out)
    close(out, naive.quasi_diagonal_step(W, h0, hd, damping), rel=1e-9)
    # the same reduction as the transition weights' (eqs. 34-35 vs 20-21)
    for y in range(c.A):
        H = np.diag(hd[:, y])
        H[0, :] = h0[:, y]
        close(out[:, y], naive.quasi_diagonal_inverse(W[:, y], H, damping[y]), rel=1e-9)
    out_d = np.full_like(W, np.nan)
    diagonal_step(W, hd, damping, out_d)
    close(out_d, naive.diagonal_step(W, hd, damping))
