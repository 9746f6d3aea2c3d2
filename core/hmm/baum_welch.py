"""The HMM's kernels: the scaled forward and backward passes with EM's expected counts, and the predictive
probabilities of a sequence.  Equations in the package docstring (``__init__.py``)."""

from __future__ import annotations

import math

from ..jit import kernel


@kernel
def forward(succ, trans, emit, init, x, alpha, scale):
    """alpha[t] (each summing to 1) and scale[t] = c_t over ``x``; returns log P(x) in nats."""
    N, D = succ.shape
    total = 0.0
    for t in range(x.shape[0]):
        if t == 0:
            for i in range(N):
                alpha[0, i] = init[i]
        else:
            for j in range(N):
                alpha[t, j] = 0.0
            for i in range(N):
                mass = alpha[t - 1, i]
                for d in range(D):
                    alpha[t, succ[i, d]] += mass * trans[i, d]
        c = 0.0
        for j in range(N):
            alpha[t, j] *= emit[j, x[t]]
            c += alpha[t, j]
        if c <= 0.0:
            return -math.inf  # the model gives x_t probability 0
        for j in range(N):
            alpha[t, j] /= c
        scale[t] = c
        total += math.log(c)
    return total


@kernel
def expected_counts(succ, trans, emit, x, alpha, scale, beta, edges, writes, first):
    """After :func:`forward`: the backward pass, and EM's expected counts added to ``edges`` (N, D: edge use),
    ``writes`` (N, A: symbols written by each state) and ``first`` (N: the first state).  ``beta`` is a work
    array of 2N entries (beta_t, then beta_{t-1} as it is formed)."""
    N, D = succ.shape
    T = x.shape[0]
    for i in range(N):
        beta[i] = 1.0
    for t in range(T - 1, -1, -1):
        for i in range(N):
            g = alpha[t, i] * beta[i]
            writes[i, x[t]] += g
            if t == 0:
                first[i] += g
        if t == 0:
            break
        # beta_{t-1}(i) = sum_j a(i, j) e(j, x_t) beta_t(j) / c_t; the edges used from t-1 to t
        for i in range(N):
            b = 0.0
            for d in range(D):
                j = succ[i, d]
                w = trans[i, d] * emit[j, x[t]] * beta[j] / scale[t]
                edges[i, d] += alpha[t - 1, i] * w
                b += w
            beta[N + i] = b
        for i in range(N):
            beta[i] = beta[N + i]


@kernel
def predictive(succ, trans, emit, init, x, state, work, out):
    """out[t] = P(x_t | x_<t) under the model, filtering from ``init``; ``state`` and ``work`` are N-entry work
    arrays."""
    N, D = succ.shape
    for i in range(N):
        state[i] = init[i]
    for t in range(x.shape[0]):
        p = 0.0
        for j in range(N):
            work[j] = state[j] * emit[j, x[t]]
            p += work[j]
        out[t] = p
        for j in range(N):
            state[j] = 0.0
        if p <= 0.0:
            for j in range(N):
                state[j] = init[j]  # probability 0: start again from the first state's law
            continue
        for i in range(N):
            mass = work[i] / p
            for d in range(D):
                state[succ[i, d]] += mass * trans[i, d]
