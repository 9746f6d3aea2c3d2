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

  (seed 002 prints 1/rho outside the bracket and 1/r inside: the same when epsilon = 0, its setting; this is
  the derivative for any epsilon, checked against finite differences in the tests);
* T's spectrum is computed again (``eigen.py``); the first time rho(T) exceeds 1, normalisation starts and
  stays on (seed 002, "Initialization": train T itself until then), and W^(S) is T / r or T.

The T step is clipped on its own (to norm ``clip``): eq. 2.95's gradient grows as 1 / |v* u| as two
dominant eigenvalues meet, which for a real T is an event a training path can cross.  Where eq. 2.95 does
not hold (rho = 0, lambda nearly multiple, an eigenvector not found) T takes the plain G^(S) step for that
window, as seed 002 advises.  A trial T that is not finite, or whose QR iteration fails, is not taken: T,
its spectrum and W^(S) stay as they were.
"""

from __future__ import annotations

import math

from ..jit import kernel
from .config import ALPHA, BETA, NORMALIZED
from .eigen import dominant, eigenvalues, eigenvector, hessenberg, modulus, modulus2, scale_of


DEGENERATE = 1e-8  # |v* u| below this (u, v of norm 1): lambda is (nearly) a multiple eigenvalue


@kernel
def spectrum_of(t, hess, values):
    """The eigenvalue of largest modulus of ``t`` (m x m) as (alpha, beta >= 0, rho), or rho = -1 if the QR
    iteration failed or ``t`` is not finite; ``hess`` (m + 1, m) and ``values`` (m,) complex are work."""
    m = t.shape[0]
    scale = scale_of(t)
    for i in range(m):
        for j in range(m):
            hess[i, j] = t[i, j] / scale
            if not abs(hess[i, j]) < math.inf:
                return 0.0, 0.0, -1.0
    hessenberg(hess[:m], hess[m])
    if eigenvalues(hess[:m], values) != 0:
        return 0.0, 0.0, -1.0
    lam = values[dominant(values)]
    return lam.real * scale, abs(lam.imag) * scale, math.sqrt(modulus2(lam)) * scale


@kernel
def normalized_gradient(t, g, w_short, alpha, beta, margin, work, vectors, out):
    """out = dL/dT of eq. 2.95 (the module docstring), L having gradient ``g`` in W^(S) = ``w_short`` = T / (rho
    + margin), lambda = alpha + i beta the eigenvalue of T of largest modulus; ``work`` (m, m + 1) and
    ``vectors`` (2, m) complex are work (left: the right and left eigenvectors).  Returns False, ``out``
    unspecified, where eq. 2.95 does not hold or cannot be computed: rho = 0, an eigenvector not found, or
    lambda (nearly) multiple (|v* u| < DEGENERATE; seed 002: "train using usual gradient descent ... until the
    eigenvalues are separated")."""
    m = t.shape[0]
    lam = complex(alpha, beta)
    rho = modulus(alpha, beta)
    if not rho > 0.0:
        return False
    u = vectors[0]
    v = vectors[1]  # conj(v): T^T conj(v) = lambda conj(v)
    scale = scale_of(t)
    if not (eigenvector(t, False, lam, scale, work, u) and eigenvector(t, True, lam, scale, work, v)):
        return False
    denom = 0j
    for i in range(m):
        denom += v[i] * u[i]
    if not modulus2(denom) >= DEGENERATE * DEGENERATE:
        return False
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
    return True


@kernel
def short_step(st, rate, clip, coupling, margin):
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
    step = st.step_t
    normalized = st.spectrum[NORMALIZED] != 0.0
    if not (normalized and normalized_gradient(t, g, st.w[q:, q:], st.spectrum[ALPHA], st.spectrum[BETA], margin,
                                               st.eig, st.vectors, step)):
        for i in range(m):
            for j in range(m):
                step[i, j] = g[i, j]
    norm2 = 0.0
    for i in range(m):
        for j in range(m):
            norm2 += step[i, j] * step[i, j]
    factor = rate
    if clip > 0.0 and norm2 > clip * clip:  # eq. 2.95's gradient grows as 1 / |v* u|: clipped on its own
        factor = rate * (clip / math.sqrt(norm2))
    for i in range(m):
        for j in range(m):
            step[i, j] = t[i, j] + factor * step[i, j]  # the trial T
    alpha, beta, rho = spectrum_of(step, st.hess, st.vectors[0])
    if rho < 0.0:  # not finite, or the QR iteration failed: T and W^(S) stay as they are
        return
    for i in range(m):
        for j in range(m):
            t[i, j] = step[i, j]
    st.spectrum[ALPHA] = alpha
    st.spectrum[BETA] = beta
    if rho > 1.0:
        st.spectrum[NORMALIZED] = 1.0
    r = 1.0
    if st.spectrum[NORMALIZED] != 0.0:
        r = rho + margin
    for i in range(m):
        for j in range(m):
            st.w[q + i, q + j] = t[i, j] / r
