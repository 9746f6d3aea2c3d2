"""Slow, obviously-correct NumPy references for the kernels of ``seqd.core.kernels``.

Everything here is written straight from seed 000 (Y. Ollivier 2015, "Riemannian
metrics for neural networks II: recurrent networks and learning symbolic data
sequences"), in the most direct form available -- dense matrices, explicit loops
over time, one formula per equation -- and deliberately *not* by transcribing
the Numba kernels.  Nothing here imports numba or ``seqd.core.kernels``.

Conventions (shared with :mod:`seqd.core.model`):

* units are 0..N, unit 0 is the always-activated unit, ``a_0^t = 1``;
* ``inputs[j, k]`` is the unit feeding slot k of unit j (slot 0 is unit 0);
* ``tau[sym, j, k]`` is the weight of the edge ``inputs[j, k] -> j`` read when
  the current symbol is ``sym`` (``sym = x_t`` for gated models, 0 for the RNN);
* ``rho[y, j]`` is the RNN input weight ``rho_{jy}`` of eq. (8);
* a model is described by ``leak`` (1 for the GLNN, 0 otherwise) and ``gated``.

The three evolution equations are

* RNN  (eq. 8):  ``V_j^{t+1} = rho_{j x_t} + sum_i tau_{ij} a_i^t``
* GNN  (eq. 10): ``V_j^{t+1} = sum_i tau_{i j x_t} a_i^t``
* GLNN (eq. 13): ``V_j^{t+1} = V_j^t + sum_i tau_{i j x_t} a_i^t``

and the output is the softmax of eq. (6)/(14).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

RBPM, RUOP, NO_MODULUS = 0, 1, 2
ACTIVATIONS = ("tanh", "logistic")


# -- activation functions -----------------------------------------------------------------


def _activation_name(activation) -> str:
    if isinstance(activation, str):
        return activation
    return ACTIVATIONS[int(activation)]


def s(v, activation):
    """The activation function s(V): tanh or the logistic function 1/(1+e^-V) (Section 1.2.1)."""
    v = np.asarray(v, dtype=np.float64)
    if _activation_name(activation) == "tanh":
        return np.tanh(v)
    return 1.0 / (1.0 + np.exp(-v))


def s_prime(v, activation):
    """s'(V), computed from V itself: 1/cosh(V)^2 or e^-V/(1+e^-V)^2."""
    v = np.asarray(v, dtype=np.float64)
    if _activation_name(activation) == "tanh":
        return 1.0 / np.cosh(v) ** 2
    e = np.exp(-v)
    return e / (1.0 + e) ** 2


def s_inverse(a, activation):
    """s^{-1}(a): arctanh or the logit."""
    a = np.asarray(a, dtype=np.float64)
    if _activation_name(activation) == "tanh":
        return np.arctanh(a)
    return np.log(a / (1.0 - a))


# -- network structure as dense matrices --------------------------------------------------


def dense_transition(tau_sym, inputs):
    """The (N+1, N+1) matrix ``T[i, j] = tau_{i j}`` (paper's index order: from i to j).

    ``tau_sym`` is one symbol's slice ``tau[sym]`` (N+1, D).  An edge listed
    twice would simply add up.
    """
    N1, D = inputs.shape
    T = np.zeros((N1, N1))
    for j in range(1, N1):
        for k in range(D):
            T[inputs[j, k], j] += tau_sym[j, k]
    return T


def symbol_used(x_t, gated):
    """Index of the transition-weight slice used at time t: x_t for GNN/GLNN, 0 for the RNN."""
    return int(x_t) if gated else 0


def softmax(E):
    """pi(y) = exp(E_y) / sum_y' exp(E_y'), eq. (6).  (Shifted by max E for overflow safety.)"""
    E = np.asarray(E, dtype=np.float64)
    e = np.exp(E - E.max())
    return e / e.sum()


def one_step(V_t, a_t, x_t, tau, rho, inputs, leak, gated, activation):
    """V^{t+1}, a^{t+1} from V^t, a^t and x_t: eqs. (8), (10), (13) with dense matrices."""
    T = dense_transition(tau[symbol_used(x_t, gated)], inputs)
    V_next = leak * V_t + a_t @ T  # sum_i a_i^t tau_{ij}
    if not gated:
        V_next = V_next + rho[x_t]
    V_next = np.array(V_next, dtype=np.float64)
    V_next[0] = 0.0
    a_next = s(V_next, activation)
    a_next[0] = 1.0
    return V_next, a_next


# -- forward pass -------------------------------------------------------------------------


def forward(x, chi, w, tau, rho, v0, inputs, leak, gated, activation):
    """(V, a, pi, loglik) over the whole sequence, from V^0 = v0.

    V, a: (T+1, N+1), row t = time t, column 0 = unit 0 (V_0 = 0, a_0 = 1).
    pi: (T, A), pi[t] = pi_t of eq. (6).  loglik = sum_t chi_t log pi_t(x_t), eq. (16).
    """
    x = np.asarray(x)
    T = len(x)
    N1 = inputs.shape[0]
    A = w.shape[1]
    V = np.zeros((T + 1, N1))
    a = np.zeros((T + 1, N1))
    pi = np.zeros((T, A))
    V[0] = v0
    V[0, 0] = 0.0
    a[0] = s(V[0], activation)
    a[0, 0] = 1.0
    loglik = 0.0
    for t in range(T):
        pi[t] = softmax(a[t] @ w)  # E_y = sum_i a_i^t w_iy
        if chi[t] != 0.0:
            loglik += chi[t] * np.log(pi[t, x[t]])
        V[t + 1], a[t + 1] = one_step(V[t], a[t], x[t], tau, rho, inputs, leak, gated, activation)
    return V, a, pi, loglik


def regularized_log2_probs(x, pi):
    """log2 of ((1 - 1/(t+2)) pi_t + 1/(t+2) unif_A)(x_t), seed 000 §4 "Regularization"."""
    T, A = pi.shape
    out = np.zeros(T)
    for t in range(T):
        lam = 1.0 / (t + 2)
        mixed = (1.0 - lam) * pi[t] + lam * np.full(A, 1.0 / A)
        out[t] = np.log2(mixed[x[t]])
    return out


# -- backpropagation through time (eq. 22, Appendix B) and moduli (eqs. 23, 24, 63) --------


def jacobian(V_t, x_t, tau, inputs, leak, gated, activation):
    """J[i, j] = dV_j^{t+1} / dV_i^t = leak 1_{i=j} + tau_{i j x_t} s'(V_i^t)  (eq. 64, generalised).

    Units 1..N only (row and column 0 are zero: V_0 is not a variable).
    """
    N1 = inputs.shape[0]
    T = dense_transition(tau[symbol_used(x_t, gated)], inputs)
    J = leak * np.eye(N1) + T * s_prime(V_t, activation)[:, None]
    J[0, :] = 0.0
    J[:, 0] = 0.0
    return J


def output_source(w, pi_t, x_t):
    """d log pi_t(x_t) / d a_i^t = w_{i x_t} - sum_y pi_t(y) w_iy   (eq. 99 with E_y = sum_i a_i w_iy)."""
    return w[:, x_t] - w @ pi_t


def output_variance(w, pi_t):
    """Var_{pi_t}(w_i.) = sum_y pi_t(y) w_iy^2 - (sum_y pi_t(y) w_iy)^2: the Fisher norm of eq. (59)."""
    return (w**2) @ pi_t - (w @ pi_t) ** 2


def backward(x, chi, w, tau, V, pi, inputs, leak, gated, activation, modulus, B_T=None, m_T=None):
    """(B, m), both (T+1, N+1).

    B_i^t = d log Pr / d V_i^t (eq. 22, eqs. 89/95 of Appendix B), written as a
    matrix recursion with the Jacobian of eq. (64):

        B^t = s'(V^t) * chi_t * (w_{. x_t} - w pi_t)  +  J^t B^{t+1}

    moduli:
        RUOP (eq. 23):  m~_i^t = (B_i^t)^2
        RBPM (eqs. 24 / 63): m~^t = s'(V^t)^2 chi_t Var_{pi_t}(w) + (J^t)^{.2} m~^{t+1}
        NO_MODULUS: m = 0.

    ``B_T``/``m_T`` are the boundary values at time T (zero for a whole sequence).
    """
    T = len(x)
    N1 = inputs.shape[0]
    B = np.zeros((T + 1, N1))
    m = np.zeros((T + 1, N1))
    if B_T is not None:
        B[T] = B_T
    if m_T is not None:
        m[T] = m_T
    for t in range(T - 1, -1, -1):
        sp = s_prime(V[t], activation)
        J = jacobian(V[t], x[t], tau, inputs, leak, gated, activation)
        B[t] = sp * chi[t] * output_source(w, pi[t], x[t]) + J @ B[t + 1]
        if modulus == RBPM:
            m[t] = sp**2 * chi[t] * output_variance(w, pi[t]) + (J**2) @ m[t + 1]
        elif modulus == RUOP:
            m[t] = B[t] ** 2
        else:
            m[t] = 0.0
        B[t, 0] = 0.0
        m[t, 0] = 0.0
    return B, m


# -- transition gradient and metric blocks (eqs. 25-26, Section 3.4 on RNNs) ---------------


def incoming_signal(a_t, x_t, inputs, j, gated, A):
    """dV_j^{t+1} / d(incoming parameters of j used at time t).

    The slots' activities a_{inputs[j,k]}^t (eq. 92: dV_j^{t+1}/dtau_{ijx_t} = a_i^t),
    followed, for the RNN, by the "input units" 1_{x_t = y} of the rho_{jy}
    (Section 1.2.1: rho is a weight from an input unit active when reading x_t).
    """
    u = [a_t[inputs[j, k]] for k in range(inputs.shape[1])]
    if not gated:
        u += [1.0 if x_t == y else 0.0 for y in range(A)]
    return np.array(u)


