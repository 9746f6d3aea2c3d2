"""Writing-weight gradient, Hessian terms and Newton steps (eqs. 17-21)."""

from __future__ import annotations

from ..jit import kernel


@kernel
def accumulate_writing(x, chi, a, pi, W, h0, hd):
    """Add the gradient and quasi-diagonal Hessian terms over the sequence.

        W[i, y]  += chi_t a_i^t (1_{x_t=y} - pi_t(y))          eq. (17)
        hd[i, y] += chi_t (a_i^t)^2 pi_t(y) (1 - pi_t(y))        eq. (18), damping added later
        h0[i, y] += chi_t a_i^t pi_t(y) (1 - pi_t(y))            eq. (19)

    Row 0 is the always-active unit, so hd[0] = h0[0] = h_00.
    """
    T = x.shape[0]
    N1 = a.shape[1]
    A = pi.shape[1]
    for t in range(T):
        c = chi[t]
        if c == 0.0:
            continue
        xt = x[t]
        for i in range(N1):
            ai = a[t, i]
            if ai == 0.0:
                continue
            for y in range(A):
                p = pi[t, y]
                curv = c * ai * p * (1.0 - p)
                target = 1.0 if y == xt else 0.0
                W[i, y] += c * ai * (target - p)
                h0[i, y] += curv
                hd[i, y] += curv * ai


@kernel
def quasi_diagonal_step(W, h0, hd, damping, out):
    """Quasi-diagonal Newton direction for w, eqs. (20)-(21); ``damping[y]`` is eps_y of eq. (18)."""
    N1, A = W.shape
    for y in range(A):
        h00 = hd[0, y] + damping[y]
        w0 = W[0, y]
        bias = w0 / h00
        for i in range(1, N1):
            h0i = h0[i, y]
            step = (W[i, y] - w0 * h0i / h00) / (hd[i, y] + damping[y] - h0i * h0i / h00)
            out[i, y] = step
            bias -= h0i / h00 * step
        out[0, y] = bias


@kernel
def diagonal_step(W, hd, damping, out):
    """Inverse diagonal Hessian direction for w (the non-invariant "DH" of seed 000 §4)."""
    N1, A = W.shape
    for i in range(N1):
        for y in range(A):
            out[i, y] = W[i, y] / (hd[i, y] + damping[y])
