"""Forward pass: evolution (eqs. 8, 10, 13) and softmax output (eq. 6)."""

from __future__ import annotations

import math

import numpy as np

from ..jit import inline_kernel, kernel
from .activation import activate
from .elementary import exp_of, log_of


@kernel
def softmax_into(a_t, w, out, numerics):
    """out[y] = pi(y) = softmax_y(sum_i a_i w_iy), eq. (6), exp under ``numerics``. Returns nothing."""
    for y in range(w.shape[1]):
        out[y] = 0.0
    _vote_and_normalize(a_t, w, out, numerics)


@kernel
def softmax_offset_into(a_t, w, offset, out, numerics):
    """out[y] = softmax_y(offset_y + sum_i a_i w_iy): eq. (6) with votes from outside the network."""
    for y in range(w.shape[1]):
        out[y] = offset[y]
    _vote_and_normalize(a_t, w, out, numerics)


@inline_kernel
def _next_voter(a_t, i):
    """The first unit from ``i`` on whose activity is not 0 (``a_t.shape[0]`` if none)."""
    while i < a_t.shape[0] and a_t[i] == 0.0:
        i += 1
    return i


@inline_kernel
def _vote_and_normalize(a_t, w, out, numerics):
    # the units' votes: each output adds them in the order of the units, skipping a unit whose activity
    # is 0, as one pass per unit would; four units per pass over the outputs load and store each output
    # once instead of four times (the same operations on each number, so the same bits)
    A = w.shape[1]
    N = w.shape[0]
    i = _next_voter(a_t, 0)
    while i < N:
        j = _next_voter(a_t, i + 1)
        k = _next_voter(a_t, j + 1) if j < N else N
        r = _next_voter(a_t, k + 1) if k < N else N
        ai = a_t[i]
        if r < N:
            aj, ak, ar = a_t[j], a_t[k], a_t[r]
            for y in range(A):
                out[y] = out[y] + ai * w[i, y] + aj * w[j, y] + ak * w[k, y] + ar * w[r, y]
            i = _next_voter(a_t, r + 1)
        else:  # the last one to three units
            for y in range(A):
                out[y] += ai * w[i, y]
            for q in (j, k):
                if q < N:
                    aq = a_t[q]
                    for y in range(A):
                        out[y] += aq * w[q, y]
            break
    top = out[0]
    for y in range(1, A):
        if out[y] > top:
            top = out[y]
    total = 0.0
    for y in range(A):
        out[y] = exp_of(numerics, out[y] - top)
        total += out[y]
    for y in range(A):
        out[y] /= total


@kernel
def evolve_into(net, v_t, a_t, x_t, v_next, a_next):
    """One transition of ``net`` (a ``network.Network``): V^{t+1} from V^t, a^t and the symbol x_t (eqs. 8, 10, 13)."""
    inputs, tau, rho, leak, gated, activation, numerics = net
    N1, D = inputs.shape
    sym = x_t if gated else 0
    a_next[0] = 1.0
    v_next[0] = 0.0
    for j in range(1, N1):
        acc = leak * v_t[j]
        if not gated:
            acc += rho[x_t, j]
        for k in range(D):
            acc += tau[sym, j, k] * a_t[inputs[j, k]]
        v_next[j] = acc
        a_next[j] = activate(acc, activation, numerics)


@kernel
def forward(net, x, chi, w, v0, V, a, pi):
    """Run ``net`` (a ``network.Network``) with writing weights ``w`` over ``x`` from ``V^0 = v0``.

    Fills ``V`` and ``a`` (T+1, N+1; row t is time t, column 0 is unit 0 with
    a_0 = 1) and ``pi`` (T, A), and returns ``sum_t chi_t log pi_t(x_t)`` in
    nats, the objective of eq. (16).
    """
    T = x.shape[0]
    V[0, 0] = 0.0
    a[0, 0] = 1.0
    for j in range(1, V.shape[1]):
        V[0, j] = v0[j]
        a[0, j] = activate(V[0, j], net.activation, net.numerics)
    loglik = 0.0
    for t in range(T):
        softmax_into(a[t], w, pi[t], net.numerics)
        if chi[t] != 0.0:
            loglik += chi[t] * log_of(net.numerics, pi[t, x[t]])
        evolve_into(net, V[t], a[t], x[t], V[t + 1], a[t + 1])
    return loglik


@kernel
def regularized_log2_probs(x, pi, out):
    """log2 of ((1 - 1/(t+2)) pi_t + 1/(t+2) uniform)(x_t): seed 000 §4, "Regularization"."""
    A = pi.shape[1]
    for t in range(x.shape[0]):
        lam = 1.0 / (t + 2.0)
        out[t] = math.log2((1.0 - lam) * pi[t, x[t]] + lam / A)


def allocate(T: int, units: int, alphabet_size: int):
    """Buffers (V, a, pi) for a forward pass over T symbols."""
    return np.empty((T + 1, units + 1)), np.empty((T + 1, units + 1)), np.empty((T, alphabet_size))
