"""The scoRNN learner's kernels: the scaled Cayley transform and its gradient (seed 002, eq. 2.54 and
Theorem 2.5.3), one step forward, the window's back-propagation and update, and the per-symbol loop; the
softmax readout's kernels are shared (``readout.py``).

Equations in the package docstring (``__init__.py``).
"""

from __future__ import annotations

import math

from ..jit import kernel
from ..initialization import unit_uniform
from ..readout import code_length, first_in_window, join_readout, predict, readout_step
from .config import ACTIVE, ERR, FILLED, NORM, SYMBOLS
from .enrnn import short_step


@kernel
def cayley(skew, signs, inverse, w):
    """w = (I + A)^{-1} (I - A) D (eq. 2.54; into w's first N rows and columns, N = A's size), and (I + A)^{-1}
    kept in inverse[:, N:] for the gradient: Gauss-Jordan
    elimination with partial pivoting on [I + A | I] (I + A is invertible: A's eigenvalues are imaginary)."""
    N = skew.shape[0]
    for i in range(N):
        for j in range(N):
            inverse[i, j] = skew[i, j] + (1.0 if i == j else 0.0)
            inverse[i, N + j] = 1.0 if i == j else 0.0
    for col in range(N):
        pivot = col
        for r in range(col + 1, N):
            if abs(inverse[r, col]) > abs(inverse[pivot, col]):
                pivot = r
        if pivot != col:
            for j in range(2 * N):
                t = inverse[col, j]
                inverse[col, j] = inverse[pivot, j]
                inverse[pivot, j] = t
        scale = 1.0 / inverse[col, col]
        for j in range(2 * N):
            inverse[col, j] *= scale
        for r in range(N):
            if r != col:
                factor = inverse[r, col]
                if factor != 0.0:
                    for j in range(2 * N):
                        inverse[r, j] -= factor * inverse[col, j]
    for i in range(N):  # w = M (I - A) D, M = (I + A)^{-1}
        for j in range(N):
            s = inverse[i, N + j]
            for k in range(N):
                s -= inverse[i, N + k] * skew[k, j]
            w[i, j] = s * signs[j]


@kernel
def skew_gradient(grad_w, inverse, w, signs, work):
    """work[1] = V^T - V, V = (I + A)^{-T} G (D + W^T): the gradient in A of what has gradient G = grad_w in W
    (Theorem 2.5.3, eq. 2.60), with (I + A)^{-1} from :func:`cayley`."""
    N = w.shape[0]
    p = work[0]
    for i in range(N):  # P = M^T G
        for j in range(N):
            p[i, j] = 0.0
        for k in range(N):
            m = inverse[k, N + i]
            if m != 0.0:
                for j in range(N):
                    p[i, j] += m * grad_w[k, j]
    v = work[1]
    for i in range(N):  # V = P (D + W^T): V[i, j] = P[i, j] d_j + sum_k P[i, k] W[j, k]
        for j in range(N):
            s = p[i, j] * signs[j]
            for k in range(N):
                s += p[i, k] * w[j, k]
            v[i, j] = s
    for i in range(N):
        for j in range(i + 1, N):
            d = v[j, i] - v[i, j]
            v[i, j] = d
            v[j, i] = -d
        v[i, i] = 0.0


@kernel
def forward(st, code):
    """One step (eqs. 2.58-2.59): z = U x + W h_{t-1}, h = sgn(z) max(|z| + b, 0); slot FILLED -> FILLED + 1."""
    s = st.counts[FILLED]
    N = st.w.shape[0]
    prev = st.hs[s]
    for j in range(N):
        z = st.embed[code, j]
        for k in range(N):
            z += st.w[j, k] * prev[k]
        st.zs[s, j] = z
        m = abs(z) + st.bias[j]
        h = 0.0
        if m > 0.0 and z != 0.0:
            h = m if z > 0.0 else -m
        st.hs[s + 1, j] = h
        st.a[1 + j] = h
    st.codes[s] = code
    st.counts[FILLED] = s + 1


@kernel
def window_gradient(st):
    """The gradient of the window's log-likelihood (nats) in W, U and b, accumulated into grad_w, grad_embed and
    grad_bias: back through the window's steps from the errors ``dh`` the softmax sent into each, the window's
    first state held fixed.  Where |z| + b > 0 and z != 0, dh/dz = 1 and dh/db = sgn(z); elsewhere both are 0."""
    N = st.w.shape[0]
    carry = st.carry
    for j in range(N):
        carry[j] = 0.0
    dz = st.scratch[1]
    for s in range(st.counts[FILLED] - 1, -1, -1):
        code = st.codes[s]
        for j in range(N):
            z = st.zs[s, j]
            delta = st.dh[s, j] + carry[j]
            if abs(z) + st.bias[j] > 0.0 and z != 0.0:
                dz[j] = delta
                st.grad_bias[j] += delta if z > 0.0 else -delta
            else:
                dz[j] = 0.0
            st.grad_embed[code, j] += dz[j]
            carry[j] = 0.0
        prev = st.hs[s]
        for j in range(N):
            d = dz[j]
            if d != 0.0:
                for k in range(N):
                    st.grad_w[j, k] += d * prev[k]
                    carry[k] += st.w[j, k] * d


