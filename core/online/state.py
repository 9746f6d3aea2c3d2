"""The state of the lifelong online learner: every array it owns, and a learner that has seen nothing.

The state is a flat set of NumPy arrays (a named tuple, so one argument
carries it into the Numba kernels) sized by the configuration only: nothing
in it grows with the length of the stream.  It is flat because it is what a
snapshot holds, array by array (``snapshot.py``).  The kernels read it
through smaller named tuples of the arrays each part owns, made inside the
compiled code at no cost (no reference counting, ``jit.py``):
``sources.Sources``, ``mixer.Mixer``, ``maps.Maps`` and
``writing.Writing``.
"""

from __future__ import annotations

import math
import mmap
from typing import NamedTuple

import numpy as np

from ..initialization import initial_potentials, logistic_potentials
from ..jit import inline_kernel
from ..kernels.elementary import NUMERICS, logistic, tanh
from ..kernels.network import Network
from ..model import random_graph
from .config import F, H, OnlineConfig
from .sources import CTX_INTS, FIELD_SLOTS, FOLLOWER_BASE, MATCH, MATCH_BUCKETS, POS, SAME, SELECTING_BUCKETS
from ..kit.growth import BITS, initial_bits
from .maps import MAP_POINTS, initial_maps, map_rows
from ..kit.numbers import NUMBER_BUCKETS, NUMBER_CONTEXTS, NUMBER_DIGITS, N_PREDICTED
from .numbers import NUMBER_INTS, N_VOTED
from .selecting import selecting_rows
from ..kit.memory import HUGE_PAGE, table_array

# positions in the `reals` array (REALS of them) and in the `counts` array (COUNTS of them)
REALS, COUNTS = 3, 6
ETA_TAU, ETA_W, WINDOW_GAIN = range(REALS)
SYMBOLS, ACTIVE, WINDOW_POS, WINDOWS, REJECTED, NONFINITE = range(COUNTS)
# rows of the `scratch` work array; two more hold the writing sums' per-symbol discount (writing.py)
WORK_ROWS = 5


