"""The dominant eigenvalue of a real square matrix and its right and left eigenvectors, inside a kernel: what the
ENRNN's eigenvalue normalisation needs (seed 002, eqs. 2.90-2.95).

Basic IEEE operations only (sums, products, quotients, square roots, in real and complex doubles; moduli
compared by their squares, never by the C library's hypot), so that a
seed gives the same bits on every machine, as the rest of a learner's path:

* :func:`hessenberg` reduces a copy of the matrix to upper Hessenberg form by Householder reflections (the
  eigenvalues are kept; the reflections are not);
* :func:`eigenvalues` finds every eigenvalue of a Hessenberg matrix by Francis's implicit double-shift QR
  iteration (Golub and Van Loan, *Matrix Computations*, Algorithm 7.5.1, applied to the unreduced window
  only, with deflation where a subdiagonal entry falls below a rounding error of its neighbours, and an
  exceptional shift every tenth iteration without deflation);
* :func:`dominant` picks the one of largest modulus (of a complex pair, the one with positive imaginary part);
* :func:`eigenvector` finds the eigenvector of a known eigenvalue by inverse iteration: two solves of
  (T - lambda I) x = b by Gaussian elimination with partial pivoting, in complex arithmetic; with T's
  transpose, the left eigenvector (v* T = lambda v* is T^T conj(v) = lambda conj(v)).

Both work on T divided by :func:`scale_of`'s power of two (an exact division), so that no square in them
overflows or underflows whatever T's magnitude.
"""

from __future__ import annotations

import math

from ..jit import inline_kernel, kernel

EPSILON = 2.220446049250313e-16  # the doubles' machine epsilon
MAX_SWEEPS = 30  # QR iterations allowed per eigenvalue before the solver gives up


@kernel
def hessenberg(a, v):
    """``a`` (m x m) in place to upper Hessenberg form with the same eigenvalues: for each column k, the
    reflection I - 2 v v^T / v^T v that maps a[k+1:, k] onto a multiple of e_1, applied on both sides; ``v``
    (m,) is work.  Below the subdiagonal ``a`` is left exactly 0."""
    m = a.shape[0]
    for k in range(m - 2):
        norm2 = 0.0
        for i in range(k + 1, m):
            norm2 += a[i, k] * a[i, k]
        if norm2 == 0.0:
            continue
        alpha = math.sqrt(norm2)
        if a[k + 1, k] > 0.0:
            alpha = -alpha  # v = x - alpha e_1 without cancellation
        for i in range(m):
            v[i] = 0.0
        v[k + 1] = a[k + 1, k] - alpha
        for i in range(k + 2, m):
            v[i] = a[i, k]
        vv = v[k + 1] * v[k + 1] + norm2 - a[k + 1, k] * a[k + 1, k]
        if vv == 0.0:
            continue
        for j in range(k, m):  # from the left: rows k+1..m-1
            s = 0.0
            for i in range(k + 1, m):
                s += v[i] * a[i, j]
            f = 2.0 * s / vv
            for i in range(k + 1, m):
                a[i, j] -= f * v[i]
        for i in range(m):  # from the right: columns k+1..m-1
            s = 0.0
            for j in range(k + 1, m):
                s += a[i, j] * v[j]
            f = 2.0 * s / vv
            for j in range(k + 1, m):
                a[i, j] -= f * v[j]
        a[k + 1, k] = alpha
        for i in range(k + 2, m):
            a[i, k] = 0.0


@kernel
def _reflect(h, k, n, x, y, z, first, last, top):
    """Apply the reflection mapping (x, y, z) (z unused when n = 2) onto a multiple of e_1 to rows k..k+n-1 of
    h's columns first..last from the left, and to those columns of rows top..last from the right."""
    norm = math.sqrt(x * x + y * y + z * z)
    if norm == 0.0:
        return
    alpha = -norm if x > 0.0 else norm
    v0 = x - alpha
    vv = v0 * v0 + y * y + z * z
    f0 = 2.0 / vv
    for j in range(first, last + 1):
        s = v0 * h[k, j] + y * h[k + 1, j]
        if n == 3:
            s += z * h[k + 2, j]
        s *= f0
        h[k, j] -= s * v0
        h[k + 1, j] -= s * y
        if n == 3:
            h[k + 2, j] -= s * z
    for i in range(top, min(k + n, last) + 1):
        s = h[i, k] * v0 + h[i, k + 1] * y
        if n == 3:
            s += h[i, k + 2] * z
        s *= f0
        h[i, k] -= s * v0
        h[i, k + 1] -= s * y
        if n == 3:
            h[i, k + 2] -= s * z


