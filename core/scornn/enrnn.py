"""The ENRNN's short-term state (seed 002, §2.7): the recurrent matrix's last m rows and columns, W^(S) =
T / (rho(T) + epsilon) (eq. 2.90), trained through T by Proposition 2.7.1's gradient (eq. 2.95), and the
coupling block W^(C) that feeds it into the long-term state (eq. 2.82).

With n units of which the last m are short-term (q = n - m long-term), the learner's W is

    [ W^(L)  W^(C) ]      W^(L) (q x q) orthogonal, the scoRNN's (``cayley.py``)
    [   0    W^(S) ]      W^(S) (m x m) of spectral radius rho(T) / (rho(T) + epsilon) < 1 once normalised

and the scoRNN's forward step and back-propagation run on it whole.  Per window, after the scoRNN's own
step on U, b and A:

* W^(C) += rate G^(C) (if the coupling is on; otherwise it stays 0);
* T moves along the gradient in T of what has gradient G^(S) in W^(S): G^(S) itself while T is not normalised,
  and once it is (eq. 2.95 with the eigenvalue lambda = alpha + i beta of largest modulus, u and v its right and
  left eigenvectors, S = conj(v) u^T / (v* u), C = alpha Re S + beta Im S, r = rho + epsilon),

      dL/dT = (1/r) [G^(S) - (1/rho) <G^(S), W^(S)> C];

  (seed 002 prints 1/r for the inner 1/rho: the same when epsilon = 0, its setting; this is the derivative for
  any epsilon, checked against finite differences in the tests);
* T's spectrum is computed again (``eigen.py``); the first time rho(T) exceeds 1, normalisation starts and
  stays on (seed 002, "Initialization": train T itself until then), and W^(S) is T / r or T.

If the QR iteration ever fails to converge the previous eigenvalue is kept for that window (it has not happened
in the tests); the normalisation is always by a computed eigenvalue of some recent T.
"""

from __future__ import annotations

import math

from ..jit import kernel
from .config import ALPHA, BETA, NORMALIZED
from .eigen import dominant, eigenvalues, eigenvector, hessenberg, modulus2


@kernel
def spectrum_of(t, hess, values):
    """The eigenvalue of largest modulus of ``t`` (m x m) as (alpha, beta >= 0, rho), or rho = -1 if the QR
    iteration failed; ``hess`` (m + 1, m) and ``values`` (m,) complex are work."""
    m = t.shape[0]
    for i in range(m):
        for j in range(m):
            hess[i, j] = t[i, j]
    hessenberg(hess[:m], hess[m])
    if eigenvalues(hess[:m], values) != 0:
        return 0.0, 0.0, -1.0
    lam = values[dominant(values)]
    return lam.real, abs(lam.imag), math.sqrt(modulus2(lam))


@kernel
def normalized_gradient(t, g, w_short, alpha, beta, margin, work, vectors, out):
    """out = dL/dT of eq. 2.95 (the module docstring), L having gradient ``g`` in W^(S) = ``w_short`` = T / (rho
    + margin), lambda = alpha + i beta the eigenvalue of T of largest modulus; ``work`` (m, m + 1) and
    ``vectors`` (2, m) complex are work (left: the right and left eigenvectors)."""
    m = t.shape[0]
    lam = complex(alpha, beta)
    rho = math.sqrt(alpha * alpha + beta * beta)
    u = vectors[0]
    v = vectors[1]  # conj(v): T^T conj(v) = lambda conj(v)
    eigenvector(t, False, lam, work, u)
    eigenvector(t, True, lam, work, v)
    denom = 0j
    for i in range(m):
        denom += v[i] * u[i]
    inner = 0.0
    for i in range(m):
        for j in range(m):
            inner += g[i, j] * w_short[i, j]
    k = inner / rho
    r = rho + margin
    for i in range(m):
        for j in range(m):
            s = v[i] * u[j] / denom
            out[i, j] = (g[i, j] - k * (alpha * s.real + beta * s.imag)) / r


@kernel
def short_step(st, rate, coupling, margin):
    """The window's step on W^(C) and on T, then W^(S) from the new T (the module docstring); grad_w is left for
    the caller to clear."""
    n = st.w.shape[0]
    m = st.short_t.shape[0]
    q = n - m
    if coupling:
        for i in range(q):
            for j in range(q, n):
                st.w[i, j] += rate * st.grad_w[i, j]
    t = st.short_t
    g = st.grad_w[q:, q:]
    if st.spectrum[NORMALIZED] != 0.0:
        step = st.hess[:m]
        normalized_gradient(t, g, st.w[q:, q:], st.spectrum[ALPHA], st.spectrum[BETA], margin, st.eig, st.vectors,
                            step)
        for i in range(m):
            for j in range(m):
                t[i, j] += rate * step[i, j]
    else:
        for i in range(m):
            for j in range(m):
                t[i, j] += rate * g[i, j]
    alpha, beta, rho = spectrum_of(t, st.hess, st.vectors[0])
    if rho >= 0.0:
        st.spectrum[ALPHA] = alpha
        st.spectrum[BETA] = beta
        if rho > 1.0:
            st.spectrum[NORMALIZED] = 1.0
    r = 1.0
    if st.spectrum[NORMALIZED] != 0.0:
        r = math.sqrt(st.spectrum[ALPHA] * st.spectrum[ALPHA] + st.spectrum[BETA] * st.spectrum[BETA]) + margin
    for i in range(m):
        for j in range(m):
            st.w[q + i, q + j] = t[i, j] / r
