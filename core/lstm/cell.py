"""The LSTM learner's kernels: draw the weights, predict, one step forward, the window's back-propagation and
its update, and the per-symbol loop (the GRU's step and back-propagation: ``gru.py``).

Equations in the package docstring (``__init__.py``).
"""

from __future__ import annotations

import math

from ..jit import kernel
from ..kernels.elementary import logistic, tanh
from ..initialization import unit_uniform
from ..readout import code_length, first_in_window, join_readout, predict, readout_step
from .config import (ACTIVE, BELOW, CANDIDATE, DH, DPRE, ERR, FILLED, FORGET, INPUT, NORM, OUTPUT, SYMBOLS,
                     TANH_CELL, UPDATE)
from .gru import gru_forward, gru_window_gradient

WEIGHT_DRAWS = 1 << 40  # the uniforms of the gates' weights are (seed, row, WEIGHT_DRAWS + k); a symbol's are
# (seed, row, symbol), row = (layer * gates + gate) * cells + cell


@kernel
def draw_weights(seed, scale, forget_bias, w):
    """w uniform in [-scale, scale); the LSTM's forget gates' biases at ``forget_bias``, the GRU's update gates'
    at -forget_bias (both keep the state at first)."""
    L, G, N, K = w.shape
    for layer in range(L):
        for q in range(G):
            for j in range(N):
                row = (layer * G + q) * N + j
                for k in range(K):
                    w[layer, q, j, k] = scale * (2.0 * unit_uniform(seed, row, WEIGHT_DRAWS + k) - 1.0)
        for j in range(N):
            if G == 3:
                w[layer, UPDATE, j, 0] = -forget_bias
            else:
                w[layer, FORGET, j, 0] = forget_bias


@kernel
def forward(st, code):
    """One step, eqs. (2.1)-(2.5) with a forget gate: every layer reads ``code``, its own last output and (above
    the first) the new output of the layer below; window slot FILLED -> FILLED + 1, and ``a`` the new outputs."""
    s = st.counts[FILLED]
    L, _, N, K = st.w.shape
    for layer in range(L):
        own = st.hs[s, layer]
        for j in range(N):
            pre_f = 0.0
            pre_i = 0.0
            pre_g = 0.0
            pre_o = 0.0
            for q in range(4):
                row = st.w[layer, q, j]
                z = st.embed[layer, q, code, j] + row[0]
                for k in range(N):
                    z += row[1 + k] * own[k]
                if layer > 0:
                    below = st.hs[s + 1, layer - 1]
                    for k in range(N):
                        z += row[1 + N + k] * below[k]
                if q == FORGET:
                    pre_f = z
                elif q == INPUT:
                    pre_i = z
                elif q == CANDIDATE:
                    pre_g = z
                else:
                    pre_o = z
            f = logistic(pre_f)
            i = logistic(pre_i)
            g = tanh(pre_g)
            o = logistic(pre_o)
            cell = f * st.cs[s, layer, j] + i * g
            tc = tanh(cell)
            st.cs[s + 1, layer, j] = cell
            st.hs[s + 1, layer, j] = o * tc
            gates = st.gates[s, layer]
            gates[FORGET, j] = f
            gates[INPUT, j] = i
            gates[CANDIDATE, j] = g
            gates[OUTPUT, j] = o
            gates[TANH_CELL, j] = tc
    st.codes[s] = code
    st.counts[FILLED] = s + 1
    for layer in range(L):
        for j in range(N):
            st.a[1 + layer * N + j] = st.hs[s + 1, layer, j]


@kernel
def window_gradient(st):
    """The gradient of the window's log-likelihood (nats) in w and embed, accumulated into grad_w and
    grad_embed: back-propagation through its steps, from the errors ``dh`` the softmax sent into each step's
    outputs; the window's first state is held fixed (truncated BPTT)."""
    L, _, N, K = st.w.shape
    H = st.counts[FILLED]
    carry_h = st.carry[0]
    carry_c = st.carry[1]
    for layer in range(L):
        for j in range(N):
            carry_h[layer, j] = 0.0
            carry_c[layer, j] = 0.0
    dh = st.scratch[DH]
    below_err = st.scratch[BELOW]
    for s in range(H - 1, -1, -1):
        code = st.codes[s]
        for layer in range(L - 1, -1, -1):
            gates = st.gates[s, layer]
            for j in range(N):
                dh[j] = st.dh[s, layer * N + j] + carry_h[layer, j]
                if layer < L - 1:
                    dh[j] += below_err[j]
                f = gates[FORGET, j]
                i = gates[INPUT, j]
                g = gates[CANDIDATE, j]
                o = gates[OUTPUT, j]
                tc = gates[TANH_CELL, j]
                dc = carry_c[layer, j] + dh[j] * o * (1.0 - tc * tc)
                st.scratch[DPRE + FORGET, j] = dc * st.cs[s, layer, j] * f * (1.0 - f)
                st.scratch[DPRE + INPUT, j] = dc * g * i * (1.0 - i)
                st.scratch[DPRE + CANDIDATE, j] = dc * i * (1.0 - g * g)
                st.scratch[DPRE + OUTPUT, j] = dh[j] * tc * o * (1.0 - o)
                carry_c[layer, j] = dc * f
                carry_h[layer, j] = 0.0
                if layer > 0:
                    below_err[j] = 0.0
            own = st.hs[s, layer]
            below = st.hs[s + 1, layer - 1] if layer > 0 else own
            for q in range(4):
                for j in range(N):
                    d = st.scratch[DPRE + q, j]
                    row = st.w[layer, q, j]
                    grad = st.grad_w[layer, q, j]
                    st.grad_embed[layer, q, code, j] += d
                    grad[0] += d
                    for k in range(N):
                        grad[1 + k] += d * own[k]
                        carry_h[layer, k] += row[1 + k] * d
                    if layer > 0:
                        for k in range(N):
                            grad[1 + N + k] += d * below[k]
                            below_err[k] += row[1 + N + k] * d