def transition_blocks(x, a, B, m, inputs, gated, A):
    """Extended per-(symbol, unit) gradient and metric blocks.

    Returns (G_ext, M_ext) of shapes (S, N+1, n) and (S, N+1, n, n) with
    n = D (gated) or D + A (RNN, the rho_{jy} appended as extra inputs):

        G^{(jy)}   = sum_t 1_{sym_t = y} u^t B_j^{t+1}              eq. (25)
        M~^{(jy)}  = sum_t 1_{sym_t = y} m~_j^{t+1} u^t (u^t)^T      eq. (26)

    with u^t = :func:`incoming_signal`.
    """
    N1, D = inputs.shape
    S = A if gated else 1
    n = D if gated else D + A
    G = np.zeros((S, N1, n))
    M = np.zeros((S, N1, n, n))
    for t in range(len(x)):
        sym = symbol_used(x[t], gated)
        for j in range(1, N1):
            u = incoming_signal(a[t], x[t], inputs, j, gated, A)
            G[sym, j] += u * B[t + 1, j]
            M[sym, j] += m[t + 1, j] * np.outer(u, u)
    return G, M


def quasi_diagonal_mask(n):
    """Entries kept by quasi-diagonal reduction (Section 2 / [Oll13 §2.3]): (0,0), (0,k), (k,0), (k,k)."""
    keep = np.eye(n, dtype=bool)
    keep[0, :] = True
    keep[:, 0] = True
    return keep


def accumulate_transition(x, a, B, m, inputs, gated, A, quasi_diagonal):
    """(G, G_rho, M, M_rho) in the kernel's layout, from :func:`transition_blocks`.

    G (S, N+1, D), M (S, N+1, D, D); for the RNN, G_rho[y, j] = dlogPr/drho_{jy} and
    M_rho[y, j] = M~_{rho_y rho_y}^{(j)} (= M~_{0 rho_y}^{(j)} since the input unit of
    rho_{jy} is 0/1-valued).  With ``quasi_diagonal``, M keeps only its (0,0),
    (0,k) and (k,k) entries (the upper row; (k,0) is left at zero).
    """
    N1, D = inputs.shape
    G_ext, M_ext = transition_blocks(x, a, B, m, inputs, gated, A)
    G = G_ext[:, :, :D].copy()
    M = M_ext[:, :, :D, :D].copy()
    if quasi_diagonal:
        keep = np.triu(quasi_diagonal_mask(D))
        M = np.where(keep, M, 0.0)
    G_rho = np.zeros((A, N1))
    M_rho = np.zeros((A, N1))
    if not gated:
        for y in range(A):
            G_rho[y] = G_ext[0, :, D + y]
            M_rho[y] = M_ext[0, :, D + y, D + y]
    return G, G_rho, M, M_rho


def solve_blocks(G, M, eps):
    """(M~^{(jy)} + eps I)^{-1} G^{(jy)} for every j >= 1, eq. (27); zero for j = 0."""
    S, N1, D = G.shape
    out = np.zeros((S, N1, D))
    for sym in range(S):
        for j in range(1, N1):
            out[sym, j] = np.linalg.solve(M[sym, j] + eps * np.eye(D), G[sym, j])
    return out


def quasi_diagonal_inverse(g, M, eps):
    """Quasi-diagonal reduction of (M + eps I)^{-1} g, eqs. (34)-(35) (and (20)-(21)).

    Index 0 is the always-activated input.  Each other input k is solved
    together with the bias only, as the 2x2 system

        [M00 + eps, M0k      ] [b_k ]   [g_0]
        [M0k,       Mkk + eps] [step_k] = [g_k]

    whose second component is eq. (34); the bias then takes the remaining
    share of g_0 (eq. 35): step_0 = (g_0 - sum_k M0k step_k) / (M00 + eps).
    Only M00, M0k, Mkk are read.
    """
    n = len(g)
    m00 = M[0, 0] + eps
    step = np.zeros(n)
    for k in range(1, n):
        pair = np.array([[m00, M[0, k]], [M[0, k], M[k, k] + eps]])
        step[k] = np.linalg.solve(pair, np.array([g[0], g[k]]))[1]
    step[0] = (g[0] - sum(M[0, k] * step[k] for k in range(1, n))) / m00
    return step


def solve_quasi_diagonal(G, M, G_rho, M_rho, eps, gated):
    """(out, out_rho): eqs. (34)-(35) per (symbol, unit) block; only M00, M0k, Mkk are read.

    For the RNN (``gated`` false, S = 1) the rho_{jy} are extra inputs of unit j
    with activity 1_{x_t=y}: their diagonal entry and their cross term with the
    bias are both M_rho[y, j] (a 0/1 activity squared is itself).  For gated
    models there is no rho and out_rho is zero.
    """
    S, N1, D = G.shape
    A = G_rho.shape[0]
    out = np.zeros((S, N1, D))
    out_rho = np.zeros((A, N1))
    for sym in range(S):
        for j in range(1, N1):
            if gated:
                out[sym, j] = quasi_diagonal_inverse(G[sym, j], M[sym, j], eps)
                continue
            n = D + A
            g = np.concatenate([G[sym, j], G_rho[:, j]])
            Mx = np.zeros((n, n))
            Mx[:D, :D] = M[sym, j]
            for y in range(A):
                Mx[D + y, D + y] = M_rho[y, j]  # (1_{x_t=y})^2 m~
                Mx[0, D + y] = M_rho[y, j]  # a_0 1_{x_t=y} m~
            step = quasi_diagonal_inverse(g, Mx, eps)
            out[sym, j] = step[:D]
            out_rho[:, j] = step[D:]
    return out, out_rho


# -- writing weights (eqs. 17-21) -----------------------------------------------------------


def writing_terms(x, chi, a, pi):
    """(W, h0, hd) of eqs. (17)-(19), without the damping eps_y.

        W_iy  = sum_t chi_t a_i^t (1_{x_t=y} - pi_t(y))                eq. (17)
        hd_iy = sum_t chi_t (a_i^t)^2 pi_t(y) (1 - pi_t(y))             eq. (18) (h_ii^y - eps_y)
        h0_iy = sum_t chi_t a_i^t pi_t(y) (1 - pi_t(y))                 eq. (19) (h_0i^y)
    """
    T, A = pi.shape
    N1 = a.shape[1]
    W = np.zeros((N1, A))
    h0 = np.zeros((N1, A))
    hd = np.zeros((N1, A))
    for t in range(T):
        target = np.zeros(A)
        target[x[t]] = 1.0
        for i in range(N1):
            for y in range(A):
                W[i, y] += chi[t] * a[t, i] * (target[y] - pi[t, y])
                hd[i, y] += chi[t] * a[t, i] ** 2 * pi[t, y] * (1.0 - pi[t, y])
                h0[i, y] += chi[t] * a[t, i] * pi[t, y] * (1.0 - pi[t, y])
    return W, h0, hd


def writing_hessian(x, chi, a, pi, y):
    """The full Fisher matrix / minus Hessian of log Pr w.r.t. (w_iy)_i for one y (eq. 50, y = y').

    I_{ii'} = sum_t chi_t pi_t(y) (1 - pi_t(y)) a_i^t a_i'^t; its diagonal is hd, its row 0 is h0.
    """
    N1 = a.shape[1]
    H = np.zeros((N1, N1))
    for t in range(len(x)):
        H += chi[t] * pi[t, y] * (1.0 - pi[t, y]) * np.outer(a[t], a[t])
    return H


def quasi_diagonal_step(W, h0, hd, damping):
    """The QDH direction of eqs. (20)-(21), written out literally, with h_ii^y = hd_iy + eps_y."""
    N1, A = W.shape
    out = np.zeros((N1, A))
    for y in range(A):
        h00 = hd[0, y] + damping[y]
        steps = {}
        for i in range(1, N1):
            hii = hd[i, y] + damping[y]
            h0i = h0[i, y]
            steps[i] = (W[i, y] - W[0, y] * h0i / h00) / (hii - h0i**2 / h00)  # eq. (20)
            out[i, y] = steps[i]
        out[0, y] = W[0, y] / h00 - sum(h0[i, y] / h00 * steps[i] for i in range(1, N1))  # eq. (21)
    return out


def forward_sensitivities(x, V, tau, inputs, leak, activation, gamma, e0):
    """Each unit's sensitivities to its own transition weights after the transitions reading ``x``, densely.

    e_j[y, q] <- gamma clip(leak + tau[x_t, j, 1] s'(V_j^t), -1, 1) e_j[y, q] + 1[y = x_t] a^t[inputs[j, q]],
    the rule of core/online/credit.py (slot 1 is the self-loop), from ``e0`` (codes, N+1, D); V holds
    V^0..V^T (row 0 of each: unit 0, a = 1)."""
    e = np.array(e0, dtype=np.float64)
    N1, D = inputs.shape
    for t, y in enumerate(x):
        a = s(V[t], activation)
        a[0] = 1.0
        for j in range(1, N1):
            c = leak + tau[y, j, 1] * s_prime(V[t, j], activation)
            e[:, j] *= gamma * min(max(c, -1.0), 1.0)
            e[y, j] += a[inputs[j]]
    return e