@kernel
def eigenvalues(h, values):
    """Every eigenvalue of the upper Hessenberg ``h`` (m x m, overwritten) into ``values`` (m,) complex; returns
    0, or -1 if some eigenvalue took more than MAX_SWEEPS iterations (``values`` then incomplete)."""
    m = h.shape[0]
    scale = 0.0
    for i in range(m):
        for j in range(max(i - 1, 0), m):
            scale = max(scale, abs(h[i, j]))
    u = m - 1
    sweeps = 0
    while u >= 0:
        lo = u
        while lo > 0:  # the unreduced window [lo, u]: every subdiagonal inside it is above rounding
            s = abs(h[lo - 1, lo - 1]) + abs(h[lo, lo])
            if s == 0.0:
                s = scale
            if abs(h[lo, lo - 1]) <= EPSILON * s:
                h[lo, lo - 1] = 0.0
                break
            lo -= 1
        if lo == u:
            values[u] = complex(h[u, u], 0.0)
            u -= 1
            sweeps = 0
            continue
        if lo == u - 1:
            a, b, c, d = h[u - 1, u - 1], h[u - 1, u], h[u, u - 1], h[u, u]
            p = 0.5 * (a - d)
            disc = p * p + b * c
            if disc >= 0.0:
                z = p + (math.sqrt(disc) if p >= 0.0 else -math.sqrt(disc))
                first = d + z
                second = d - b * c / z if z != 0.0 else first
                values[u - 1] = complex(first, 0.0)
                values[u] = complex(second, 0.0)
            else:
                root = math.sqrt(-disc)
                values[u - 1] = complex(d + p, root)
                values[u] = complex(d + p, -root)
            u -= 2
            sweeps = 0
            continue
        sweeps += 1
        if sweeps > MAX_SWEEPS:
            return -1
        if sweeps % 10 == 0:  # an exceptional shift breaks a cycle
            s = 1.5 * (abs(h[u, u - 1]) + abs(h[u - 1, u - 2]))
            t = s * s / 1.5
        else:  # the eigenvalues of the trailing 2 x 2 block, as their sum s and product t
            s = h[u - 1, u - 1] + h[u, u]
            t = h[u - 1, u - 1] * h[u, u] - h[u - 1, u] * h[u, u - 1]
        x = h[lo, lo] * h[lo, lo] + h[lo, lo + 1] * h[lo + 1, lo] - s * h[lo, lo] + t
        y = h[lo + 1, lo] * (h[lo, lo] + h[lo + 1, lo + 1] - s)
        z = h[lo + 1, lo] * h[lo + 2, lo + 1]
        for k in range(lo, u - 1):  # chase the bulge down the window
            _reflect(h, k, 3, x, y, z, max(lo, k - 1), u, lo)
            x = h[k + 1, k]
            y = h[k + 2, k]
            if k < u - 2:
                z = h[k + 3, k]
        _reflect(h, u - 1, 2, x, y, 0.0, u - 2, u, lo)
        for i in range(lo + 2, u + 1):  # what the chase leaves below the subdiagonal is rounding
            for j in range(lo, i - 1):
                h[i, j] = 0.0
    return 0


@inline_kernel
def modulus2(z):
    """|z|^2 by a sum of products (``abs`` of a complex number is the C library's hypot)."""
    return z.real * z.real + z.imag * z.imag


@inline_kernel
def modulus(re, im):
    """|re + i im| without overflow or underflow in the squares: both scaled by a power of two first (exact)."""
    top = max(abs(re), abs(im))
    if top == 0.0:
        return 0.0
    _, exponent = math.frexp(top)
    a = math.ldexp(re, -exponent)
    b = math.ldexp(im, -exponent)
    return math.ldexp(math.sqrt(a * a + b * b), exponent)


@kernel
def dominant(values):
    """The index of the eigenvalue of largest modulus; of a complex pair, the one with positive imaginary
    part; of equal moduli otherwise, the first."""
    best = 0
    top = -1.0
    for i in range(values.shape[0]):
        r = modulus2(values[i])
        if r > top or (r == top and values[i].imag > 0.0 and values[i].real == values[best].real):
            best = i
            top = r
    return best


@kernel
def scale_of(t):
    """The power of two at or above the largest |t_ij| (1 if t is 0): dividing by it is exact, and keeps the QR
    iteration's squares far from overflow and underflow."""
    top = 0.0
    for i in range(t.shape[0]):
        for j in range(t.shape[1]):
            top = max(top, abs(t[i, j]))
    if top == 0.0 or not top < math.inf:
        return 1.0
    _, exponent = math.frexp(top)
    return math.ldexp(1.0, exponent)


@kernel
def eigenvector(t, transpose, lam, scale, work, out):
    """The eigenvector of the real ``t`` (m x m; its transpose if ``transpose``) for its eigenvalue ``lam``,
    into ``out`` (m,) complex, scaled to Euclidean norm 1: inverse iteration from (1, ..., 1), two solves of
    (t / scale - lam / scale I) x = b (``scale`` a power of two, :func:`scale_of`); ``work`` (m, m + 1)
    complex.  A pivot of exactly 0 counts as epsilon.  Returns False if the solve produced no finite nonzero
    vector (``out`` is then not an eigenvector)."""
    m = t.shape[0]
    mu = lam / scale
    for i in range(m):
        out[i] = 1.0
    for _ in range(2):
        for i in range(m):
            for j in range(m):
                work[i, j] = (t[j, i] if transpose else t[i, j]) / scale
            work[i, i] -= mu
            work[i, m] = out[i]
        for col in range(m):
            pivot = col
            for r in range(col + 1, m):
                if modulus2(work[r, col]) > modulus2(work[pivot, col]):
                    pivot = r
            if pivot != col:
                for j in range(col, m + 1):
                    tmp = work[col, j]
                    work[col, j] = work[pivot, j]
                    work[pivot, j] = tmp
            if work[col, col] == 0.0:
                work[col, col] = EPSILON
            for r in range(col + 1, m):
                f = work[r, col] / work[col, col]
                if f != 0.0:
                    for j in range(col, m + 1):
                        work[r, j] -= f * work[col, j]
        norm2 = 0.0
        for i in range(m - 1, -1, -1):
            s = work[i, m]
            for j in range(i + 1, m):
                s -= work[i, j] * out[j]
            out[i] = s / work[i, i]
            norm2 += modulus2(out[i])
        if not (norm2 > 0.0 and norm2 < math.inf):
            return False
        norm = math.sqrt(norm2)
        for i in range(m):
            out[i] = out[i] / norm
    return True