@kernel
def apply_gradient(st, rate, clip):
    """w += rate * g and embed += rate * g over the window's gradient g, g rescaled to norm ``clip`` when longer
    (seed 001, Algorithm 2; clip = 0: never); the gradient is then cleared and its norm kept in reals[NORM]."""
    L, G, N, K = st.w.shape
    H = st.counts[FILLED]
    total = 0.0
    for layer in range(L):
        for q in range(G):
            for j in range(N):
                for k in range(K):
                    total += st.grad_w[layer, q, j, k] * st.grad_w[layer, q, j, k]
    for s in range(H):
        if first_in_window(st.codes, s):
            code = st.codes[s]
            for layer in range(L):
                for q in range(G):
                    for j in range(N):
                        total += st.grad_embed[layer, q, code, j] * st.grad_embed[layer, q, code, j]
    norm = math.sqrt(total)
    st.reals[NORM] = norm
    step = rate
    if clip > 0.0 and norm > clip:
        step = rate * (clip / norm)
    for layer in range(L):
        for q in range(G):
            for j in range(N):
                for k in range(K):
                    st.w[layer, q, j, k] += step * st.grad_w[layer, q, j, k]
                    st.grad_w[layer, q, j, k] = 0.0
    for s in range(H):
        if first_in_window(st.codes, s):
            code = st.codes[s]
            for layer in range(L):
                for q in range(G):
                    for j in range(N):
                        st.embed[layer, q, code, j] += step * st.grad_embed[layer, q, code, j]
                        st.grad_embed[layer, q, code, j] = 0.0


@kernel
def _close_window(st):
    """The window's last state becomes the next window's first."""
    H = st.counts[FILLED]
    for layer in range(st.hs.shape[1]):
        for j in range(st.hs.shape[2]):
            st.hs[0, layer, j] = st.hs[H, layer, j]
            st.cs[0, layer, j] = st.cs[H, layer, j]
    st.counts[FILLED] = 0


@kernel
def learn_buffer(st, cap, seed, rate, clip, scale, numerics, symbols, bits):
    """Predict, score and learn each of ``symbols`` (bits[t]: its prequential code length), then read it; every
    ``horizon`` symbols, the window's gradient step."""
    horizon = st.codes.shape[0]
    for t in range(symbols.shape[0]):
        symbol = symbols[t]
        width = predict(st.a, st.v, st.pi, st.counts[ACTIVE], cap, numerics)
        first = 1 if st.counts[ACTIVE] == cap else 0
        code = st.code_of[symbol]
        bits[t] = code_length(st.pi, code, cap, st.counts[ACTIVE])
        readout_step(st.v, st.a, st.pi, st.scratch[ERR], st.dh, st.counts[FILLED] - 1, code, first, width, rate)
        gru = st.w.shape[1] == 3
        if st.counts[FILLED] == horizon:
            if gru:
                gru_window_gradient(st)
            else:
                window_gradient(st)
            apply_gradient(st, rate, clip)
            _close_window(st)
        if code == 0:
            code = _join(st, cap, seed, scale, symbol)
        if gru:
            gru_forward(st, code)
        else:
            forward(st, code)
        st.counts[SYMBOLS] += 1


@kernel
def _join(st, cap, seed, scale, symbol):
    """``symbol`` gets the next code and its softmax column (``open_alphabet.join_readout``), its input weights
    drawn from (seed, row, symbol)."""
    code = join_readout(st.code_of, st.symbol_of, st.counts, ACTIVE, st.v, cap, symbol)
    L, G, N, _ = st.w.shape
    for layer in range(L):
        for q in range(G):
            for j in range(N):
                row = (layer * G + q) * N + j
                st.embed[layer, q, code, j] = scale * (2.0 * unit_uniform(seed, row, symbol) - 1.0)
    return code