def online_writing_step(w, h0, hd, a, pi, target, first, width, discount, prior, eta, err=None, floor=1.0):
    """One symbol's online step on the writing weights, from the dense discounted Fisher matrix of each symbol.

    Online, the sums of eqs. (17)-(19) over the sequence become discounted
    sums over the stream, and the dampening eps_y of eq. (18) becomes a prior
    mass lambda renewed at the rate it is discounted.  For each code y in
    ``[first, width)`` (``first`` = 1 once the escape is retired), with
    gamma = ``discount`` and lambda = ``prior``:

        H^y <- (1 - gamma) H^y + gamma lambda I + pi(y) (1 - pi(y)) a a^T       eqs. (18)-(19), a_0 = 1
        W_iy = a_i (1_{target = y} - pi(y)) - gamma lambda w_iy                 eq. (17), one symbol, plus the prior
        w_.y <- w_.y + eta * (quasi-diagonal step of eqs. (20)-(21) with W and H^y)

    The state keeps only the entries of H^y the quasi-diagonal step reads
    (h_00 = hd[0], h_0i = h0[i], h_ii = hd[i]), so the dense matrix starts
    from them; its other entries are never read.  ``err``, when given,
    replaces 1_{target = y} - pi(y): the error the context weights' step left
    (:func:`context_block_update`).

    Each symbol's gamma is ``discount`` times max(4 pi(y) (1 - pi(y)), ``floor``):
    discounted by the evidence, no slower than ``floor`` times the clock.

    Returns new (w, h0, hd); columns outside ``[first, width)`` are unchanged.
    """
    w, h0, hd = (np.array(arr, dtype=np.float64, copy=True) for arr in (w, h0, hd))
    a = np.asarray(a, dtype=np.float64)
    N1 = len(a)
    if err is None:
        err = np.array([(1.0 if y == target else 0.0) - pi[y] for y in range(len(pi))])
    for y in range(first, width):
        H = np.diag(hd[:, y])
        H[0, 1:] = H[1:, 0] = h0[1:, y]
        gamma = discount * max(4.0 * pi[y] * (1.0 - pi[y]), floor)
        H = (1.0 - gamma) * H + gamma * prior * np.eye(N1) + pi[y] * (1.0 - pi[y]) * np.outer(a, a)
        W = err[y] * a - gamma * prior * w[:, y]
        step = quasi_diagonal_step(W[:, None], H[0, :, None], np.diag(H)[:, None], np.zeros(1))[:, 0]
        w[:, y] += eta * step
        h0[1:, y] = H[0, 1:]
        hd[:, y] = np.diag(H)
    return w, h0, hd


def diagonal_step(W, hd, damping):
    """The inverse diagonal Hessian ("DH") direction: W_iy / h_ii^y with h_ii^y of eq. (18)."""
    return W / (hd + np.asarray(damping)[None, :])


# -- time-unfolded network with dummy per-time parameters (Section 3.3) ----------------------


def unfolded_forward(x, chi, w, tau_t, rho_t, v0, inputs, leak, gated, activation):
    """Forward pass where time t uses its own copy of the transition parameters.

    ``tau_t[t]`` (N+1, D) is the dummy parameter theta^t = the slice of tau used
    at time t (tau[x_t] for gated models, tau[0] for the RNN), ``rho_t[t]`` (N+1,)
    the RNN's rho[x_t].  With tau_t[t] = tau[sym_t] and rho_t[t] = rho[x_t] this
    is :func:`forward` (Section 3.3: the meta-parameter sets every dummy copy).
    Returns (V, a, pi, loglik).
    """
    T = len(x)
    N1 = inputs.shape[0]
    A = w.shape[1]
    V = np.zeros((T + 1, N1))
    a = np.zeros((T + 1, N1))
    pi = np.zeros((T, A))
    V[0] = v0
    V[0, 0] = 0.0
    a[0] = s(V[0], activation)
    a[0, 0] = 1.0
    loglik = 0.0
    for t in range(T):
        pi[t] = softmax(a[t] @ w)
        if chi[t] != 0.0:
            loglik += chi[t] * np.log(pi[t, x[t]])
        V[t + 1] = leak * V[t] + a[t] @ dense_transition(tau_t[t], inputs)
        if not gated:
            V[t + 1] += rho_t[t]
        V[t + 1, 0] = 0.0
        a[t + 1] = s(V[t + 1], activation)
        a[t + 1, 0] = 1.0
    return V, a, pi, loglik


def unfold_parameters(x, tau, rho, gated):
    """(tau_t, rho_t): every dummy copy set to the recurrent network's parameter."""
    tau_t = np.array([tau[symbol_used(xt, gated)] for xt in x])
    rho_t = np.array([rho[xt] for xt in x])
    return tau_t, rho_t


# -- random test problems (uses seqd.core.model only, never the kernels) ---------------------


class Case:
    """A small random network and sequence, away from any special point of parameter space."""

    def __init__(self, model, activation, seed, units=5, degree=3, alphabet=4, length=12, mask="binary", scale=0.3):
        from seqd.core.model import ModelSpec, initialize, symbol_frequencies

        rng = np.random.default_rng(seed)
        self.spec = spec = ModelSpec(model, units, degree, activation, alphabet)
        self.model, self.activation = model, activation
        self.leak, self.gated, self.act_code = spec.leak, spec.gated, spec.activation_code
        self.N, self.D, self.A, self.T = units, spec.slots, alphabet, length
        self.S = alphabet if spec.gated else 1
        self.x = np.ascontiguousarray(rng.integers(0, alphabet, size=length), dtype=np.int64)
        if mask == "ones":
            chi = np.ones(length)
        elif mask == "binary":  # random 0/1 mask with at least one zero and one one
            chi = (rng.random(length) < 0.7).astype(np.float64)
            chi[0], chi[-2] = 0.0, 1.0
        elif mask == "weights":  # real-valued weights, some zero
            chi = rng.choice([0.0, 0.5, 1.0, 1.5], size=length)
            chi[1] = 0.0
        else:
            raise ValueError(mask)
        self.chi = np.ascontiguousarray(chi)
        nu, nu_tilde = symbol_frequencies(self.x, None, alphabet)
        p = initialize(spec, nu, nu_tilde, rng)
        p.writing_weights += scale * rng.standard_normal(p.writing_weights.shape)
        p.transition_weights += scale * rng.standard_normal(p.transition_weights.shape)
        p.transition_weights[:, 0, :] = 0.0
        if not spec.gated:
            p.input_weights += scale * rng.standard_normal(p.input_weights.shape)
            p.input_weights[:, 0] = 0.0
        p.initial_potential += scale * rng.standard_normal(p.initial_potential.shape)
        p.initial_potential[0] = 0.0
        self.params = p
        self.inputs = p.inputs
        self.w, self.tau, self.rho, self.v0 = (
            p.writing_weights, p.transition_weights, p.input_weights, p.initial_potential)

    def naive_forward(self, w=None, tau=None, rho=None, v0=None):
        return forward(self.x, self.chi, self.w if w is None else w, self.tau if tau is None else tau,
                       self.rho if rho is None else rho, self.v0 if v0 is None else v0,
                       self.inputs, self.leak, self.gated, self.activation)

    def __repr__(self):
        return f"Case({self.model}, {self.activation}, N={self.N}, D={self.D}, A={self.A}, T={self.T})"


# -- context units (seqd.core.online.sources, mixer), with dictionaries instead of hashing ---------
#
# Written from the module docstrings of ``sources.py`` and ``mixer.py`` and the sources' definitions: every
# context is a dictionary key holding the context itself (a tuple of symbols, a (column,
# symbol above) pair, a (field, word) pair), so no two contexts can ever share a table entry.
# Only the bounded parts of the model are kept as the kernels keep them: ``entries``
# (symbol, count) pairs per context, counts halved when one reaches ``limit``.

CTX_ORDER, CTX_COLUMN, CTX_WORD, CTX_MATCH, CTX_FIELD_COLUMN, CTX_INDIRECT, CTX_NUMBER = 0, 1, 2, 3, 4, 5, 6
# the number source (numbers.py): context lengths, longest first; numbers of up to 18 digits; streaks up to 3;
# vote positions: digits 0..15 (later ones merged), then the symbol after the number
NUMBER_CONTEXTS, NUMBER_DIGITS, NUMBER_STREAK, NUMBER_POSITIONS = (9, 4), 18, 3, 17
FIELD_SLOTS, POSITION_CAP = 64, 255  # the field column tells 64 fields apart, and positions in them up to 255
BEFORE_START = "before the stream"  # the symbol of a position before the stream, and "nothing above"
LINE_END, FIELD_SEPARATORS = 10, (32, 9)
COLUMN_CAP, FIELD_CAP = 1023, 255
MATCH_VERIFY_LENGTH, MATCH_BUCKET_COUNT = 32, 24
FOLLOWER_MODULUS = 257  # the indirect source keeps one follower per pair of last symbols, each taken mod 257


def field_starts(line):
    """Where each of the first FIELD_SLOTS fields of ``line`` starts (a field starts after each space or tab)."""
    starts = [0]
    for i, symbol in enumerate(line):
        if symbol in FIELD_SEPARATORS and len(starts) < FIELD_SLOTS:
            starts.append(i + 1)
    return starts


def is_word_symbol(symbol):
    """Letters and digits (ASCII), and every byte >= 128, make words."""
    return 48 <= symbol <= 57 or 65 <= symbol <= 90 or 97 <= symbol <= 122 or symbol >= 128