class OnlineState(NamedTuple):
    """Every array the learner owns.

    Symbols get internal codes in order of first appearance: code 0 is the
    escape (a first occurrence), codes 1..n the symbols seen so far, so the
    active part of every per-symbol array is a contiguous prefix of width
    n + 1.  A = alphabet cap, K = window, N = units, D = d + 1.
    """

    inputs: np.ndarray  # (N+1, D) int64: incoming units of each unit
    code_of: np.ndarray  # (A,) int64: internal code of each symbol, 0 while unseen
    symbol_of: np.ndarray  # (A+1,) int64: symbol of each internal code (-1 for the escape)
    w: np.ndarray  # (N+1, A+1) writing weights
    tau: np.ndarray  # (A+1, N+1, D) transition weights, code-major (row 0 unused)
    h0: np.ndarray  # (N+1, A+1) discounted writing Hessian, cross terms with unit 0 (eq. 19)
    hd: np.ndarray  # (N+1, A+1) discounted writing Hessian, diagonal (eq. 18) incl. prior
    metric: np.ndarray  # (A+1, N+1, D, D) inverse metric (full) or quasi-diagonal metric entries
    block_updates: np.ndarray  # (A+1, N+1) int64: contributions received by each block
    V: np.ndarray  # (K+2, N+1): potentials over the current window; row counts[WINDOW_POS] is now
    a: np.ndarray  # (K+2, N+1): activities over the window
    pi: np.ndarray  # (K+1, A+1): predictions over the window
    x: np.ndarray  # (K+1,) int64: codes read by the transitions of the window
    targets: np.ndarray  # (K+1,) int64: codes the outputs were scored on (0 for a first occurrence)
    B: np.ndarray  # (K+2, N+1) backpropagated values (work)
    m: np.ndarray  # (K+2, N+1) backpropagated moduli (work)
    G: np.ndarray  # (A+1, N+1, D) window gradient (work, zero between windows)
    step: np.ndarray  # (A+1, N+1, D) work: the window's step on touched blocks
    scratch: np.ndarray  # (WORK_ROWS [+ 2 with writing_evidence_floor < 1], max(N+1, A+1, K+1, 2D)) work
    touched: np.ndarray  # (K+1,) int64 work: distinct codes read in the window
    trial_V: np.ndarray  # (K+2, N+1) work: the window replayed with trial weights
    trial_a: np.ndarray  # (K+2, N+1)
    saved_tau: np.ndarray  # (A+1, N+1, D) work: touched blocks before a tried step, to undo it exactly
    reals: np.ndarray  # (REALS,) float64: ETA_TAU, ETA_W, WINDOW_GAIN
    counts: np.ndarray  # (COUNTS,) int64: SYMBOLS, ACTIVE, WINDOW_POS, WINDOWS, REJECTED, NONFINITE
    # context units (sources.py, mixer.py); S sources, empty arrays when there are none.  T = 2^context_bits
    # slots per source, E = context_entries, H = 2^history_bits
    ctx_kind: np.ndarray  # (S, 2) int64: (kind, order) of each source
    ctx_w: np.ndarray  # (S, A+1) context weights c_sy
    ctx_P: np.ndarray  # (A+1, S, S) inverse discounted metric of each symbol's context weights
    ctx_updates: np.ndarray  # (A+1,) int64: contributions received by each block
    ctx_updated: np.ndarray  # (A+1,) int64 work: symbol count + 1 when the block was last stepped
    ctx_work: np.ndarray  # (4, 2S) work
    # with table_growth (growth.py): per hashed source, then the match table, log2 of the size in use and the
    # slots taken; (0, 2) without it
    grown: np.ndarray  # (S' + 1, 2) int64
    ctx_tag: np.ndarray  # (S', T) uint32 (S' = S less the match source, which is last): check word of the context held by each slot (0: empty)
    ctx_sym: np.ndarray  # (S', T, E) uint16: symbols counted in each slot
    ctx_cnt: np.ndarray  # (S', T, E) uint16: their counts
    ctx_slot: np.ndarray  # (S,) int64: each source's slot for the current position
    ctx_found: np.ndarray  # (S,) int64: 1 if that slot holds the current context
    ctx_want: np.ndarray  # (S,) uint32: the current context's check word
    ctx_int: np.ndarray  # (sources.CTX_INTS,) int64: stream position, match and line state
    order0: np.ndarray  # (A,) int64 (empty without sources): order-0 counts
    hist: np.ndarray  # (H,) uint8 (alphabets of 256 or fewer) or uint16: the last H symbols, a ring
    match_table: np.ndarray  # (2^match_bits,) int64: position + 1 after each hashed context
    match_stats: np.ndarray  # (2, sources.MATCH_BUCKETS) int64: hits and tries per match length
    feat: np.ndarray  # (S, A+1) work: the context units' activities (all zero between symbols)
    feat_nz: np.ndarray  # (S*E + S, 2) int64 work: the non-zero entries of feat
    offset: np.ndarray  # (K+1, A+1): the context units' votes over the window
    acc: np.ndarray  # (A,) work: the chain's sparse part
    acc_mark: np.ndarray  # (A,) int64 work
    acc_list: np.ndarray  # (S*E,) int64 work
    # the selected weights (mixer.py); empty arrays when they are off.  R = S + 1 metric blocks,
    # one per number of sources whose context was found; sources.SELECTING_BUCKETS * R rows of weights
    sel_w: np.ndarray  # (SELECTING_BUCKETS * R, S) the weights u[row, s]
    sel_P: np.ndarray  # (R, S, S) inverse discounted outer-product metric of each block (step "block")
    sel_h: np.ndarray  # (SELECTING_BUCKETS * R, S) discounted outer-product metric of each weight (step "diagonal")
    sel_updates: np.ndarray  # (R,) int64: contributions received by each block
    sel_row: np.ndarray  # (S+1,) int64 work: each source's row for the next symbol, then the block k (before
    # mixer.select: each source's state b_s, then k, as sources.activities writes them)
    fields: np.ndarray  # (2, FIELD_SLOTS + 2) int64: field starts of this line and the previous, the symbol
    # above and whether the field so far repeats the previous line's (field column; sources.ABOVE, SAME)
    # the shared weight sets beside u (selecting.py), rows stacked: the field set's, then the order-2 set's
    # (ORDER2_SELECTING_ROWS), the unit set's, each present with its setting (selecting.selecting_rows)
    fsel_w: np.ndarray  # (rows, S) the weights v[row, s], or (0, S)
    fsel_h: np.ndarray  # (rows, S) their diagonal outer-product metric
    fsel_row: np.ndarray  # (sets,) int64 work: each set's row for the next symbol
    followers: np.ndarray  # (257 * 257,) int64: per pair of last symbols, the symbol that followed it + 1 (indirect)
    number_table: np.ndarray  # (2, 2^(context_bits - 2), 6) int64: per context length, per slot (numbers.TAG ...)
    number_int: np.ndarray  # (2, NUMBER_INTS) int64: per context length, the current run and prediction (N_KEY ...)
    number_digits: np.ndarray  # (2, NUMBER_DIGITS + 2) int64: the predicted number's digits, then the symbol after
    number_stats: np.ndarray  # (2, 2, NUMBER_BUCKETS) int64: hits and tries of the number source's votes
    # the probability maps (maps.py); empty arrays when they are off
    maps: np.ndarray  # (maps.map_rows, MAP_POINTS) each context row's estimates at the knots, map A's rows first
    map_counts: np.ndarray  # (maps.map_rows, MAP_POINTS) each knot's count of past shares (up to MAP_COUNT_LIMIT)
    map_at: np.ndarray  # (4,) int64 work: the favourite code, the knot below and the two rows read (maps.MAP_TOP ...)
    map_frac: np.ndarray  # (1,) work: the position between the knots
    coded: np.ndarray  # (A+1,) work: the refined prediction, which is scored and coded
    # credit beyond the window (credit.py); empty arrays without it
    credit: np.ndarray  # (A+1, N+1, D) each unit's forward sensitivities to its own transition weights, / scale
    credit_scale: np.ndarray  # (N+1,) each unit's common factor of them
    numerics: np.ndarray  # (0,): its dtype picks the exp/log/tanh every kernel compiles (kernels/elementary.py)


