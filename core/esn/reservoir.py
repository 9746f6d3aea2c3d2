"""The reservoir's kernels: draw it, estimate its spectral radius, and the learner's per-symbol loop.

Equations in the package docstring (``__init__.py``).
"""

from __future__ import annotations

import math

from ..jit import kernel
from ..kernels.elementary import exp, log, tanh
from ..initialization import unit_uniform
from ..online.writing import Writing, writing_update
from ..readout import code_length, join_readout, predict
from .config import ACTIVE, RATE, SYMBOLS

SOURCE_DRAWS = 1 << 40  # the uniforms that pick a unit's sources and weights are (seed, unit, SOURCE_DRAWS + k)
POWER_STEPS = 1000  # power iteration steps of the spectral radius estimate (and as many to settle first)


@kernel
def draw_reservoir(seed, sources, weights):
    """W: each unit reads ``C`` distinct units, drawn uniformly, with weights uniform in [-1, 1)."""
    N, C = sources.shape
    for j in range(N):
        for c in range(C):
            # the r-th unit not taken yet, r uniform among the N - c left
            r = int(unit_uniform(seed, j, SOURCE_DRAWS + 2 * c) * (N - c))
            unit = -1
            while r >= 0:
                unit += 1
                taken = False
                for q in range(c):
                    if sources[j, q] == unit:
                        taken = True
                if not taken:
                    r -= 1
            sources[j, c] = unit
            weights[j, c] = 2.0 * unit_uniform(seed, j, SOURCE_DRAWS + 2 * c + 1) - 1.0


@kernel
def _apply(sources, weights, v, out):
    """out = W v (v and out indexed by unit, 0..N-1)."""
    N, C = sources.shape
    for j in range(N):
        s = 0.0
        for c in range(C):
            s += weights[j, c] * v[sources[j, c]]
        out[j] = s


@kernel
def spectral_radius(sources, weights, v, u):
    """An estimate of rho(W): the mean growth per step of |W^k v| over POWER_STEPS steps, after as many to
    settle, from v = (1, ..., 1); basic IEEE operations and seqd's own log only, so every machine draws the
    same reservoir.  ``v`` and ``u`` are work arrays of N entries or more."""
    N = sources.shape[0]
    for j in range(N):
        v[j] = 1.0
    total = 0.0
    for step in range(2 * POWER_STEPS):
        _apply(sources, weights, v, u)
        norm = 0.0
        for j in range(N):
            norm += u[j] * u[j]
        norm = math.sqrt(norm)
        if norm == 0.0:
            return 0.0  # W is nilpotent on v: no echo at all
        for j in range(N):
            v[j] = u[j] / norm
        if step >= POWER_STEPS:
            total += log(norm)
    return exp(total / POWER_STEPS)


@kernel
def learn_buffer(st, cap, seed, leak, input_scale, discount, prior, floor, numerics, symbols, bits):
    """Predict, score and learn each of ``symbols`` (bits[t]: its prequential code length), then read it."""
    for t in range(symbols.shape[0]):
        symbol = symbols[t]
        width = predict(st.a, st.w, st.pi, st.counts[ACTIVE], cap, numerics)
        first = 1 if st.counts[ACTIVE] == cap else 0
        code = st.code_of[symbol]
        bits[t] = code_length(st.pi, code, cap, st.counts[ACTIVE])
        curv = st.scratch[0]
        err = st.scratch[1]
        for y in range(first, width):
            p = st.pi[y]
            curv[y] = p * (1.0 - p)
            err[y] = (1.0 if y == code else 0.0) - p
        writing_update(Writing(st.w, st.h0, st.hd, st.scratch), st.reals[RATE], discount, prior, floor, st.a, first,
                       width)
        if code == 0:
            code = _join(st, cap, seed, input_scale, prior, symbol)
        read(st, code, leak)
        st.counts[SYMBOLS] += 1


@kernel
def read(st, code, leak):
    """The reservoir reads the symbol of ``code``, eq. (2.22): h_t = (1 - alpha) tanh(W h_{t-1} + W^in x_t) +
    alpha h_{t-1}, into ``a``."""
    N = st.sources.shape[0]
    for j in range(N):
        s = st.inputs[code, j]
        for c in range(st.sources.shape[1]):
            s += st.weights[j, c] * st.a[1 + st.sources[j, c]]
        st.work[1 + j] = (1.0 - leak) * tanh(s) + leak * st.a[1 + j]
    for j in range(1, N + 1):
        st.a[j] = st.work[j]


@kernel
def _join(st, cap, seed, input_scale, prior, symbol):
    """``symbol`` gets the next code: its readout column takes the escape's share of the mass (its bias is the
    escape's less log(symbols still unseen)), its input weights are drawn from (seed, unit, symbol)."""
    code = join_readout(st.code_of, st.symbol_of, st.counts, ACTIVE, st.w, cap, symbol)
    for i in range(st.w.shape[0]):
        st.h0[i, code] = 0.0
        st.hd[i, code] = prior
    for j in range(st.sources.shape[0]):
        st.inputs[code, j] = input_scale * (2.0 * unit_uniform(seed, j, symbol) - 1.0)
    return code