def match_bucket(length):
    """Lengths 0..15 one by one, then 16-23, 24-31, ... up to the last bucket."""
    if length < 16:
        return length
    return min(16 + (length - 16) // 8, MATCH_BUCKET_COUNT - 1)


def count_in_context(table, symbol, limit):
    """Count ``symbol`` in one context's ordered list of [symbol, count] entries.

    A symbol already counted (count > 0) gains one; a new one takes the first
    entry of least count (free entries have count 0); when a count reaches
    ``limit``, every count of the context becomes (c + 1) // 2.  Returns
    (whether a counted symbol was evicted, whether the counts were halved).
    """
    held = [e for e, (y, c) in enumerate(table) if c > 0 and y == symbol]
    evicted = False
    if held:
        e = held[0]
    else:
        e = min(range(len(table)), key=lambda i: table[i][1])  # the first of least count
        evicted = table[e][1] > 0
        table[e] = [symbol, 0]
    table[e][1] += 1
    halved = table[e][1] >= limit
    if halved:
        for entry in table:
            entry[1] = (entry[1] + 1) // 2
    return evicted, halved


class ContextReference:
    """The context sources of ``sources.py``: order-k chain, column, word and match.

    ``sources`` is a list of (kind, order) pairs as ``OnlineConfig.sources``.
    :meth:`activities` gives, per source, {symbol: x_s(symbol)} for the next
    symbol; :meth:`observe` counts the symbol and appends it to the history.

    * order k: the context is the tuple of the last k symbols (BEFORE_START for
      positions before the stream);
    * column: (column in the line capped at 1023, the symbol at that column of
      the previous line or BEFORE_START); ``above_limit`` (None: unbounded) is
      the longest previous line whose symbols are still known;
    * word: (field number capped at 255, the current word as a tuple);
    * field column: (field number capped at 63, position in that field capped at
      255, the symbol at that position of the same field of the previous line, or
      BEFORE_START past its end or further back than ``history`` symbols, and
      whether every symbol of the field so far equals the one above it so
      defined); the 64th field runs to the end of the line;
    * indirect: (the last symbol, the symbol that followed the previous time the
      last two symbols occurred, or None), the pairs told apart as a bounded
      table does: each symbol as (symbol + 1) mod 257, BEFORE_START as 0;
    * match: the most recent earlier position whose preceding ``match_min``
      symbols are the current last ``match_min``, looked up after each symbol
      while no match is followed, verified backwards up to 32 symbols.

    Nothing is ever lost unless :meth:`forget` / :meth:`forget_match` say so:
    a test that drives the kernels' bounded, hashed tables beside this model
    tells it which contexts lost their room to another.
    """

    def __init__(self, sources, cap, entries, limit, match_min, above_limit=None, history=None):
        self.sources = [tuple(int(v) for v in src) for src in sources]
        self.cap, self.entries, self.limit, self.match_min = cap, entries, limit, match_min
        self.above_limit = above_limit
        self.history_size = history
        self.tables = [dict() for _ in self.sources]  # context -> list of [symbol, count]
        self.order0 = {}
        self.history = []
        self.seen = []  # symbols in order of first appearance: the internal codes are 1, 2, ...
        self.line, self.previous_line = [], []
        self.field, self.word = 0, ()
        self.followers = {}  # (last, before) pair, each mod 257 -> the symbol that followed it last
        self.latest = {}  # last match_min symbols -> the position that followed them, latest
        self.match_length, self.match_at = 0, 0
        self.longest_match = 0
        self.hits = [0] * MATCH_BUCKET_COUNT
        self.tries = [0] * MATCH_BUCKET_COUNT
        self.events = Counter()  # what happened, so that a test can tell which paths it went through
        self._contexts = {}
        # the number source, per context length: context -> [last, change, length, after, streak], and the hit
        # and try counts per bucket; which table voted at this position, for what, in which bucket
        self.numbers = [dict() for _ in NUMBER_CONTEXTS]
        self.number_hits = [[0] * NUMBER_POSITIONS * (NUMBER_STREAK + 1) for _ in NUMBER_CONTEXTS]
        self.number_tries = [[0] * NUMBER_POSITIONS * (NUMBER_STREAK + 1) for _ in NUMBER_CONTEXTS]
        self.number_voted = None  # (table, symbol, bucket)

    # -- the contexts -------------------------------------------------------------------
    def context(self, s):
        if s not in self._contexts:  # the contexts of the current position, computed once
            self._contexts[s] = self._context(s)
        return self._contexts[s]

    def _context(self, s):
        kind, order = self.sources[s]
        t = len(self.history)
        if kind == CTX_ORDER:
            return tuple(self.history[i] if i >= 0 else BEFORE_START for i in range(t - order, t))
        if kind == CTX_COLUMN:
            col = len(self.line)
            known = self.above_limit is None or len(self.previous_line) <= self.above_limit
            above = self.previous_line[col] if known and col < len(self.previous_line) else BEFORE_START
            return (min(col, COLUMN_CAP), above)
        if kind == CTX_WORD:
            return (min(self.field, FIELD_CAP), self.word)
        if kind == CTX_FIELD_COLUMN:
            f = min(self.field, FIELD_SLOTS - 1)
            start = field_starts(self.line)[f]
            pos = len(self.line) - start
            same = all(self.line[start + i] == self._above(f, i) for i in range(pos))
            return (f, min(pos, POSITION_CAP), self._above(f, pos), same)
        if kind == CTX_INDIRECT:
            last, before = self._pair_key(1), self._pair_key(2)
            return (self.history[-1] if self.history else BEFORE_START, self.followers.get((last, before)))
        raise ValueError(kind)

    def _above(self, f, pos):
        """The symbol at position ``pos`` of field ``f`` of the previous line, as the field column sees it."""
        previous = field_starts(self.previous_line)
        if f >= len(previous):
            return BEFORE_START
        at = previous[f] + pos
        end = previous[f + 1] - 1 if f + 1 < len(previous) else len(self.previous_line)
        # how far back that symbol is from the position pos of field f of this line
        back = field_starts(self.line)[f] + pos + 1 + len(self.previous_line) - at
        if at < end and (self.history_size is None or back <= self.history_size):
            return self.previous_line[at]
        return BEFORE_START

    def _pair_key(self, back):
        """The symbol ``back`` steps before now as the indirect source's table tells symbols apart."""
        if back > len(self.history):
            return 0
        return (self.history[-back] + 1) % FOLLOWER_MODULUS

    def found(self, s):
        """Whether source s's current context has been counted before (match source: None)."""
        if self.sources[s][0] in (CTX_MATCH, CTX_NUMBER):
            return None
        return self.context(s) in self.tables[s]

    def order0_probability(self, y):
        """Krichevsky-Trofimov: (n(y) + 1/2) / (n + cap/2) over the whole stream."""
        return (self.order0.get(y, 0) + 0.5) / (len(self.history) + 0.5 * self.cap)

    # -- predictions --------------------------------------------------------------------
    def activities(self):
        """[{symbol: x_s(symbol)} for each source]: the non-zero activities (and the match's vote)."""
        out = []
        chain = []  # (counts, n, u) of the orders below with a known context, lowest first

        def interpolated(y):  # p_k(y) = (n_k(y) + u_k p_{k-1}(y)) / (n_k + u_k), from p_0 upwards
            p = self.order0_probability(y)
            for counts, n, u in chain:
                p = (counts.get(y, 0) + u * p) / (n + u)
            return p

        self.number_voted = None
        for s, (kind, _) in enumerate(self.sources):
            if kind == CTX_NUMBER:
                vote = self.number_vote()
                out.append({} if vote is None else {vote[0]: vote[1]})
                self.number_voted = None if vote is None else (vote[3], vote[0], vote[4])
                continue
            if kind == CTX_MATCH:
                votes = {}
                if self.match_length > 0:
                    b = match_bucket(self.match_length)
                    misses = self.tries[b] - self.hits[b]
                    votes[self.history[self.match_at]] = math.log((self.hits[b] + 0.5) / (misses + 0.5))
                out.append(votes)
                continue
            table = self.tables[s].get(self.context(s))
            counts = {y: c for y, c in table if c > 0} if table is not None else {}
            n, u = sum(counts.values()), len(counts)
            if kind == CTX_ORDER:
                out.append({y: math.log1p(c / (u * interpolated(y))) for y, c in counts.items()})
                if u:
                    chain.append((counts, n, u))
            else:
                out.append({y: math.log1p(c / (u * self.order0_probability(y))) for y, c in counts.items()})
        return out

    # -- learning -----------------------------------------------------------------------
    def observe(self, symbol):
        self._advance(symbol)
        self._contexts = {}

    def _advance(self, symbol):
        for s, (kind, _) in enumerate(self.sources):
            if kind == CTX_NUMBER:
                self._observe_numbers(symbol)
                continue
            if kind == CTX_MATCH:
                if self.match_length > 0:
                    b = match_bucket(self.match_length)
                    hit = self.history[self.match_at] == symbol
                    self.tries[b] += 1
                    self.hits[b] += int(hit)
                    self.events["match hit" if hit else "match miss"] += 1
                    if self.tries[b] >= self.limit:
                        self.hits[b] = (self.hits[b] + 1) // 2
                        self.tries[b] = (self.tries[b] + 1) // 2
                        self.events["match halved"] += 1
                    if hit:
                        self.match_length += 1
                        self.match_at += 1
                        self.longest_match = max(self.longest_match, self.match_length)
                    else:
                        self.match_length = 0
                continue
            table = self.tables[s].setdefault(self.context(s), [[0, 0] for _ in range(self.entries)])
            evicted, halved = count_in_context(table, symbol, self.limit)
            self.events["evicted"] += evicted
            self.events["halved"] += halved
        self.followers[(self._pair_key(1), self._pair_key(2))] = symbol
        if symbol not in self.order0:
            self.seen.append(symbol)
        self.order0[symbol] = self.order0.get(symbol, 0) + 1
        self.history.append(symbol)
        # lines, fields and words
        if symbol == LINE_END:
            self.previous_line, self.line = self.line, []
            self.field, self.word = 0, ()
        else:
            self.line.append(symbol)
            if symbol in FIELD_SEPARATORS:
                self.field, self.word = self.field + 1, ()
            elif is_word_symbol(symbol):
                self.word = self.word + (symbol,)
            else:
                self.word = ()
        # the match model: the latest position after the same match_min symbols
        t, m = len(self.history), self.match_min
        if m > 0 and t >= m:
            key = tuple(self.history[t - m:])
            if self.match_length == 0 and key in self.latest:
                candidate = self.latest[key]
                length = 0
                while length < MATCH_VERIFY_LENGTH and length < candidate and \
                        self.history[candidate - 1 - length] == self.history[t - 1 - length]:
                    length += 1
                if length >= m:
                    self.match_length, self.match_at = length, candidate
                    self.events["match found"] += 1
                    self.events["match verified to the limit"] += length == MATCH_VERIFY_LENGTH
            self.latest[key] = t

    # -- bounded storage ------------------------------------------------------------------
    def forget(self, s, context):
        """Drop what source s counted in ``context``: a bounded table gave its room to another context."""
        self.tables[s].pop(context, None)

    def forget_match(self, key):
        """Forget where the symbols ``key`` last occurred: a bounded match table gave their room away."""
        self.latest.pop(key, None)

    def selecting_rows(self):
        """The mixer's row of each source for the next symbol, and k, the number of contexts found.

        A source's state is 0 when it does not vote; for a count source with a
        context of total n over u distinct symbols: n itself for u = 1 and
        n <= 3, then 4 (n 4-5), 5 (6-9), 6 (10-19), 7 (20 and more); for u = 2,
        8 (n < 4), 9 (n < 10), 10; for u = 3 or 4, 11 (n < 8), 12; for u >= 5,
        13 (n < 16), 14.  The match source's is 1 + its length bucket, the
        buckets from 15 up merged.  The row is state * (S + 1) + k.
        """
        S = len(self.sources)
        k = sum(1 for s, (kind, _) in enumerate(self.sources) if kind not in (CTX_MATCH, CTX_NUMBER) and self.found(s))
        rows = []
        for s, (kind, _) in enumerate(self.sources):
            if kind == CTX_NUMBER:
                vote = self.number_vote()
                state = 1 + min(vote[2], 15) if vote is not None else 0
            elif kind == CTX_MATCH:
                state = 1 + min(match_bucket(self.match_length), 15) if self.match_length > 0 else 0
            else:
                table = self.tables[s].get(self.context(s)) or []
                counts = [c for _, c in table if c > 0]
                n, u = sum(counts), len(counts)
                if u == 0:
                    state = 0
                elif u == 1:
                    state = n if n <= 3 else 4 if n <= 5 else 5 if n <= 9 else 6 if n <= 19 else 7
                elif u == 2:
                    state = 8 if n < 4 else 9 if n < 10 else 10
                elif u <= 4:
                    state = 11 if n < 8 else 12
                else:
                    state = 13 if n < 16 else 14
            rows.append(state * (S + 1) + k)
        return rows, k

    def field_selecting_row(self, fields=1, positions=4):
        """The field-selected weights' row for the next symbol: ((min(field, fields - 1) * 2 + same) * positions
        + min(position, positions - 1)) * 4 + kind (16 * same + 4 * min(position, 3) + kind with one field and four
        positions, the rows of presets bytes-5 to bytes-7).

        same: every symbol of the field so far equals the one above it (the
        field column's last part); position: in the field (the 64th field runs
        to the end of the line); kind of the last symbol: 0 a digit, 1 an ASCII
        letter, 2 space, tab or newline, 3 anything else (and before the stream).
        """
        f = min(self.field, FIELD_SLOTS - 1)
        start = field_starts(self.line)[f]
        position = len(self.line) - start
        same = all(self.line[start + i] == self._above(f, i) for i in range(position))
        last = self.history[-1] if self.history else None
        if last is None:
            kind = 3
        elif chr(last).isdigit() and last < 128:
            kind = 0
        elif last < 128 and chr(last).isalpha():
            kind = 1
        elif last in (32, 9, LINE_END):
            kind = 2
        else:
            kind = 3
        return ((min(f, fields - 1) * 2 + int(same)) * positions + min(position, positions - 1)) * 4 + kind

    def order2_selecting_row(self):
        """The order-2-selected weights' row for the next symbol: (257 a + b) mod 4093, a the last symbol and b
        the one before, each mod 257, 256 standing for the time before the stream."""
        a, b = (self.history[-back] % 257 if len(self.history) >= back else 256 for back in (1, 2))
        return (257 * a + b) % 4093

    # -- the number source --------------------------------------------------------------
    def _run(self):
        """(where the run of digits that ends the history starts, its digits)."""
        start = len(self.history)
        while start > 0 and 48 <= self.history[start - 1] <= 57:
            start -= 1
        return start, self.history[start:]

    def _number_context(self, j, end):
        """The context of table j for a number starting at position ``end``: the symbols before it."""
        c = NUMBER_CONTEXTS[j]
        return tuple(self.history[i] if i >= 0 else BEFORE_START for i in range(end - c, end))

    def number_prediction(self, j):
        """Table j's prediction for the current (or next) number, as a list of symbols, or None.

        The number's context is the symbols before its first digit (none for a
        number that starts the stream); the prediction is last + change, in
        decimal, padded with zeros to the last one's length, then the symbol
        that followed the last one; none past 18 digits or below zero.
        """
        start, _ = self._run()
        if start == 0:
            return None
        entry = self.numbers[j].get(self._number_context(j, start))
        if entry is None:
            return None
        last, change, length, after, _ = entry
        if last + change < 0:
            return None
        digits = str(last + change).zfill(length)
        if len(digits) > NUMBER_DIGITS:
            return None
        return [ord(d) for d in digits] + [after]

    def number_vote(self):
        """(symbol, activity, position, table, bucket) of the number source's vote, or None: the longer
        context first."""
        start, run = self._run()
        for j in range(len(NUMBER_CONTEXTS)):
            predicted = self.number_prediction(j)
            if predicted is None or len(run) > len(predicted) - 1 or predicted[:len(run)] != run:
                continue  # none, or the run has left it
            symbol = predicted[len(run)]
            if symbol not in self.order0:  # never seen: no code to vote for
                continue
            n = len(predicted) - 1
            position = min(len(run), NUMBER_POSITIONS - 2) if len(run) < n else NUMBER_POSITIONS - 1
            streak = self.numbers[j][self._number_context(j, start)][4]
            bucket = position + NUMBER_POSITIONS * streak
            hits, tries = self.number_hits[j][bucket], self.number_tries[j][bucket]
            return symbol, math.log((hits + 0.5) / (tries - hits + 0.5)), position, j, bucket
        return None

    def _observe_numbers(self, symbol):
        if self.number_voted is not None:
            j, voted, b = self.number_voted
            self.number_tries[j][b] += 1
            self.number_hits[j][b] += int(voted == symbol)
            self.events["number hit" if voted == symbol else "number miss"] += 1
            if self.number_tries[j][b] >= self.limit:
                self.number_hits[j][b] = (self.number_hits[j][b] + 1) // 2
                self.number_tries[j][b] = (self.number_tries[j][b] + 1) // 2
        start, run = self._run()
        if 48 <= symbol <= 57 or not run or start == 0 or len(run) > NUMBER_DIGITS:
            return
        value = int(bytes(run).decode())
        for j, table in enumerate(self.numbers):
            context = self._number_context(j, start)
            entry = table.get(context)
            if entry is None:
                table[context] = [value, 0, len(run), symbol, 0]
                self.events["number stored"] += 1
                continue
            last, change, _, _, streak = entry
            entry[4] = min(streak + 1, NUMBER_STREAK) if value == last + change else 0
            entry[:4] = [value, value - last, len(run), symbol]
            self.events["number predicted" if value == last + change else "number changed"] += 1

    def codes(self):
        """{symbol: internal code}: codes 1, 2, ... in order of first appearance (0 is the escape)."""
        return {y: i + 1 for i, y in enumerate(self.seen)}


def metric_update_in_steps(P, u, weight, discount, prior, updates, grad=None):
    """A full metric block's update (``metric_blocks.metric_contribution``) taken one step after the other, in
    plain Python, in place; returns P grad after it when ``grad`` is given (``block_step``).

    Scale P by 1 / (1 - discount); Sherman-Morrison with s = sqrt(weight) u;
    the coordinate update along e_k, k = updates mod D, with mass D * discount *
    prior; each downdate computes the upper triangle and mirrors it.  The
    kernel's three sweeps promise these very bits.
    """
    D = len(u)

    def downdate(z, scale):
        for r in range(D):
            zr = z[r] * scale
            for c in range(r, D):
                P[r, c] = P[c, r] = P[r, c] - zr * z[c]

    inv_keep = 1.0 / (1.0 - discount)
    for r in range(D):
        for c in range(D):
            P[r, c] = P[r, c] * inv_keep
    s = [float(v) * math.sqrt(weight) for v in u]
    z, denom = [], 1.0
    for r in range(D):
        acc = 0.0
        for c in range(D):
            acc += P[r, c] * s[c]
        z.append(acc)
        denom += s[r] * acc
    downdate(z, 1.0 / denom)
    k, mass = updates % D, D * discount * prior
    column = [P[r, k] for r in range(D)]
    downdate(column, mass / (1.0 + mass * column[k]))
    if grad is None:
        return None
    out = np.zeros(D)
    for r in range(D):
        acc = 0.0
        for c in range(D):
            acc += P[r, c] * grad[c]
        out[r] = acc
    return out


def context_block_update(P, x, curv, err, w, discount, prior, centre, eta, updates):
    """One symbol's context weights after one symbol (``online.mixer.context_writing_update``), densely.

    The block's metric M = P^-1 is discounted by (1 - discount) and gains the
    one-symbol Fisher term curv x x^T; the prior mass discount * prior * I per
    contribution is given, as in ``metric_contribution``, to one coordinate at
    a time: coordinate (updates mod S) gains S * discount * prior.  The step is
    the Newton step M^-1 grad on the gradient of the log-loss plus the prior
    centred on ``centre``; the error left for the network's weights is what
    remains of ``err`` under the local quadratic model.

    Returns (P after, step, w after, err after).
    """
    S = len(x)
    M = (1.0 - discount) * np.linalg.inv(P) + curv * np.outer(x, x)
    k = updates % S
    M[k, k] += S * discount * prior
    P_after = np.linalg.inv(M)
    grad = err * x - discount * prior * (w - centre)
    step = P_after @ grad
    return P_after, step, w + eta * step, err - curv * eta * float(x @ step)


def selected_weights_step(method, P, h, u, x, curv, err, discount, prior, rate, updates, sets=()):
    """The mixer's step after one symbol (``mixer.selected_writing_update``), densely.

    ``u`` holds each source's selected weight, ``h`` their diagonal metric
    terms, ``x[s, y]`` each source's activity for code y (0 where it does not
    vote).  Every logit y holds sum_s x[s, y] u[s], so the log-loss gradient
    is g = x @ err, and the step direction is taken on g - discount * prior * u:

    * "diagonal": h <- (1 - discount) h + g^2 + discount * prior, step = that / h;
    * "block": the outer-product metric M = P^-1 is discounted by
      (1 - discount), gains g g^T and the cycled prior mass
      S * discount * prior on coordinate (updates mod S); step = M^-1 (that);
    * "gradient": the metric is untouched and the step is that itself.

    The error left is err - curv * (x^T (rate * step)).
    Returns (P after, h after, u after, err after).

    Each of ``sets``, a pair (h2, v): the weights of the selected row of a
    further shared set (field-selected, order-2-selected) and their diagonal
    terms, also in every logit.  Each set's direction is g - discount *
    prior * v, divided by h2 <- (1 - discount) h2 + g^2 + discount * prior
    except under "gradient"; v moves by rate times it, and the error left
    also loses curv * (x^T (rate * that)).  Returns (P, h, u, err, then h2
    after and v after for each set).
    """
    S = len(u)
    g = x @ err
    grad = g - discount * prior * u
    if method == "diagonal":
        h = (1.0 - discount) * h + g * g + discount * prior
        step = grad / h
    elif method == "block":
        M = (1.0 - discount) * np.linalg.inv(P) + np.outer(g, g)
        M[updates % S, updates % S] += S * discount * prior
        P = np.linalg.inv(M)
        step = P @ grad
    else:
        step = grad
    total, after = step, []
    for h2, v in sets:
        step2 = g - discount * prior * v
        if method != "gradient":
            h2 = (1.0 - discount) * h2 + g * g + discount * prior
            step2 = step2 / h2
        total = total + step2
        after += [h2, v + rate * step2]
    return (P, h, u + rate * step, err - curv * (x.T @ (rate * total)), *after)


class ProbabilityMaps:
    """The probability maps of ``core/online/maps.py``, written from their description with dictionaries.

    ``refine`` takes the mix's prediction (a list over the active codes),
    the match source's length and the code of the symbol it predicts, and the
    field set's row (0 without it); it returns the refined prediction.
    ``learn`` takes the code that came.
    """

    KNOTS = 17

    def __init__(self):
        self.tables = {}  # (map, row) -> estimates at the knots
        self.counts = {}
        self.last = None

    def _table(self, key):
        if key not in self.tables:
            self.tables[key] = [1.0 / (1.0 + math.exp(-(j - 8.0))) for j in range(self.KNOTS)]
            self.counts[key] = [0.0] * self.KNOTS
        return self.tables[key]

    def refine(self, pi, match_length, match_code, field_row):
        top = max(range(len(pi)), key=lambda y: (pi[y], -y))  # the most probable, the lowest code on a tie
        p = pi[top]
        x = 16.0 if p >= 1.0 else min(max(math.log(p / (1.0 - p)), -8.0), 8.0) + 8.0
        j = min(int(x), self.KNOTS - 2)
        f = x - j
        keys = (("A", match_bucket(match_length) * 2 + (1 if match_length > 0 and match_code == top else 0)),
                ("B", field_row * 4 + min(match_length, 3)))
        estimates = [(1 - f) * self._table(key)[j] + f * self._table(key)[j + 1] for key in keys]
        q = (2 * p + sum(estimates)) / 4
        self.last = (top, j, f, keys)
        rest = sum(pi[y] for y in range(len(pi)) if y != top)  # 1 - p, exactly
        if rest == 0.0:
            return list(pi)
        return [q if y == top else pi[y] * (1 - q) / rest for y in range(len(pi))]

    def learn(self, code):
        top, j, f, keys = self.last
        hit = 1.0 if code == top else 0.0
        for key in keys:
            table, counts = self._table(key), self.counts[key]
            for knot, share in ((j, 1 - f), (j + 1, f)):
                rate = max(1.0 / (counts[knot] + 1.5), 1.0 / 200)
                table[knot] += rate * share * (hit - table[knot])
                counts[knot] = min(counts[knot] + share, 255.0)


# -- context-tree weighting (seqd.core.ctw) ------------------------------------------------------------------


def ctw_bits(x, cap, depth, pool=None, alpha=0.5):
    """Per-symbol code lengths of multi-alphabet CTW over an open alphabet, and the whole sequence's length
    computed the other way: -log2 of the weighted probability P_w(root) of the batch recursion
    P_w(s) = P_e(s)/2 + prod_c P_w(cs)/2 (P_w = P_e at depth D) over the final tree, plus the bits that name
    each first occurrence.

    Contexts are tuples of codes, most recent first, read as 0 before the stream's start; code 0 is the
    escape, counted as one more letter with count 0 while the alphabet is open.  P_e(s) is the product of
    the conditionals (n_y + alpha) / (n + alpha letters) (KT's for alpha = 1/2) that s gave at the times it was on the path.  With
    ``pool``, at most that many nodes (the root included) exist: a context is added, shallowest first, only
    while there is room, and a context that does not exist predicts uniformly, as does everything below it
    (the batch total then does not apply: it is returned as None).
    """
    codes, counts, log_pe, beta = {}, {}, {}, {}
    nodes = {()}
    recent = [0] * depth
    per_symbol, naming = [], 0.0
    for symbol in x:
        symbol = int(symbol)
        full = len(codes) == cap
        active = list(range(1 if full else 0, len(codes) + 1))
        letters = len(active)
        path = [()]
        for d in range(1, depth + 1):
            s = tuple(recent[:d])
            if s not in nodes:
                if pool is not None and len(nodes) >= pool:
                    break
                nodes.add(s)
            path.append(s)

        def kt(s, y):
            n = counts.get(s, {})
            return (n.get(y, 0) + alpha) / (sum(n.values()) + alpha * letters)

        uniform = {y: 1.0 / letters for y in active}
        p = [None] * (depth + 2)
        p[depth + 1] = uniform
        for d in range(depth, -1, -1):
            if d >= len(path):
                p[d] = uniform
            elif d == depth:
                p[d] = {y: kt(path[d], y) for y in active}
            else:
                b = beta.get(path[d], 1.0)
                p[d] = {y: (b * kt(path[d], y) + p[d + 1][y]) / (b + 1.0) for y in active}
        code = codes.get(symbol, 0)
        bits = -math.log2(p[0][code])
        if code == 0:
            naming += math.log2(cap - len(codes))
            bits += math.log2(cap - len(codes))
        per_symbol.append(bits)
        for d, s in enumerate(path):
            log_pe[s] = log_pe.get(s, 0.0) + math.log(kt(s, code))
            if d < depth:
                beta[s] = beta.get(s, 1.0) * kt(s, code) / p[d + 1][code]
        if code == 0:
            code = codes[symbol] = len(codes) + 1
        for s in path:
            counts.setdefault(s, {})
            counts[s][code] = counts[s].get(code, 0) + 1
        recent = [code] + recent[:-1]

    def log_pw(s):
        own = log_pe.get(s, 0.0)
        if len(s) == depth:
            return own
        children = [c for c in nodes if len(c) == len(s) + 1 and c[:-1] == s]  # s, one symbol further back
        split = sum(log_pw(c) for c in children)  # a context never seen has P_w = 1
        top = max(own, split)
        return top + math.log(0.5 * math.exp(own - top) + 0.5 * math.exp(split - top))

    return np.array(per_symbol), (None if pool is not None else -log_pw(()) / math.log(2.0) + naming)


# -- the leaky echo-state network (seqd.core.esn) -----------------------------------------------------------

_MASK64 = (1 << 64) - 1


def splitmix_uniform(seed, j, y):
    """SplitMix64 of (seed, unit, y), as a uniform in [0, 1): the draw every seqd learner takes per (unit, symbol)."""
    z = (seed * 0x9E3779B97F4A7C15 + j * 0xBF58476D1CE4E5B9 + y * 0x94D049BB133111EB + 0x2545F4914F6CDD1D) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    z ^= z >> 31
    return (z >> 11) / float(1 << 53)


def esn_bits(x, cap, W, config):
    """Per-symbol code lengths of the echo-state learner from its reservoir matrix ``W`` (dense, N x N), in
    NumPy: h_t = (1 - alpha) tanh(W h_{t-1} + W^in x_t) + alpha h_{t-1} (seed 001, eq. 2.22, h_{t-1} inside),
    W^in's column of a symbol input_scale (2u - 1) with u = splitmix_uniform(seed, unit, symbol), and the
    readout pi = softmax(w^T (1, h)) over the open alphabet, stepped by :func:`online_writing_step`."""
    N = W.shape[0]
    h = np.zeros(N)
    w = np.zeros((N + 1, cap + 1))
    h0 = np.zeros((N + 1, cap + 1))
    hd = np.full((N + 1, cap + 1), config.writing_prior)
    codes, out = {}, []
    for symbol in x:
        symbol = int(symbol)
        width = len(codes) + 1
        first = 1 if len(codes) == cap else 0
        a = np.concatenate(([1.0], h))
        pi = np.zeros(cap + 1)
        pi[first:width] = softmax(a @ w[:, first:width])
        code = codes.get(symbol, 0)
        out.append(-math.log2(pi[code]) + (math.log2(cap - len(codes)) if code == 0 else 0.0))
        w, h0, hd = online_writing_step(w, h0, hd, a, pi, code, first, width, config.writing_discount,
                                        config.writing_prior, config.writing_rate, floor=config.writing_evidence_floor)
        if code == 0:
            n = len(codes)
            code = codes[symbol] = n + 1
            w[:, code] = 0.0
            w[0, code] = w[0, 0] - math.log(cap - n)
        u = np.array([splitmix_uniform(config.seed, j, symbol) for j in range(N)])
        h = (1.0 - config.leak) * np.tanh(W @ h + config.input_scale * (2.0 * u - 1.0)) + config.leak * h
    return np.array(out)


def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def lstm_weights(config):
    """The LSTM learner's first weights from its recipe: W[l][q] (N x K) uniform in [-scale, scale) from
    splitmix_uniform(seed, (l*G + q)*N + j, 2^40 + k), G gate rows (4, the GRU's 3); the first gate's biases
    (column 0) at forget_bias (the LSTM's forget gate), at -forget_bias (the GRU's update gate)."""
    N, L, G = config.cells, config.layers, 3 if config.cell == "gru" else 4
    K = (2 if L > 1 else 1) * N + 1
    W = np.zeros((L, G, N, K))
    for layer in range(L):
        for q in range(G):
            for j in range(N):
                row = (layer * G + q) * N + j
                W[layer, q, j] = [config.init_scale * (2.0 * splitmix_uniform(config.seed, row, (1 << 40) + k) - 1.0)
                                  for k in range(K)]
        W[layer, 0, :, 0] = -config.forget_bias if G == 3 else config.forget_bias
    return W


def gru_step(W, E, code, h, c):
    """One GRU step of every layer (seed 001 eqs. 2.6-2.9, tanh candidate as seed 002 eq. 2.26, h = (1-u) h +
    u g); ``c`` is carried unchanged.  Returns (h, c, saved) as :func:`lstm_step`."""
    L, N = h.shape
    h2, saved = np.zeros_like(h), []
    for layer in range(L):
        below = (h2[layer - 1],) if layer > 0 else ()
        z = np.concatenate(([1.0], h[layer]) + below)
        K = len(z)
        u = _sigmoid(W[layer, 0, :, :K] @ z + E[layer][0, code])
        r = _sigmoid(W[layer, 1, :, :K] @ z + E[layer][1, code])
        zr = np.concatenate(([1.0], r * h[layer]) + below)
        g = np.tanh(W[layer, 2, :, :K] @ zr + E[layer][2, code])
        h2[layer] = (1 - u) * h[layer] + u * g
        saved.append((z, zr, u, r, g))
    return h2, c.copy(), saved


def gru_window_gradient(W, steps):
    """As :func:`lstm_window_gradient`, for :func:`gru_step`."""
    L, _, N, _ = W.shape
    gW, gE = np.zeros_like(W), {}
    back_h = np.zeros((L, N))
    for code, saved, dh in reversed(steps):
        down = np.zeros(N)
        for layer in reversed(range(L)):
            z, zr, u, r, g = saved[layer]
            K, hp = len(z), z[1:N + 1]
            e_h = dh[layer] + back_h[layer] + (down if layer < L - 1 else 0.0)
            d_u = e_h * (g - hp) * u * (1 - u)
            d_g = e_h * u * (1 - g ** 2)
            into_zr = W[layer, 2, :, :K].T @ d_g
            d_r = into_zr[1:N + 1] * hp * r * (1 - r)
            d = np.stack([d_u, d_r, d_g])
            gW[layer, 0, :, :K] += np.outer(d_u, z)
            gW[layer, 1, :, :K] += np.outer(d_r, z)
            gW[layer, 2, :, :K] += np.outer(d_g, zr)
            gE[(layer, code)] = gE.get((layer, code), 0.0) + d
            into_z = W[layer, 0, :, :K].T @ d_u + W[layer, 1, :, :K].T @ d_r
            back_h[layer] = e_h * (1 - u) + into_z[1:N + 1] + into_zr[1:N + 1] * r
            down = into_z[N + 1:] + into_zr[N + 1:]
    return gW, gE


def lstm_step(W, E, code, h, c):
    """One step of every layer (seed 001 eqs. 2.1-2.5 with a forget gate), as matrices: returns the new (h, c)
    and what back-propagation needs (each layer's input z, gates and previous cell)."""
    L, N = h.shape
    h2, c2, saved = np.zeros_like(h), np.zeros_like(c), []
    for layer in range(L):
        z = np.concatenate(([1.0], h[layer]) + ((h2[layer - 1],) if layer > 0 else ()))
        pre = W[layer, :, :, :len(z)] @ z + E[layer][:, code, :]
        f, i, o = _sigmoid(pre[0]), _sigmoid(pre[1]), _sigmoid(pre[3])
        g = np.tanh(pre[2])
        c2[layer] = f * c[layer] + i * g
        h2[layer] = o * np.tanh(c2[layer])
        saved.append((z, f, i, g, o, c[layer], c2[layer]))
    return h2, c2, saved


def lstm_window_gradient(W, steps):
    """d/dW and d/dE of a window's log-likelihood: ``steps`` is [(code, saved, dh)] in time order, dh (L x N) the
    softmax's error into that step's outputs; back through time and down through the layers, as matrices."""
    L, _, N, _ = W.shape
    gW, gE = np.zeros_like(W), {}
    back_h, back_c = np.zeros((L, N)), np.zeros((L, N))
    for code, saved, dh in reversed(steps):
        down = np.zeros(N)
        for layer in reversed(range(L)):
            z, f, i, g, o, c_prev, c = saved[layer]
            e_h = dh[layer] + back_h[layer] + (down if layer < L - 1 else 0.0)
            tc = np.tanh(c)
            e_c = back_c[layer] + e_h * o * (1 - tc ** 2)
            d = np.stack([e_c * c_prev * f * (1 - f), e_c * g * i * (1 - i), e_c * i * (1 - g ** 2),
                          e_h * tc * o * (1 - o)])
            gW[layer, :, :, :len(z)] += d[:, :, None] * z[None, None, :]
            gE[(layer, code)] = gE.get((layer, code), 0.0) + d
            back_c[layer] = e_c * f
            into_z = np.einsum("qjk,qj->k", W[layer, :, :, :len(z)], d)
            back_h[layer] = into_z[1:N + 1]
            down = into_z[N + 1:]
    return gW, gE


def lstm_bits(x, cap, config):
    """Per-symbol code lengths of the online LSTM learner (``seqd.core.lstm``), in NumPy: predict with the softmax
    over the open alphabet, score, step the softmax, every ``horizon`` steps the window's gradient step (rescaled
    to ``clip`` when longer), then read the symbol."""
    N, L, H, rate = config.cells, config.layers, config.horizon, config.learning_rate
    W = lstm_weights(config)
    G = W.shape[1]
    step_of, gradient_of = (gru_step, gru_window_gradient) if G == 3 else (lstm_step, lstm_window_gradient)
    E = [np.zeros((G, cap + 1, N)) for _ in range(L)]
    v = np.zeros((L * N + 1, cap + 1))
    h, c = np.zeros((L, N)), np.zeros((L, N))
    codes, out, window = {}, [], []  # window: [code, saved, dh] per step
    for symbol in x:
        symbol = int(symbol)
        width, first = len(codes) + 1, 1 if len(codes) == cap else 0
        a = np.concatenate(([1.0], h.ravel()))
        pi = np.zeros(cap + 1)
        pi[first:width] = softmax(a @ v[:, first:width])
        code = codes.get(symbol, 0)
        out.append(-math.log2(pi[code]) + (math.log2(cap - len(codes)) if code == 0 else 0.0))
        err = np.zeros(cap + 1)
        err[first:width] = -pi[first:width]
        err[code] += 1.0
        if window:
            window[-1][2] = (v[1:] @ err).reshape(L, N)
        v += rate * np.outer(a, err)
        if len(window) == H:
            gW, gE = gradient_of(W, window)
            norm = math.sqrt((gW ** 2).sum() + sum((g ** 2).sum() for g in gE.values()))
            step = rate * (config.clip / norm if 0 < config.clip < norm else 1.0)
            W += step * gW
            for (layer, row), g in gE.items():
                E[layer][:, row, :] += step * g
            window = []
        if code == 0:
            n = len(codes)
            code = codes[symbol] = n + 1
            v[:, code] = 0.0
            v[0, code] = v[0, 0] - math.log(cap - n)
            for layer in range(L):
                for q in range(G):
                    E[layer][q, code] = [config.init_scale * (2.0 * splitmix_uniform(
                        config.seed, (layer * G + q) * N + j, symbol) - 1.0) for j in range(N)]
        h, c, saved = step_of(W, E, code, h, c)
        window.append([code, saved, None])
    return np.array(out)


def scornn_start(config):
    """A new scoRNN's A, D and W by the recipe (``seqd.core.scornn.state``), with NumPy's inverse; an ENRNN's
    (``config.short`` > 0) W with its short-term T (eq. 2.97) and coupling, and T."""
    N, m = config.units, config.short
    q = N - m
    A = np.zeros((q, q))
    for block in range(q // 2):
        s = splitmix_uniform(config.seed, block, 1 << 40)
        A[2 * block, 2 * block + 1], A[2 * block + 1, 2 * block] = s, -s
    d = np.ones(q)
    d[:config.negatives] = -1.0
    W = np.zeros((N, N))
    W[:q, :q] = cayley(A, d)
    T = np.zeros((m, m))
    for block in range(m // 2):
        s = splitmix_uniform(config.seed, block, (1 << 40) + 1)  # t = 2 atan s
        gamma = 2.0 * splitmix_uniform(config.seed, block, (1 << 40) + 2) - 1.0
        t = 2.0 * math.atan(s)
        T[2 * block:2 * block + 2, 2 * block:2 * block + 2] = gamma * np.array([[math.cos(t), -math.sin(t)],
                                                                                [math.sin(t), math.cos(t)]])
    if m % 2:
        T[m - 1, m - 1] = 2.0 * splitmix_uniform(config.seed, m // 2, (1 << 40) + 2) - 1.0
    W[q:, q:] = T
    if m and config.coupling:
        bound = math.sqrt(6.0 / N)
        for i in range(q):
            for j in range(m):
                W[i, q + j] = bound * (2.0 * splitmix_uniform(config.seed, i, (1 << 41) + j) - 1.0)
    return A, d, W, T


def dominant_eigenpair(T):
    """lambda = alpha + i beta (beta >= 0) of largest modulus, and its right and left eigenvectors u, w
    (T u = lambda u, T^T w = lambda w), by NumPy's eig."""
    values, right = np.linalg.eig(T)
    k = max(range(len(values)), key=lambda i: (round(abs(values[i]), 12), values[i].imag))
    lam = complex(values[k].real, abs(values[k].imag))
    if values[k].imag < 0:
        right = right.conj()
    left_values, left = np.linalg.eig(T.T)
    kk = int(np.argmin(np.abs(left_values - lam)))
    return lam, right[:, k], left[:, kk]


def eigenvalue_normalized_gradient(T, G, margin):
    """dL/dT of L with gradient G in W = T / (rho(T) + margin) (seed 002, Proposition 2.7.1, eq. 2.95, with the
    inner 1/rho that makes it exact for any margin)."""
    lam, u, w = dominant_eigenpair(T)
    rho = abs(lam)
    S = np.outer(w, u) / (w @ u)
    C = lam.real * S.real + lam.imag * S.imag
    W = T / (rho + margin)
    return (G - np.sum(G * W) / rho * C) / (rho + margin)

def cayley(A, d):
    """W = (I + A)^{-1} (I - A) D (seed 002, eq. 2.54)."""
    I = np.eye(len(d))
    return np.linalg.solve(I + A, I - A) * d[None, :]


def modrelu(z, b):
    """sgn(z) max(|z| + b, 0) (seed 002, eq. 2.33)."""
    return np.sign(z) * np.maximum(np.abs(z) + b, 0.0)


def scornn_bits(x, cap, config):
    """Per-symbol code lengths of the online scoRNN learner, in NumPy: the LSTM's protocol (:func:`lstm_bits`) with
    eqs. 2.58-2.59's step, the window's gradient by back-propagation as matrices, b kept <= 0, A stepped
    along Theorem 2.5.3's V^T - V, the window's steps scaled down to a gradient of norm ``clip`` (seed 001,
    Algorithm 2); an ENRNN's coupling stepped along its gradient and T along eq. 2.95's (or its own before
    rho(T) first exceeds 1, or where lambda is nearly multiple), that step clipped on its own, W's short-term
    block T / (rho + margin) from then on (seed 002 §2.7)."""
    N, H, rate, m = config.units, config.horizon, config.learning_rate, config.short
    q = N - m
    A, d, W, T = scornn_start(config)
    normalized = False
    U, b, v = np.zeros((cap + 1, N)), np.zeros(N), np.zeros((N + 1, cap + 1))
    h = np.zeros(N)
    codes, out, window = {}, [], []  # window: [code, h_prev, z, dh]
    for symbol in x:
        symbol = int(symbol)
        width, first = len(codes) + 1, 1 if len(codes) == cap else 0
        a = np.concatenate(([1.0], h))
        pi = np.zeros(cap + 1)
        pi[first:width] = softmax(a @ v[:, first:width])
        code = codes.get(symbol, 0)
        out.append(-math.log2(pi[code]) + (math.log2(cap - len(codes)) if code == 0 else 0.0))
        err = np.zeros(cap + 1)
        err[first:width] = -pi[first:width]
        err[code] += 1.0
        if window:
            window[-1][3] = v[1:] @ err
        v += rate * np.outer(a, err)
        if len(window) == H:
            gW, gU, gb, carry = np.zeros((N, N)), {}, np.zeros(N), np.zeros(N)
            for c, h_prev, z, dh in reversed(window):
                delta = dh + carry
                active = (np.abs(z) + b > 0) & (z != 0)
                dz = np.where(active, delta, 0.0)
                gb += np.where(active, delta * np.sign(z), 0.0)
                gU[c] = gU.get(c, 0.0) + dz
                gW += np.outer(dz, h_prev)
                carry = W.T @ dz
            parameters = np.ones((N, N), dtype=bool)
            parameters[q:, :q] = False
            parameters[:q, q:] = config.coupling
            norm = math.sqrt(np.sum(gW[parameters] ** 2) + np.sum(gb ** 2) + sum(np.sum(g ** 2) for g in gU.values()))
            scale = config.clip / norm if 0 < config.clip < norm else 1.0
            step, skew_step = rate * scale, config.skew_rate * scale
            for c, g in gU.items():
                U[c] += step * g
            b = np.minimum(b + step * gb, 0.0)  # kept <= 0
            if config.skew_rate > 0:
                V = np.linalg.inv(np.eye(q) + A).T @ gW[:q, :q] @ (np.diag(d) + W[:q, :q].T)
                A = A + skew_step * (V.T - V)
                W[:q, :q] = cayley(A, d)
            if m:
                if config.coupling:
                    W[:q, q:] += step * gW[:q, q:]
                G = gW[q:, q:]
                direction = eigenvalue_normalized_gradient(T, G, config.margin) if normalized else G
                if normalized:
                    lam, u, w = dominant_eigenpair(T)
                    if abs(w @ u) / (np.linalg.norm(w) * np.linalg.norm(u)) < 1e-8:  # lambda (nearly) multiple
                        direction = G
                size = np.linalg.norm(direction)
                T = T + step * (config.clip / size if size > config.clip else 1.0) * direction  # clipped alone
                rho = abs(dominant_eigenpair(T)[0])
                normalized = normalized or rho > 1.0
                W[q:, q:] = T / (rho + config.margin) if normalized else T
            window = []
        if code == 0:
            n = len(codes)
            code = codes[symbol] = n + 1
            v[:, code] = 0.0
            v[0, code] = v[0, 0] - math.log(cap - n)
            U[code] = [config.init_scale * (2.0 * splitmix_uniform(config.seed, j, symbol) - 1.0) for j in range(N)]
        z = U[code] + W @ h
        window.append([code, h, z, None])
        h = modrelu(z, b)
    return np.array(out)


def batch_lstm_log_likelihood(inputs, w, W, R, P, x, chi):
    """Seed 000's batch LSTM (``core/training/lstm.py``, Graves's peephole cell on the models' sparse graph) as dense
    matrices: each gate's slot weights scattered into an (N+1) x (N+1) matrix over a_t = (1, h_t).  Returns
    (sum_t chi_t log pi_t(x_t) in nats, the predictions pi)."""
    N1, A = w.shape
    dense = np.zeros((4, N1, N1))
    for q in range(4):
        for j in range(1, N1):
            for k, src in enumerate(inputs[j]):
                dense[q, j, src] += W[q, j, k]
    a, c = np.zeros(N1), np.zeros(N1)
    a[0] = 1.0
    total, pis = 0.0, np.zeros((len(x), A))
    for t, y in enumerate(x):
        pis[t] = softmax(a @ w)
        total += chi[t] * np.log(pis[t, y])
        pre = dense @ a + R[:, y, :]
        i = _sigmoid(pre[0] + P[0] * c)
        f = _sigmoid(pre[1] + P[1] * c)
        g = np.tanh(pre[2])
        c_next = f * c + i * g
        o = _sigmoid(pre[3] + P[2] * c_next)
        a = np.concatenate(([1.0], (o * np.tanh(c_next))[1:]))
        c = np.concatenate(([0.0], c_next[1:]))
    return total, pis


# -- tables that grow (core/online/growth.py), written from its docstring -------------------------------

MASK64 = (1 << 64) - 1


def splitmix_finalize(z: int) -> int:
    """SplitMix64's finalizer on a Python integer (Steele, Lea and Flood 2014; Vigna's splitmix64.c)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def fold(h: int, value: int) -> int:
    """One value folded into a running 64-bit context hash, as ``hashing.absorb`` does."""
    return (((h ^ (value + 1)) * 0x9E3779B97F4A7C15) + 0x632BE59BD9B4E019) & MASK64


def bucket_seen(word: int) -> int:
    """n0 + n1 of the bit history of a bitwise bucket's first node: the high byte of its first history word,
    n0 in its high nibble (``bits/mixing.py``: a full set gives up the bucket whose first node saw least)."""
    h = int(word) >> 8
    return (h >> 4) + (h & 15)


class GrowingTable:
    """One source's growing context table as a list of buckets, each a list of (tag, counts) in slot order.

    A context's hash z (the source's mix of its key) names its bucket by the top ``bits - way_bits`` bits
    and its tag by the 32 bits below the top ``min_bits - way_bits`` (lowest bit set).  A context found in
    its bucket is counted where it is; a new one takes the bucket's first empty slot, or else the slot
    whose counts add up to least (the first of them).  Doubling moves every context to the bucket its hash
    names in the larger table, keeping the order of the slots it came from.  Contexts are known here by
    their hashes, so nothing is taken from the tag but the check.
    """

    def __init__(self, source: int, bits: int, ways: int = 4, min_bits: int = 10):
        self.source, self.bits, self.ways = source, bits, ways
        self.way_bits = ways.bit_length() - 1
        self.shift = 64 - (min_bits - self.way_bits) - 32
        self.buckets = [[None] * ways for _ in range(1 << (bits - self.way_bits))]
        self.hash_of = {}  # tag -> the hash it came from (for the doubling)

    def _z(self, key: int) -> int:
        return splitmix_finalize(key ^ (((self.source + 1) * 0xD6E8FEB86659FD93) & MASK64))

    def locate(self, key: int) -> tuple[int, bool, int]:
        """(slot, found, tag) as ``growth.find_slot`` gives them."""
        z = self._z(key)
        bucket = z >> (64 - self.bits + self.way_bits)
        tag = ((z >> self.shift) & 0xFFFFFFFF) | 1
        ways = self.buckets[bucket]
        for w, held in enumerate(ways):
            if held is not None and held[0] == tag:
                return bucket * self.ways + w, True, tag
        for w, held in enumerate(ways):
            if held is None:
                return bucket * self.ways + w, False, tag
        least = min(range(self.ways), key=lambda w: (sum(ways[w][1]), w))
        return bucket * self.ways + least, False, tag

    def count(self, key: int, counts: list[int]) -> None:
        """Give the context of ``key`` these counts, in the slot :meth:`locate` names."""
        slot, _, tag = self.locate(key)
        self.buckets[slot // self.ways][slot % self.ways] = (tag, list(counts))
        self.hash_of[tag] = self._z(key)

    def double(self) -> None:
        """Each context to the first free slot of the bucket its hash names, in the order of the slots it
        leaves; a context of bucket 0 that stays in bucket 0 keeps its slot."""
        self.bits += 1
        old, self.buckets = self.buckets, [[None] * self.ways for _ in range(1 << (self.bits - self.way_bits))]
        for j, ways in enumerate(old):
            for w, held in enumerate(ways):
                if held is not None:
                    bucket = self.hash_of[held[0]] >> (64 - self.bits + self.way_bits)
                    if bucket == 0:  # (only a context of bucket 0 can stay in it)
                        self.buckets[0][w] = held
            for held in ways:
                if held is not None:
                    bucket = self.hash_of[held[0]] >> (64 - self.bits + self.way_bits)
                    if bucket != 0:
                        to = self.buckets[bucket]
                        to[to.index(None)] = held

    def arrays(self, size: int, entries: int) -> tuple[np.ndarray, np.ndarray]:
        """(tags, counts) of ``size`` slots as the kernel's arrays hold them (zeros where empty)."""
        tags, counts = np.zeros(size, np.uint32), np.zeros((size, entries), np.uint16)
        for b, ways in enumerate(self.buckets):
            for w, held in enumerate(ways):
                if held is not None:
                    tags[b * self.ways + w], counts[b * self.ways + w] = held[0], held[1]
        return tags, counts