@inline_kernel
def network(inputs, tau, numerics, hyper, flags):
    """The learner's network as the shared kernels read it: gated, no input weights (``kernels.network``)."""
    return Network(inputs, tau, tau[0, :0, 0:0], hyper[H.leak], True, flags[F.activation_code], numerics)


def new_state(config: OnlineConfig) -> OnlineState:
    """A learner that has seen nothing: only the escape symbol is active.

    Every array is allocated from :func:`state_shapes` (zeroed; from 2 MiB up
    on huge pages, ``tables.py``), then the few that do not start at zero are
    filled.
    """
    N = config.units
    state = OnlineState(**{name: table_array(shape, dtype, huge=not grows(config, name))
                           for name, (shape, dtype) in state_shapes(config).items()})
    state.inputs[...] = random_graph(N, config.degree, np.random.default_rng([config.seed, 0x5EED]))
    state.symbol_of[...] = -1
    state.hd[...] = config.writing_prior
    S = state.ctx_kind.shape[0]
    if S:  # the context units: their (kind, order), initial weights and prior metric
        state.ctx_kind[...] = config.sources
        state.ctx_w[...] = config.context_weight
        state.ctx_P[...] = np.eye(S) / config.context_prior
        if config.selected_weights:
            state.sel_P[...] = np.eye(S) / config.selected_prior
            state.sel_h[...] = config.selected_prior
            state.fsel_h[...] = config.selected_prior
        if config.field_column_context:
            state.fields[0, SAME] = 1  # the first field of the stream repeats its (absent) previous line so far
        state.number_int[:, N_PREDICTED] = -1  # no prediction, no vote yet
        state.number_int[:, N_VOTED] = -1
        if config.table_growth:
            state.grown[:-1, BITS] = initial_bits(config.context_bits)
            state.grown[-1, BITS] = initial_bits(config.match_bits)
    if config.probability_maps:
        state.maps[...] = initial_maps(state.maps.shape[0])
    state.credit_scale[...] = 1.0
    state.reals[ETA_TAU] = 1.0 / max(N, 1) if config.transition_rate is None else config.transition_rate
    state.reals[ETA_W] = config.writing_rate
    # initial potentials V^0 = s^-1(beta_j / alpha) (seed 000 §2) for the GLNN; 0 for the GNN
    v0 = initial_potentials(config.leak, N, config.numerics)
    state.V[0, 1:] = logistic_potentials(v0) if config.activation == "logistic" else v0
    state.a[0, 0] = 1.0
    if config.numerics == "libm":  # format 1's initial activities: NumPy's functions
        act = np.tanh if config.activation == "tanh" else (lambda v: 1.0 / (1.0 + np.exp(-v)))
        state.a[0, 1:] = act(state.V[0, 1:])
    else:
        act = tanh if config.activation == "tanh" else logistic
        state.a[0, 1:] = [act(float(v)) for v in state.V[0, 1:]]
    return state


