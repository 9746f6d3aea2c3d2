"""Per symbol: predict, score, learn; and the loop that learns a whole buffer in one call.

Per symbol x_t:

1. predict pi_t from the current activities (eq. 6, over the active codes),
   plus the context units' votes, refined by the probability maps if there
   are any (``maps.py``); the prequential code length is -log2 of the
   prediction of x_t, plus log2(#unseen) for a first occurrence, which is
   scored on the escape code;
2. the writing step (``writing_step``: the mixer's weights, ``mixer.py``, then the network's, ``writing.py``);
3. a first occurrence gets its code (``alphabet.py``);
4. advance the state with x_t (eq. 13 / eq. 10), and every K symbols run the
   window step (``window.py``).
"""

from __future__ import annotations

from ..jit import inline_kernel, kernel
from ..kernels.elementary import log2_of
from ..kernels.forward import evolve_into, softmax_offset_into
from .alphabet import RETIRED_ESCAPE_BIAS, activate_symbol
from .config import F, H
from .growth import grow_tables
from .maps import learn_maps, maps_of, refine
from .mixer import context_writing_update, mixer_of, select, selected_writing_update, vote
from .selecting import set_rows, unit_centre
from .sources import NNZ, POS, activities, clear_activities, locate, observe, sources_of
from .state import ACTIVE, ETA_W, SYMBOLS, WINDOW_POS, network
from .window import window_update
from .writing import Writing, writing_update


@kernel
def learn_buffer(st, hyper, flags, symbols, bits):
    """Predict, score and learn every symbol of ``symbols``; bits[t] = its prequential code length."""
    cap = flags[F.alphabet_cap]
    for t in range(symbols.shape[0]):
        symbol = symbols[t]
        predict_step(st, flags)
        pi_t = coded(st)
        code = st.code_of[symbol]
        if code == 0:  # first occurrence: scored on the escape, then named among the unseen
            bits[t] = -log2_of(st.numerics, pi_t[0]) + log2_of(st.numerics, float(cap - st.counts[ACTIVE]))
        else:
            bits[t] = -log2_of(st.numerics, pi_t[code])
        learn_step(st, hyper, flags, symbol)


@kernel
def predict_step(st, flags):
    """The prediction for the next symbol, into ``st.pi[window position]``; returns the active width.

    With context units it leaves their activities in ``st.feat`` for ``learn_step``: the sources find their
    contexts and read their counts (``sources.py``), the mixer chooses its rows and votes (``mixer.py``).
    """
    k = st.counts[WINDOW_POS]
    width = st.counts[ACTIVE] + 1
    src = sources_of(st)
    if st.ctx_kind.shape[0] > 0:
        mix = mixer_of(st)
        set_rows(src, st.a[k], st.fsel_row, flags[F.field_set_fields], flags[F.field_selecting_positions],
                 flags[F.order2_selected_weights], flags[F.unit_set_units], unit_centre(flags[F.activation_code]))
        locate(src, flags[F.context_bits])
        activities(src, st.code_of, st.numerics, flags[F.alphabet_cap], st.feat, st.feat_nz, st.sel_row)
        select(mix)
        vote(mix, st.ctx_int[NNZ], st.offset[k], width)
    if flags[F.close_escape] == 1 and width > flags[F.alphabet_cap] and st.w[0, 0] != RETIRED_ESCAPE_BIAS:
        # the alphabet is full and the window that filled it still runs: the escape cannot occur, so it
        # votes the retired bias; the offset row is the window's record of that, used again when the
        # window recomputes this prediction (window._window_loglik)
        st.offset[k, 0] = RETIRED_ESCAPE_BIAS
    softmax_offset_into(st.a[k], st.w[:, :width], st.offset[k], st.pi[k, :width], st.numerics)
    if st.maps.shape[0] > 0:
        refine(maps_of(st), st.pi[k], src, st.code_of, st.fsel_row, flags[F.field_set_fields] > 0, st.numerics,
               width)
    return width


@inline_kernel
def coded(st):
    """The prediction ``predict_step`` made, as it is scored and coded: the mix's, or the maps' refinement of it."""
    if st.maps.shape[0] > 0:
        return st.coded
    return st.pi[st.counts[WINDOW_POS]]


