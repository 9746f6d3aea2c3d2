"""The GRU's step and its window's back-propagation (the rest is the LSTM's: ``cell.py``).

Per cell j of a layer, z_t its input (1, own h_{t-1}, the layer below's h_t) and x_t the symbol's weights:

    u_t = sigma(W_u z_t + x_u)               (update gate, seed 001 eq. 2.6; z_t of seed 002 eq. 2.24)
    r_t = sigma(W_r z_t + x_r)               (reset gate, eq. 2.7 / 2.25)
    g_t = tanh(W_g (1, r_t * h_{t-1}, below) + x_g)   (candidate, eq. 2.9 with tanh as eq. 2.26)
    h_t = (1 - u_t) h_{t-1} + u_t g_t        (eq. 2.8)

Seed 002's eq. (2.26) swaps the roles of u and 1 - u; the update gates' biases start at -forget_bias, so that a
new GRU keeps its state as a new LSTM does.
"""

from __future__ import annotations

from ..jit import kernel
from ..kernels.elementary import logistic, tanh
from .config import BELOW, CANDIDATE, DH, DPRE, FILLED, RESET, UPDATE


@kernel
def gru_forward(st, code):
    """One step of every layer (eqs. 2.6-2.9); window slot FILLED -> FILLED + 1, and ``a`` the new outputs."""
    s = st.counts[FILLED]
    L, G, N, K = st.w.shape
    for layer in range(L):
        own = st.hs[s, layer]
        gates = st.gates[s, layer]
        for j in range(N):
            for q in range(2):  # UPDATE, RESET
                row = st.w[layer, q, j]
                z = st.embed[layer, q, code, j] + row[0]
                for k in range(N):
                    z += row[1 + k] * own[k]
                if layer > 0:
                    below = st.hs[s + 1, layer - 1]
                    for k in range(N):
                        z += row[1 + N + k] * below[k]
                gates[q, j] = logistic(z)
        for j in range(N):
            row = st.w[layer, CANDIDATE, j]
            z = st.embed[layer, CANDIDATE, code, j] + row[0]
            for k in range(N):
                z += row[1 + k] * (gates[RESET, k] * own[k])
            if layer > 0:
                below = st.hs[s + 1, layer - 1]
                for k in range(N):
                    z += row[1 + N + k] * below[k]
            g = tanh(z)
            gates[CANDIDATE, j] = g
            u = gates[UPDATE, j]
            st.hs[s + 1, layer, j] = (1.0 - u) * own[j] + u * g
    st.codes[s] = code
    st.counts[FILLED] = s + 1
    for layer in range(L):
        for j in range(N):
            st.a[1 + layer * N + j] = st.hs[s + 1, layer, j]


@kernel
def gru_window_gradient(st):
    """The gradient of the window's log-likelihood in w and embed, accumulated into grad_w and grad_embed, as
    ``cell.window_gradient`` has it for the LSTM."""
    L, G, N, K = st.w.shape
    H = st.counts[FILLED]
    carry_h = st.carry[0]
    for layer in range(L):
        for j in range(N):
            carry_h[layer, j] = 0.0
    dh = st.scratch[DH]
    below_err = st.scratch[BELOW]
    into_reset = st.scratch[DPRE + RESET]
    for s in range(H - 1, -1, -1):
        code = st.codes[s]
        for layer in range(L - 1, -1, -1):
            gates = st.gates[s, layer]
            own = st.hs[s, layer]
            for j in range(N):
                dh[j] = st.dh[s, layer * N + j] + carry_h[layer, j]
                if layer < L - 1:
                    dh[j] += below_err[j]
                u = gates[UPDATE, j]
                g = gates[CANDIDATE, j]
                st.scratch[DPRE + UPDATE, j] = dh[j] * (g - own[j]) * u * (1.0 - u)
                st.scratch[DPRE + CANDIDATE, j] = dh[j] * u * (1.0 - g * g)
                carry_h[layer, j] = dh[j] * (1.0 - u)  # h_{t-1}'s direct path, eq. (2.8)
                into_reset[j] = 0.0
                if layer > 0:
                    below_err[j] = 0.0
            for j in range(N):  # through the candidate, into r_t * h_{t-1}
                d = st.scratch[DPRE + CANDIDATE, j]
                row = st.w[layer, CANDIDATE, j]
                for k in range(N):
                    into_reset[k] += row[1 + k] * d
            for k in range(N):
                r = gates[RESET, k]
                carry_h[layer, k] += into_reset[k] * r
                into_reset[k] = into_reset[k] * own[k] * r * (1.0 - r)  # now the reset gate's error
            below = st.hs[s + 1, layer - 1] if layer > 0 else own
            for q in range(G):
                for j in range(N):
                    d = st.scratch[DPRE + q, j]
                    row = st.w[layer, q, j]
                    grad = st.grad_w[layer, q, j]
                    st.grad_embed[layer, q, code, j] += d
                    grad[0] += d
                    if q == CANDIDATE:
                        for k in range(N):
                            grad[1 + k] += d * gates[RESET, k] * own[k]
                    else:
                        for k in range(N):
                            grad[1 + k] += d * own[k]
                            carry_h[layer, k] += row[1 + k] * d
                    if layer > 0:
                        for k in range(N):
                            grad[1 + N + k] += d * below[k]
                            below_err[k] += row[1 + N + k] * d
