"""The open alphabet: a symbol seen for the first time joins the model.

Symbols get internal codes in order of first appearance (code 0 is the
escape).  A new code's writing weights take their share of the escape's mass;
its transition weights start as seed 000 Appendix A says (eqs. 31-33), with
reading rates drawn from a uniform that depends on (seed, unit, symbol) only,
so a learner that meets its symbols in another order still gives each the
same weights.  Once every symbol of the alphabet has been seen, the escape is
retired (``steps.learn_step``).
"""

from __future__ import annotations

import numpy as np

from ..jit import kernel
from ..kernels.elementary import log_of
from ..initialization import logistic_transition, unit_transition, unit_uniform
from .config import F, H
from .state import ACTIVE

# once every symbol of the alphabet has been seen, the escape can no longer occur: its bias is set
# so low that exp() of it is exactly 0 (and its square still finite), and its column stops learning
RETIRED_ESCAPE_BIAS = -1.0e150


@kernel
def initial_transition(hyper, flags, j, symbol):
    """(self-loop, bias) of unit j's block for ``symbol`` when the symbol joins the model (eqs. 31-33), in the
    coordinates of the learner's activation; its other transition weights start at 0.

    Online the symbol frequencies of eq. (32) are unknown, so the reading
    rates u_jy are centred on their expectation 1/2 instead.  The GNN takes
    the RNN principle of eq. (69) (self-loop 1 - 1/j, reading rate
    (u - 1/2)/2 x input_scale).  Logistic units get the same network through
    the affine map of model.reparametrize.
    """
    u = unit_uniform(flags[F.symbol_seed], j, symbol) - 0.5
    self_loop, bias = unit_transition(hyper[H.leak], j, u, hyper[H.input_scale])
    if flags[F.activation_code] == 1:  # tanh -> logistic coordinates (model.reparametrize)
        self_loop, bias = logistic_transition(self_loop, bias)
    return self_loop, bias


@kernel
def activate_symbol(st, hyper, flags, symbol):
    """Give ``symbol`` the next internal code and initialise its parameters; returns the code.

    Writing weights: the new code starts with the escape's bias less the log of
    the number of symbols still unseen, so it takes its share of the escape's
    mass.  Transition weights per seed 000 Appendix A (eqs. 31-33): tau_jj = -1/2,
    tau_0j = beta_j + input_scale * mu_j/4 * (u_jy - 1/2) (``initial_transition``).
    """
    N1, D = st.inputs.shape
    cap = flags[F.alphabet_cap]
    n = st.counts[ACTIVE]
    code = n + 1
    st.code_of[symbol] = code
    st.symbol_of[code] = symbol
    st.counts[ACTIVE] = n + 1
    for i in range(N1):
        st.w[i, code] = 0.0
        st.h0[i, code] = 0.0
        st.hd[i, code] = hyper[H.writing_prior]
    st.w[0, code] = st.w[0, 0] - log_of(st.numerics, float(cap - n))
    S = st.ctx_w.shape[0]
    for s in range(S):
        st.ctx_w[s, code] = hyper[H.context_weight]
        for r in range(S):
            st.ctx_P[code, s, r] = 1.0 / hyper[H.context_prior] if r == s else 0.0
    if S > 0:
        st.ctx_updates[code] = 0
        st.ctx_updated[code] = 0
    for k in range(st.pi.shape[0]):
        st.pi[k, code] = 0.0
    lam = hyper[H.metric_prior]
    for j in range(1, N1):
        self_loop, bias = initial_transition(hyper, flags, j, symbol)
        for k in range(D):
            st.tau[code, j, k] = 0.0
        st.tau[code, j, 1] = self_loop
        st.tau[code, j, 0] = bias
        for r in range(D):
            for c in range(D):
                st.metric[code, j, r, c] = 0.0
            if flags[F.quasi_diagonal]:
                st.metric[code, j, r, r] = lam
            else:
                st.metric[code, j, r, r] = 1.0 / lam
        st.block_updates[code, j] = 0
    return code
