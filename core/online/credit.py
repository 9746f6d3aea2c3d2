"""Credit beyond the window: forward sensitivities along the leaky self-loops.

A window's truncated BPTT (``window.py``, eqs. 22-25) credits the K
transitions inside it.  The window's outputs also depend on everything before
it, through the potentials V^0 it starts from.  Each unit j carries forward
the sensitivity of its own potential to its own incoming transition weights,
for every symbol (real-time recurrent learning restricted to the diagonal of
the Jacobian dV^{t+1}/dV^t, the one-step sparsity of Menick et al., "Practical
Real Time Recurrent Learning with a Sparse Approximation", ICLR 2021):

    e_j^{t+1}[y, q] = gamma c_j^t e_j^t[y, q] + 1[y = x_t] a^t_{in(j, q)},
    c_j^t = clip(leak + tau^{x_t}_{jj} s'(V_j^t), -1, 1)

(leak + tau_jj s' is the diagonal of eq. 22's Jacobian; dropping the paths
through other units is the approximation, exact on a graph of self-loops
alone).  At a window, B^0 = dlog Pr(window's outputs)/dV^0 (eq. 22 carried one
step further back) gives each block (y, j) the gradient B_j^0 e_j^0[y] for
all it did before the window, and a metric contribution of the window's
form (eq. 26) with u = e_j^0[y] and the modulus m_j^0 of eq. 24.

``gamma = 1 - 2^-credit_horizon`` bounds the memory of the sensitivities (a
horizon of about 2^h symbols).  The clip keeps a self-loop that would amplify
(tau_jj > 0) from growing them geometrically: the exact sensitivity of an
unstable recurrence explodes, and with it the step.

Only the blocks of codes the window read get this credit (they are the ones
stepped, ``window.py``); a code that is not read keeps its sensitivity until it
is, decayed by gamma per symbol.

Storage: e_j = scale_j * stored_j, so decaying all of a unit's sensitivities
costs one multiplication; a scale below 2^-256 is folded back into the stored
values (once every few hundred symbols at most).  Per symbol this is O(N D),
per window O(touched codes x N x D^2), as the window's own contributions.
"""

from __future__ import annotations

from ..jit import kernel
from ..kernels.activation import slope
from .config import F, H
from ..kernels.metric_blocks import contribute

TINY_SCALE = 2.0 ** -256  # a unit's scale below it is folded into its stored sensitivities


@kernel
def credit_before_window(st, hyper, flags, n_touched):
    """Add to each touched block (y, j) the gradient B_j^0 e_j^0[y] and the metric term of u = e_j^0[y].

    B^0 and m^0 are row 0 of ``st.B`` and ``st.m``: ``window.window_gradient``
    carries the window's backward pass through transition 0 (output 0 belongs
    to the previous window and is not scored again) and checks them finite.
    """
    N1, D = st.inputs.shape
    qd = flags[F.quasi_diagonal] == 1
    u = st.scratch[0, :D]
    work = st.scratch[1, : 2 * D]
    discounting = (hyper[H.metric_discount], hyper[H.metric_prior])
    for q in range(n_touched):
        code = st.touched[q]
        for j in range(1, N1):
            b = st.B[0, j]
            scale = st.credit_scale[j]
            for r in range(D):
                u[r] = scale * st.credit[code, j, r]
            st.block_updates[code, j] = contribute(st.G[code, j], st.metric[code, j], u, (b, st.m[0, j]),
                                                   discounting, st.block_updates[code, j], qd, work)


@kernel
def advance_credit(st, hyper, flags, width):
    """Carry every unit's sensitivities e_j through the window's K transitions (the weights they ran with)."""
    K = flags[F.window]
    N1, D = st.inputs.shape
    gamma = hyper[H.credit_decay]
    leak = hyper[H.leak]
    activation = flags[F.activation_code]
    for k in range(K):
        code = st.x[k]
        for j in range(1, N1):
            c = leak + st.tau[code, j, 1] * slope(st.a[k, j], activation)
            c = gamma * min(max(c, -1.0), 1.0)
            scale = st.credit_scale[j] * c
            if abs(scale) < TINY_SCALE:  # fold the scale into the stored values (all of them 0 if c is)
                for y in range(1, width):
                    for r in range(D):
                        st.credit[y, j, r] *= scale
                scale = 1.0
            st.credit_scale[j] = scale
            for r in range(D):
                st.credit[code, j, r] += st.a[k, st.inputs[j, r]] / scale