@kernel
def apply_gradient(st, rate, skew_rate, clip, coupling, margin):
    """U += rate g_U, b += rate g_b (then at most 0), A += skew_rate (V^T - V) and W's first Q rows and columns
    from the new A (eq. 2.54: orthogonal to rounding); an ENRNN's short-term blocks then (``enrnn.short_step``);
    both rates scaled by clip / |g| when the gradient's norm |g| exceeds ``clip`` > 0 (seed 001, Algorithm 2);
    the gradient is cleared, its norm in W, U and b kept in reals[NORM]."""
    N = st.w.shape[0]
    Q = st.skew.shape[0]
    H = st.counts[FILLED]
    total = 0.0
    for j in range(N):
        total += st.grad_bias[j] * st.grad_bias[j]
        for k in range(N):
            if (j < Q and (k < Q or coupling)) or (j >= Q and k >= Q):  # W's parameters: not its zero blocks
                total += st.grad_w[j, k] * st.grad_w[j, k]
    for s in range(H):
        if first_in_window(st.codes, s):
            for j in range(N):
                total += st.grad_embed[st.codes[s], j] * st.grad_embed[st.codes[s], j]
    norm = math.sqrt(total)
    st.reals[NORM] = norm
    if clip > 0.0 and norm > clip:
        rate = rate * (clip / norm)
        skew_rate = skew_rate * (clip / norm)
    for s in range(H):
        if first_in_window(st.codes, s):
            code = st.codes[s]
            for j in range(N):
                st.embed[code, j] += rate * st.grad_embed[code, j]
                st.grad_embed[code, j] = 0.0
    for j in range(N):  # kept <= 0: online h is never reset, and a positive b would add b to |h_j| at every step
        st.bias[j] = min(st.bias[j] + rate * st.grad_bias[j], 0.0)
        st.grad_bias[j] = 0.0
    if skew_rate > 0.0:
        skew_gradient(st.grad_w[:Q, :Q], st.inverse, st.w[:Q, :Q], st.signs, st.work)
        for i in range(Q):
            for j in range(Q):
                st.skew[i, j] += skew_rate * st.work[1, i, j]
        cayley(st.skew, st.signs, st.inverse, st.w)
    if Q < N:
        short_step(st, rate, clip, coupling, margin)
    for j in range(N):
        for k in range(N):
            st.grad_w[j, k] = 0.0


@kernel
def learn_buffer(st, cap, seed, rate, skew_rate, clip, coupling, margin, scale, numerics, symbols, bits):
    """Predict, score and learn each of ``symbols`` (bits[t]: its prequential code length), then read it; every
    ``horizon`` symbols, the window's gradient step."""
    horizon = st.codes.shape[0]
    N = st.w.shape[0]
    for t in range(symbols.shape[0]):
        symbol = symbols[t]
        width = predict(st.a, st.v, st.pi, st.counts[ACTIVE], cap, numerics)
        first = 1 if st.counts[ACTIVE] == cap else 0
        code = st.code_of[symbol]
        bits[t] = code_length(st.pi, code, cap, st.counts[ACTIVE])
        readout_step(st.v, st.a, st.pi, st.scratch[ERR], st.dh, st.counts[FILLED] - 1, code, first, width, rate)
        if st.counts[FILLED] == horizon:
            window_gradient(st)
            apply_gradient(st, rate, skew_rate, clip, coupling, margin)
            for j in range(N):
                st.hs[0, j] = st.hs[horizon, j]
            st.counts[FILLED] = 0
        if code == 0:
            code = _join(st, cap, seed, scale, symbol)
        forward(st, code)
        st.counts[SYMBOLS] += 1


@kernel
def _join(st, cap, seed, scale, symbol):
    """``symbol`` gets the next code and its softmax column (``open_alphabet.join_readout``), its input weights
    drawn from (seed, unit, symbol)."""
    code = join_readout(st.code_of, st.symbol_of, st.counts, ACTIVE, st.v, cap, symbol)
    for j in range(st.w.shape[0]):
        st.embed[code, j] = scale * (2.0 * unit_uniform(seed, j, symbol) - 1.0)
    return code