@kernel
def learn_step(st, hyper, flags, symbol):
    """Learn ``symbol`` after ``predict_step``: writing step, new code if needed, window, advance."""
    K = flags[F.window]
    cap = flags[F.alphabet_cap]
    N1 = st.inputs.shape[0]
    k = st.counts[WINDOW_POS]
    width = st.counts[ACTIVE] + 1
    code = st.code_of[symbol]
    target = code
    first = 1 if st.counts[ACTIVE] == cap else 0
    if st.maps.shape[0] > 0:
        learn_maps(maps_of(st), target)
    writing_step(st, hyper, flags, k, target, first, width)
    if code == 0:
        code = activate_symbol(st, hyper, flags, symbol)
        width += 1
    if st.ctx_kind.shape[0] > 0:
        clear_activities(st.ctx_int, st.feat, st.feat_nz)
        src = sources_of(st)
        observe(src, symbol, flags[F.count_limit], flags[F.match_min])
        if st.grown.shape[0] > 0:
            grow_tables(src, st.ctx_int[POS], flags[F.context_bits], flags[F.match_bits], flags[F.match_min])
    st.x[k] = code
    st.targets[k] = target
    st.counts[SYMBOLS] += 1
    if k == K:
        if N1 > 1:  # without recurrent units there are no transitions to learn
            window_update(st, hyper, flags, width)
        for i in range(N1):
            st.V[0, i] = st.V[K, i]
            st.a[0, i] = st.a[K, i]
        for y in range(width):
            st.pi[0, y] = st.pi[K, y]
            st.offset[0, y] = st.offset[K, y]
        st.x[0] = st.x[K]
        st.targets[0] = st.targets[K]
        k = 0
        # retire the escape between windows, never inside one: a window that scored an
        # output on the escape must still see its probability
        if st.counts[ACTIVE] == cap and st.w[0, 0] != RETIRED_ESCAPE_BIAS:
            for i in range(N1):
                st.w[i, 0] = 0.0
            st.w[0, 0] = RETIRED_ESCAPE_BIAS
    evolve_into(network(st.inputs, st.tau, st.numerics, hyper, flags), st.V[k], st.a[k], code, st.V[k + 1], st.a[k + 1])
    st.counts[WINDOW_POS] = k + 1


@inline_kernel
def writing_step(st, hyper, flags, k, target, first, width):
    """The writing step for the symbol at window position ``k`` of the learner ``st``: the mixer's selected
    weights, then each voted symbol's context weights, then the network's writing weights, each on the error
    the ones before left (block Gauss-Seidel).

    ``st.scratch[0]`` and ``st.scratch[1]`` receive each symbol's curvature
    pi_y (1 - pi_y) and error 1[y = target] - pi_y, over the codes
    ``first`` .. ``width`` - 1.
    """
    pi_t = st.pi[k]
    curv = st.scratch[0]
    err = st.scratch[1]
    for y in range(first, width):
        p = pi_t[y]
        curv[y] = p * (1.0 - p)
        err[y] = (1.0 if y == target else 0.0) - p
    mix = mixer_of(st)
    nnz = st.ctx_int[NNZ]
    eta = st.reals[ETA_W]
    if st.sel_w.shape[0] > 0:
        selected_writing_update(mix, nnz, hyper, flags, curv, err)
    if st.ctx_w.shape[0] > 0:
        context_writing_update(mix, nnz, st.counts[SYMBOLS], eta, hyper, curv, err, target)
    writing_update(Writing(st.w, st.h0, st.hd, st.scratch), eta, hyper[H.writing_discount], hyper[H.writing_prior],
                   hyper[H.writing_evidence_floor], st.a[k], first, width)


@kernel
def predict_into(st, flags, out):
    """The distribution of the next symbol over the active codes (escape at 0), without learning.

    ``predict_step``'s prediction, copied out; the row of ``st.pi`` it uses is
    written again before the next symbol is scored.
    """
    width = predict_step(st, flags)
    pi_t = coded(st)
    for y in range(width):
        out[y] = pi_t[y]
    if st.ctx_kind.shape[0] > 0:
        clear_activities(st.ctx_int, st.feat, st.feat_nz)
    return width
