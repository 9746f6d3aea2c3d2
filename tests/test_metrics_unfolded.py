"""RUOP and RBPM metric blocks against their time-unfolded definitions (seed 000, Sections 3.3-3.5).

Section 3.3 turns a recurrent network over T symbols into a feedforward
network with units (i, t), and gives each time its own *dummy* copy theta^t of
the transition parameters (the slice tau[x_t] read at time t, plus rho[x_t]
for the RNN); the recurrent network is the point where every copy equals the
meta-parameter theta.  A recurrent metric is the sum over t of a feedforward
metric on the dummy copies (Definition 6, eqs. 51-52).  Here both metrics are
computed by brute force from those definitions, on a tiny network, with
finite differences in place of every derivative, and compared with
``backward`` + ``accumulate_transition``:

* RUOP (eq. 55): M~^{(j)}_{kk'} = sum_t (dlogPr/dtheta^t_{jk}) (dlogPr/dtheta^t_{jk'}), the
  derivatives taken by perturbing *only* the time-t copy in the full-sequence
  log-likelihood, grouped by the symbol read at t (eq. 56).
* RBPM (eqs. 58-67): the backpropagated modulus m_i^t of the activity a_i^t is
  defined by ||delta a_i^t||^2_bp = chi_t ||delta pi_t||^2_nat + sum_j ||delta a_j^{t+1}||^2_bp
  (eq. 58, chi_t weighting the output term as in eq. 24), with the Fisher norm
  ||delta pi||^2_nat = sum_y (delta pi_y)^2 / pi_y (eq. 97) of the finite-difference
  change of pi_t, and delta a_j^{t+1} the finite-difference change through the
  one-step map; then m~ = m s'(V)^2 (eq. 62) and
  M~^{(jy)} = sum_t 1_{x_t=y} m~_j^{t+1} (dV_j^{t+1}/dtheta^t)(dV_j^{t+1}/dtheta^t)^T (eq. 67).

For the RNN (eq. 8), the dummy parameters of unit j at time t are
(tau_{.j}, rho_{j x_t}); the rho_{jy} appear as extra inputs whose "activity"
is 1_{x_t=y} (Section 1.2.1), so the kernel's M_rho[y, j] must equal both the
rho-rho diagonal entry and the bias-rho cross term of the unfolded metric.
"""

from __future__ import annotations

import numpy as np
import pytest

import naive
from naive import Case
from kernel_runs import pipeline
from seqd.core.kernels.backward import RBPM, RUOP

MODELS = ("glnn", "gnn", "rnn")
ACTIVATIONS = ("tanh", "logistic")
REL = 1e-6
TINY = dict(units=3, degree=2, alphabet=3, length=8)