def state_shapes(config: OnlineConfig) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """The (shape, dtype) of every array of the state, computed without allocating any: what
    :func:`new_state` allocates, and what a reader of an untrusted file sizes a model's memory from before
    building it (``core/limits.py``)."""
    N, D, A, K = config.units, config.slots, config.alphabet_cap, config.window
    S, E = len(config.sources), config.context_entries
    hashed = S > 0
    T = 1 << config.context_bits if hashed else 0
    H = 1 << config.history_bits if hashed else 0
    matching = any(kind == MATCH for kind, _ in config.sources)
    NT = len(NUMBER_CONTEXTS) if config.number_context else 0  # the number source's tables
    SH = S - int(matching) - int(NT > 0)
    R = S + 1 if config.selected_weights else 0
    rows = selecting_rows(config.field_set_fields, config.field_selecting_positions, config.order2_selected_weights,
                          config.unit_set_units)
    field_rows = selecting_rows(config.field_set_fields, config.field_selecting_positions, False)
    M = map_rows(field_rows) if config.probability_maps else 0
    f, i, u16, u32 = np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint16), np.dtype(np.uint32)
    symbol = history_dtype(config)
    # the number source's tables: 2^(context_bits - 2) slots; tables that grow keep seqd 0.16's 2^14
    number_bits = (min(config.context_bits, 16) if config.table_growth else config.context_bits) - 2
    window, cols, per_code = (K + 2, N + 1), (N + 1, A + 1), (A + 1, N + 1, D)
    shapes = dict(
        inputs=((N + 1, D), i), code_of=((A,), i), symbol_of=((A + 1,), i), w=(cols, f), tau=(per_code, f),
        h0=(cols, f), hd=(cols, f), metric=((A + 1, N + 1, D, D), f), block_updates=((A + 1, N + 1), i),
        V=(window, f), a=(window, f), pi=((K + 1, A + 1), f), x=((K + 1,), i), targets=((K + 1,), i),
        B=(window, f), m=(window, f), G=(per_code, f), step=(per_code, f),
        scratch=((WORK_ROWS + 2 * (config.writing_evidence_floor < 1.0), max(N + 1, A + 1, K + 1, 2 * D)), f),
        touched=((K + 1,), i), trial_V=(window, f),
        trial_a=(window, f), saved_tau=(per_code, f), reals=((REALS,), f), counts=((COUNTS,), i),
        ctx_kind=((S, 2), i), ctx_w=((S, A + 1), f), ctx_P=((A + 1, S, S), f),
        ctx_updates=((A + 1 if S else 0,), i), ctx_updated=((A + 1 if S else 0,), i), ctx_work=((4, 2 * S), f),
        ctx_tag=((SH, T), u32), ctx_sym=((SH, T, E), u16), ctx_cnt=((SH, T, E), u16), ctx_slot=((S,), i),
        ctx_found=((S,), i), ctx_want=((S,), u32), ctx_int=((CTX_INTS,), i), order0=((A if hashed else 0,), i),
        hist=((H,), symbol), match_table=((1 << config.match_bits if matching else 0,), i),
        grown=((SH + 1 if config.table_growth and hashed else 0, 2), i),
        match_stats=((2, MATCH_BUCKETS), i), feat=((S, A + 1), f), feat_nz=((S * E + S, 2), i),
        offset=((K + 1, A + 1), f), acc=((A if hashed else 0,), f), acc_mark=((A if hashed else 0,), i),
        acc_list=((S * E,), i), sel_w=((SELECTING_BUCKETS * R, S), f), sel_P=((R, S, S), f),
        sel_h=((SELECTING_BUCKETS * R, S), f), sel_updates=((R,), i), sel_row=((S + 1 if R else 0,), i),
        fields=((2 if config.field_column_context else 0, FIELD_SLOTS + 2), i),
        fsel_w=((rows, S), f), fsel_h=((rows, S), f),
        fsel_row=((config.field_selected_weights + config.order2_selected_weights + config.unit_selected_weights,), i),
        followers=((FOLLOWER_BASE ** 2 if config.indirect_context else 0,), i),
        number_table=((NT, 1 << number_bits if NT else 0, 6), i), number_int=((NT, NUMBER_INTS), i),
        number_digits=((NT, NUMBER_DIGITS + 2), i), number_stats=((NT, 2, NUMBER_BUCKETS), i),
        maps=((M, MAP_POINTS), f), map_counts=((M, MAP_POINTS), f), map_at=((4 if M else 0,), i),
        map_frac=((1 if M else 0,), f), coded=((A + 1 if M else 0,), f),
        credit=((A + 1 if config.credit_horizon else 0, N + 1, D), f),
        credit_scale=((N + 1 if config.credit_horizon else 0,), f),
        numerics=((0,), np.dtype(NUMERICS[config.numerics])),
    )
    return {name: shapes[name] for name in OnlineState._fields}