def close(actual, expected, rel=REL):
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(1e-3, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(actual, expected, rtol=rel, atol=rel * scale)


def kernel_metric(c: Case, modulus, quasi_diagonal):
    V, a, pi, B, m, G, G_rho, M, M_rho = pipeline(c, modulus, quasi_diagonal)
    return dict(V=V, a=a, pi=pi, B=B, m=m, G=G, G_rho=G_rho, M=M, M_rho=M_rho)


def n_extended(c: Case) -> int:
    """Incoming parameters per unit and block: D slots, plus A input weights rho_{jy} for the RNN."""
    return c.D if c.gated else c.D + c.A


def group_by_symbol(c: Case, per_time_vectors, weights):
    """sum_t 1_{sym_t = s} weights[t, j] v v^T with v = per_time_vectors[t, j]: blocks (S, N+1, n, n)."""
    n = per_time_vectors.shape[-1]
    M = np.zeros((c.S, c.N + 1, n, n))
    for t in range(c.T):
        sym = naive.symbol_used(c.x[t], c.gated)
        for j in range(1, c.N + 1):
            v = per_time_vectors[t, j]
            M[sym, j] += weights[t, j] * np.outer(v, v)
    return M


def compare_with_kernel(c: Case, M_unf, modulus):
    """Full blocks, quasi-diagonal entries and (RNN) rho entries of the kernel vs the unfolded metric."""
    D = c.D
    full = kernel_metric(c, modulus, False)
    close(full["M"], M_unf[:, :, :D, :D])
    qd = kernel_metric(c, modulus, True)
    for k in range(D):  # quasi-diagonal entries: (0,0), (0,k), (k,k)
        close(qd["M"][:, :, 0, k], M_unf[:, :, 0, k])
        close(qd["M"][:, :, k, k], M_unf[:, :, k, k])
    if not c.gated:
        for y in range(c.A):
            close(full["M_rho"][y], M_unf[0, :, D + y, D + y])  # rho-rho diagonal
            close(full["M_rho"][y], M_unf[0, :, 0, D + y])  # bias-rho cross term
            close(qd["M_rho"][y], M_unf[0, :, D + y, D + y])
    return full


# -- RUOP: eq. (55) ------------------------------------------------------------------------------


def dummy_gradients(c: Case, h=1e-5):
    """g[t, j] = dlogPr/dtheta^t_j by central differences, only the time-t copy being perturbed.

    theta^t_j = (tau_t[t, j, 0..D-1], and for the RNN rho_t[t, j] placed at slot D + x_t).
    """
    tau_t, rho_t = naive.unfold_parameters(c.x, c.tau, c.rho, c.gated)

    def L(tt, rt):
        return naive.unfolded_forward(c.x, c.chi, c.w, tt, rt, c.v0, c.inputs, c.leak, c.gated, c.activation)[3]

    g = np.zeros((c.T, c.N + 1, n_extended(c)))
    for t in range(c.T):
        for j in range(1, c.N + 1):
            for k in range(c.D):
                p, q = tau_t.copy(), tau_t.copy()
                p[t, j, k] += h
                q[t, j, k] -= h
                g[t, j, k] = (L(p, rho_t) - L(q, rho_t)) / (2 * h)
            if not c.gated:
                p, q = rho_t.copy(), rho_t.copy()
                p[t, j] += h
                q[t, j] -= h
                g[t, j, c.D + c.x[t]] = (L(tau_t, p) - L(tau_t, q)) / (2 * h)
    return g


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_ruop_is_the_time_summed_outer_product_eq55(model, activation):
    c = Case(model, activation, seed=31, **TINY)
    g = dummy_gradients(c)
    M_unf = group_by_symbol(c, g, np.ones((c.T, c.N + 1)))
    full = compare_with_kernel(c, M_unf, RUOP)
    # the meta-parameter's gradient is the sum of the dummy copies' gradients (eq. 25 / eqs. 91, 94)
    G_unf = np.zeros((c.S, c.N + 1, n_extended(c)))
    for t in range(c.T):
        G_unf[naive.symbol_used(c.x[t], c.gated)] += g[t]
    close(full["G"], G_unf[:, :, : c.D])
    if not c.gated:
        close(full["G_rho"].T, G_unf[0, :, c.D:])
    # eq. (54): dlogPr/dtheta^t_j = B_j^{t+1} dV_j^{t+1}/dtheta^t_j, with a_0 = 1 in slot 0
    close(g[:, 1:, 0], full["B"][1:, 1:])


# -- RBPM: eqs. (58)-(67) -----------------------------------------------------------------------


def next_potential(c: Case, V_t, a_t, t, tau_slice=None, rho_row=None):
    """V^{t+1} from (V^t, a^t) by the evolution equations (8), (10), (13), with explicit slot loops."""
    tau_slice = c.tau[naive.symbol_used(c.x[t], c.gated)] if tau_slice is None else tau_slice
    rho_row = c.rho[c.x[t]] if rho_row is None else rho_row
    V = np.zeros(c.N + 1)
    for j in range(1, c.N + 1):
        V[j] = c.leak * V_t[j] + sum(tau_slice[j, k] * a_t[c.inputs[j, k]] for k in range(c.D))
        if not c.gated:
            V[j] += rho_row[j]
    return V


def unfolded_rbpm(c: Case, V, a, pi, h=1e-5):
    """(m, m~) of eqs. (58)-(62) on the time-unfolded network, every derivative by finite differences.

    ||delta a_i^t||^2_bp = chi_t ||delta pi_t||^2_nat + sum_j ||delta a_j^{t+1}||^2_bp =: m_i^t (delta a_i^t)^2.
    A change of a_i^t is a change of V_i^t = s^{-1}(a_i^t) (this is how it reaches V_i^{t+1}
    through the GLNN's leak); the step in a_i^t is scaled by s'(V_i^t) to stay inside (-1, 1) / (0, 1).
    """
    T, N1 = c.T, c.N + 1
    sp = naive.s_prime(V, c.activation)
    m = np.zeros((T + 1, N1))
    for t in range(T - 1, -1, -1):
        for i in range(1, N1):
            hi = h * sp[t, i] * (4.0 if c.activation == "logistic" else 1.0)
            moved = []
            for sign in (1.0, -1.0):
                a_i = a[t].copy()
                a_i[i] += sign * hi
                V_i = V[t].copy()
                V_i[i] = naive.s_inverse(a_i[i], c.activation)
                pi_i = naive.softmax(a_i @ c.w)  # pi_t moved by delta a_i^t alone
                a_next = naive.s(next_potential(c, V_i, a_i, t), c.activation)
                moved.append((pi_i, a_next))
            d_pi = (moved[0][0] - moved[1][0]) / (2 * hi)
            d_a = (moved[0][1] - moved[1][1]) / (2 * hi)
            fisher = np.sum(d_pi**2 / pi[t])  # eq. (97): E_{y~pi}(delta log pi(y))^2
            m[t, i] = c.chi[t] * fisher + sum(d_a[j] ** 2 * m[t + 1, j] for j in range(1, N1))
    return m, m * sp**2  # eq. (62)


def potential_sensitivities(c: Case, V, a, h=1e-5):
    """dV_j^{t+1}/dtheta^t_j by finite differences of one step (theta^t_j = tau[x_t, j, :], rho[x_t, j])."""
    out = np.zeros((c.T, c.N + 1, n_extended(c)))
    for t in range(c.T):
        tau_slice = c.tau[naive.symbol_used(c.x[t], c.gated)]
        for j in range(1, c.N + 1):
            for k in range(c.D):
                p, q = tau_slice.copy(), tau_slice.copy()
                p[j, k] += h
                q[j, k] -= h
                out[t, j, k] = (next_potential(c, V[t], a[t], t, tau_slice=p)[j]
                                - next_potential(c, V[t], a[t], t, tau_slice=q)[j]) / (2 * h)
            if not c.gated:
                p, q = c.rho[c.x[t]].copy(), c.rho[c.x[t]].copy()
                p[j] += h
                q[j] -= h
                out[t, j, c.D + c.x[t]] = (next_potential(c, V[t], a[t], t, rho_row=p)[j]
                                           - next_potential(c, V[t], a[t], t, rho_row=q)[j]) / (2 * h)
    return out


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("mask", ["binary", "weights"])
def test_rbpm_is_the_time_summed_backpropagated_metric_eqs58_67(model, activation, mask):
    c = Case(model, activation, seed=32, mask=mask, **TINY)
    V, a, pi, _ = c.naive_forward()
    m, m_tilde = unfolded_rbpm(c, V, a, pi)
    dV = potential_sensitivities(c, V, a)
    # M~^{(jy)} = sum_t 1_{x_t=y} m~_j^{t+1} (dV_j^{t+1}/dtheta^t)^{(x)2}   (eqs. 66-67, 68)
    M_unf = group_by_symbol(c, dV, m_tilde[1:])
    full = compare_with_kernel(c, M_unf, RBPM)
    close(full["m"], m_tilde)  # eq. (63) / (24) is eq. (58) in V-coordinates


@pytest.mark.parametrize("model", ["glnn", "gnn"])
def test_rbpm_and_ruop_differ(model):
    """Guard against a vacuous comparison: the two metrics are genuinely different on this problem."""
    c = Case(model, "tanh", seed=33, **TINY)
    M_rbpm = kernel_metric(c, RBPM, False)["M"]
    M_ruop = kernel_metric(c, RUOP, False)["M"]
    assert np.max(np.abs(M_rbpm - M_ruop)) > 1e-2 * np.max(np.abs(M_rbpm))