GROWING = ("ctx_tag", "ctx_sym", "ctx_cnt", "match_table")  # the tables that grow, with table_growth (growth.py)


def grows(config: OnlineConfig, name: str) -> bool:
    """Whether array ``name`` is a table that grows: in memory only as far as it has grown."""
    return config.table_growth and name in GROWING


def resident_nbytes(config: OnlineConfig, state: OnlineState) -> int:
    """The bytes of the state in memory: every array whole, but the history ring as far as it has been
    written and each table that grows as far as it has grown, each to the page (huge for the ring, which
    is advised so).  Memory that grows with what the stream has seen: what the daemon's budget counts."""
    t = int(state.ctx_int[POS]) if state.ctx_int.size else 0
    shapes = {name: (array.shape, array.dtype) for name, array in zip(OnlineState._fields, state)}
    return _resident(config, shapes, t, [int(b) for b in state.grown[:, BITS]])


def first_resident_nbytes(config: OnlineConfig) -> int:
    """:func:`resident_nbytes` of a learner that has seen nothing, without making one."""
    shapes = state_shapes(config)
    tables = shapes["grown"][0][0]
    bits = [initial_bits(config.context_bits)] * (tables - 1) + [initial_bits(config.match_bits)] if tables else []
    return _resident(config, shapes, 0, bits)


def _resident(config: OnlineConfig, shapes: dict, t: int, bits: list[int]) -> int:
    total = 0
    for name, (shape, dtype) in shapes.items():
        nbytes = math.prod(shape) * dtype.itemsize
        if name == "hist" and nbytes >= HUGE_PAGE:
            total += _pages(min(t, shape[0]) * dtype.itemsize, HUGE_PAGE)
        elif grows(config, name) and nbytes >= HUGE_PAGE:
            row = math.prod(shape[2:]) * dtype.itemsize  # a slot's bytes
            sizes = bits[-1:] if name == "match_table" else bits[:-1]
            total += sum(_pages((1 << b) * row, mmap.PAGESIZE) for b in sizes)
        else:
            total += nbytes
    return total


def _pages(nbytes: int, page: int) -> int:
    return -(-nbytes // page) * page


def history_dtype(config: OnlineConfig) -> np.dtype:
    """The history ring's symbols: a byte each for an alphabet of 256 or fewer, two bytes for a larger one."""
    return np.dtype(np.uint8 if config.alphabet_cap <= 256 else np.uint16)


def state_nbytes(config: OnlineConfig) -> int:
    """The bytes of a learner's state for ``config`` (``OnlineLearner.state_bytes``), without allocating it."""
    return sum(math.prod(shape) * dtype.itemsize for shape, dtype in state_shapes(config).values())
