"""Configuration and state of the lifelong online learner.

The state is a flat set of NumPy arrays (a named tuple, so one argument
carries it into the Numba kernels) sized by the configuration only: nothing
in it grows with the length of the stream.
"""

from __future__ import annotations

import json
import math
import mmap
import struct
import zlib
from dataclasses import asdict, dataclass, fields
from typing import NamedTuple

import numpy as np

from ..kernels.backward import RBPM, RUOP
from ..model import ACTIVATIONS, random_graph

FORMAT_MAGIC = b"SEQDLRN\x00"
FORMAT_VERSION = 1

# positions in the `reals` array
ETA_TAU, ETA_W, WINDOW_GAIN = 0, 1, 2
# positions in the `counts` array
SYMBOLS, ACTIVE, WINDOW_POS, WINDOWS, REJECTED, NONFINITE = 0, 1, 2, 3, 4, 5


@dataclass(frozen=True)
class OnlineConfig:
    """Hyper-parameters of an online learner, stored under their constructor names.

    One default serves every stream; ``docs/online.md`` records how each was
    chosen.
    """

    model: str = "glnn"  # "glnn" or "gnn" (gated models: per-symbol metric blocks)
    units: int = 32
    degree: int = 3
    activation: str = "tanh"
    alphabet_cap: int = 256  # symbols are integers in [0, alphabet_cap)
    method: str = "rbpm"  # rbpm, ruop (full blocks, Sherman-Morrison) or qdrbpm, qdruop
    window: int = 16  # truncated BPTT window K (symbols per transition update)
    input_scale: float = 16.0  # multiplies the reading rates mu_j/4 of eq. (32)
    writing_discount: float = 1.0 / 4096  # gamma_w of the writing Hessian sums
    writing_prior: float = 1.0  # prior mass kept in every writing Hessian diagonal
    writing_rate: float = 1.0  # eta_w (the quasi-diagonal Newton step is self-scaled)
    metric_discount: float = 1.0 / 1024  # gamma_tau per contribution to a metric block
    metric_prior: float = 1.0  # prior mass kept in every metric block's diagonal
    transition_rate: float | None = None  # initial eta_tau; None: 1/N as in seed 000
    max_transition_rate: float = 1.0  # eta_tau <= 1: never beyond the Newton step of the discounted metric
    rate_growth: float = 1.1
    rate_shrink: float = 0.5
    seed: int = 0
    # context units (``context.py``); all off by default: the pure GLNN of seed 000
    context_orders: tuple[int, ...] = ()  # increasing orders of the hashed context chain
    column_context: bool = False  # (column, symbol above) source
    word_context: bool = False  # (field number, current word) source
    match_min: int = 0  # match model: shortest repeat it follows (0: no match model)
    context_bits: int = 16  # log2 of the slots per hashed source
    context_entries: int = 16  # (symbol, count) pairs per slot
    count_limit: int = 127  # a count reaching it halves its slot's (and a match bucket's) counts
    history_bits: int = 20  # log2 of the symbols of history kept for the match and column sources
    match_bits: int = 18  # log2 of the match model's hash table
    context_weight: float = 0.3  # initial context weight, and the centre of its prior
    context_prior: float = 10.0  # prior mass kept in the context weights' metric (lambda_w for them)

    @classmethod
    def bytes_default(cls, **overrides) -> "OnlineConfig":
        """The default model for byte streams (logs, ``seqd compress``): a small GLNN plus context units."""
        settings = dict(units=4, context_orders=(1, 2, 3, 4, 6, 8, 12, 16), column_context=True,
                        word_context=True, match_min=6)
        settings.update(overrides)
        return cls(**settings)

    def __post_init__(self):
        object.__setattr__(self, "context_orders", tuple(int(k) for k in self.context_orders))
        for field in fields(self):  # an int given for a float setting must not make an int array
            if field.type in ("float", "float | None") and isinstance(getattr(self, field.name), int) \
                    and not isinstance(getattr(self, field.name), bool):
                object.__setattr__(self, field.name, float(getattr(self, field.name)))
        orders = self.context_orders
        if any(k < 1 for k in orders) or list(orders) != sorted(set(orders)):
            raise ValueError(f"context_orders must be distinct positive integers in increasing order, got {orders}")
        if not 10 <= self.context_bits <= 26 or not 10 <= self.history_bits <= 30 or not 10 <= self.match_bits <= 26:
            raise ValueError("context_bits and match_bits must be in [10, 26], history_bits in [10, 30]")
        if orders and orders[-1] > 1 << self.history_bits:  # an order-k context reads the history k symbols back
            raise ValueError(f"context_orders must not exceed the history of 2**history_bits = {1 << self.history_bits} "
                             f"symbols, got order {orders[-1]}")
        if not 1 <= self.context_entries <= 64:
            raise ValueError(f"context_entries must be in [1, 64], got {self.context_entries}")
        if not 2 <= self.count_limit <= 65535:
            raise ValueError(f"count_limit must be in [2, 65535], got {self.count_limit}")
        if self.match_min < 0 or self.match_min > 64:
            raise ValueError(f"match_min must be in [0, 64] (0: no match model), got {self.match_min}")
        if not (math.isfinite(self.context_prior) and self.context_prior > 0.0):
            raise ValueError(f"context_prior must be finite and > 0, got {self.context_prior}")
        if not math.isfinite(self.context_weight):
            raise ValueError(f"context_weight must be finite, got {self.context_weight}")
        if self.model not in ("glnn", "gnn"):
            raise ValueError(f"online model must be 'glnn' or 'gnn' (gated, per-symbol metric blocks), got {self.model!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.method not in ("rbpm", "ruop", "qdrbpm", "qdruop"):
            raise ValueError(f"online method must be rbpm, ruop, qdrbpm or qdruop, got {self.method!r}")
        if self.units == 0 and not self.sources:
            raise ValueError("units=0 (no recurrent units) needs context units to predict with")
        if self.units < 0 or self.degree < 1 or (self.units > 0 and self.degree > self.units):
            raise ValueError(f"need units >= 0 and 1 <= degree <= units, got units={self.units}, degree={self.degree}")
        if not 1 <= self.alphabet_cap <= 65536:
            raise ValueError(f"alphabet_cap must be in [1, 65536], got {self.alphabet_cap}")
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        for name in ("writing_discount", "metric_discount"):
            v = getattr(self, name)
            if not 0.0 < v < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {v}")
        for name in ("writing_prior", "metric_prior", "writing_rate", "input_scale", "max_transition_rate"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0.0):
                raise ValueError(f"{name} must be finite and > 0, got {v}")
        if not 0.0 < self.rate_shrink < 1.0:
            raise ValueError(f"rate_shrink must be in (0, 1), got {self.rate_shrink}")
        if not (math.isfinite(self.rate_growth) and self.rate_growth >= 1.0):
            raise ValueError(f"rate_growth must be finite and >= 1, got {self.rate_growth}")
        if self.transition_rate is not None and not 0.0 < self.transition_rate <= self.max_transition_rate:
            raise ValueError(f"transition_rate must be in (0, max_transition_rate={self.max_transition_rate}], "
                             f"got {self.transition_rate}")

    @property
    def sources(self) -> list[tuple[int, int]]:
        """The context units as (kind, order) pairs, in the order of their weights (``context.py``)."""
        from .context import COLUMN, MATCH, ORDER, WORD
        out = [(ORDER, k) for k in self.context_orders]
        if self.column_context:
            out.append((COLUMN, 0))
        if self.word_context:
            out.append((WORD, 0))
        if self.match_min:
            out.append((MATCH, self.match_min))
        return out

    @property
    def slots(self) -> int:
        return self.degree + 1

    @property
    def modulus(self) -> int:
        return RUOP if self.method.endswith("ruop") else RBPM

    @property
    def quasi_diagonal(self) -> bool:
        return self.method.startswith("qd")

    def hyper(self) -> np.ndarray:
        """The float settings the kernels read, in a fixed order (see ``kernels.H_*``)."""
        return np.array([
            1.0 if self.model == "glnn" else 0.0,
            self.input_scale,
            self.writing_discount,
            self.writing_prior,
            self.metric_discount,
            self.metric_prior,
            self.max_transition_rate,
            self.rate_growth,
            self.rate_shrink,
            self.context_weight,
            self.context_prior,
        ])

    def flags(self) -> np.ndarray:
        """The integer settings the kernels read (see ``kernels.F_*``)."""
        return np.array([
            self.window,
            ACTIVATIONS.index(self.activation),
            self.modulus,
            int(self.quasi_diagonal),
            self.alphabet_cap,
            self.seed & 0x7FFFFFFFFFFFFFFF,
            self.context_bits,
            self.count_limit,
            self.match_min,
        ], dtype=np.int64)


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
    scratch: np.ndarray  # (5, max(N+1, A+1, K+1, 2D)) work
    touched: np.ndarray  # (K+1,) int64 work: distinct codes read in the window
    trial_V: np.ndarray  # (K+2, N+1) work: the window replayed with trial weights
    trial_a: np.ndarray  # (K+2, N+1)
    saved_tau: np.ndarray  # (A+1, N+1, D) work: touched blocks before a tried step, to undo it exactly
    reals: np.ndarray  # float64: ETA_TAU, ETA_W, WINDOW_GAIN
    counts: np.ndarray  # int64: SYMBOLS, ACTIVE, WINDOW_POS, WINDOWS, REJECTED, NONFINITE
    # context units (context.py); S sources, empty arrays when there are none.  T = 2^context_bits
    # slots per source, E = context_entries, H = 2^history_bits
    ctx_kind: np.ndarray  # (S, 2) int64: (kind, order) of each source
    ctx_w: np.ndarray  # (S, A+1) context weights c_sy
    ctx_P: np.ndarray  # (A+1, S, S) inverse discounted metric of each symbol's context weights
    ctx_updates: np.ndarray  # (A+1,) int64: contributions received by each block
    ctx_updated: np.ndarray  # (A+1,) int64 work: symbol count + 1 when the block was last stepped
    ctx_work: np.ndarray  # (4, 2S) work
    ctx_tag: np.ndarray  # (S', T) uint32 (S' = S less the match source, which is last): check word of the context held by each slot (0: empty)
    ctx_sym: np.ndarray  # (S', T, E) uint16: symbols counted in each slot
    ctx_cnt: np.ndarray  # (S', T, E) uint16: their counts
    ctx_slot: np.ndarray  # (S,) int64: each source's slot for the current position
    ctx_found: np.ndarray  # (S,) int64: 1 if that slot holds the current context
    ctx_want: np.ndarray  # (S,) uint32: the current context's check word
    ctx_int: np.ndarray  # (context.CTX_INTS,) int64: stream position, match and line state
    order0: np.ndarray  # (A,) int64 (empty without sources): order-0 counts
    hist: np.ndarray  # (H,) uint16: the last H symbols, a ring
    match_table: np.ndarray  # (2^match_bits,) int64: position + 1 after each hashed context
    match_stats: np.ndarray  # (2, context.MATCH_BUCKETS) int64: hits and tries per match length
    feat: np.ndarray  # (S, A+1) work: the context units' activities (all zero between symbols)
    feat_nz: np.ndarray  # (S*E + S, 2) int64 work: the non-zero entries of feat
    offset: np.ndarray  # (K+1, A+1): the context units' votes over the window
    acc: np.ndarray  # (A,) work: the chain's sparse part
    acc_mark: np.ndarray  # (A,) int64 work
    acc_list: np.ndarray  # (S*E,) int64 work


def new_state(config: OnlineConfig) -> OnlineState:
    """A learner that has seen nothing: only the escape symbol is active."""
    N, D, A, K = config.units, config.slots, config.alphabet_cap, config.window
    rng = np.random.default_rng([config.seed, 0x5EED])
    inputs = random_graph(N, config.degree, rng)
    state = OnlineState(
        inputs=inputs,
        code_of=np.zeros(A, dtype=np.int64),
        symbol_of=np.full(A + 1, -1, dtype=np.int64),
        w=np.zeros((N + 1, A + 1)),
        tau=np.zeros((A + 1, N + 1, D)),
        h0=np.zeros((N + 1, A + 1)),
        hd=np.full((N + 1, A + 1), config.writing_prior, dtype=np.float64),
        metric=np.zeros((A + 1, N + 1, D, D)),
        block_updates=np.zeros((A + 1, N + 1), dtype=np.int64),
        V=np.zeros((K + 2, N + 1)),
        a=np.zeros((K + 2, N + 1)),
        pi=np.zeros((K + 1, A + 1)),
        x=np.zeros(K + 1, dtype=np.int64),
        targets=np.zeros(K + 1, dtype=np.int64),
        B=np.zeros((K + 2, N + 1)),
        m=np.zeros((K + 2, N + 1)),
        G=np.zeros((A + 1, N + 1, D)),
        step=np.zeros((A + 1, N + 1, D)),
        scratch=np.zeros((5, max(N + 1, A + 1, K + 1, 2 * D))),
        touched=np.zeros(K + 1, dtype=np.int64),
        trial_V=np.zeros((K + 2, N + 1)),
        trial_a=np.zeros((K + 2, N + 1)),
        saved_tau=np.zeros((A + 1, N + 1, D)),
        reals=np.array([1.0 / max(N, 1) if config.transition_rate is None else config.transition_rate, config.writing_rate, 0.0]),
        counts=np.zeros(6, dtype=np.int64),
        **_context_arrays(config),
    )
    # initial potentials V^0 = s^-1(beta_j / alpha) (seed 000 §2) for the GLNN; 0 for the GNN
    if config.model == "glnn":
        j = np.arange(1, N + 1)
        mu = 1.0 / (j + 1.0)
        beta = -np.sqrt(0.5 * (0.5 - mu))
        v0 = np.arctanh(beta / 0.5)
        if config.activation == "logistic":
            v0 = 2.0 * v0
        state.V[0, 1:] = v0
    state.a[0, 0] = 1.0
    act = np.tanh if config.activation == "tanh" else (lambda v: 1.0 / (1.0 + np.exp(-v)))
    state.a[0, 1:] = act(state.V[0, 1:])
    return state


HUGE_PAGE = 2 << 20  # bytes in a transparent huge page (x86-64; arm64 with 4 KiB base pages)


def table_array(shape, dtype) -> np.ndarray:
    """A zeroed array for a context table: megabytes, read and written at random places.

    From :data:`HUGE_PAGE` bytes up, the array gets a private anonymous
    mapping of its own, aligned to a huge page and advised ``MADV_HUGEPAGE``.
    Where Linux's transparent huge pages are set to ``madvise`` (a common
    default) they are then used, and one TLB entry covers 2 MiB instead of
    4 KiB.  This changes no value, only speed (``docs/benchmarks.md``).
    Without the advice (another system, or a refusal), it is an ordinary
    array.
    """
    dtype = np.dtype(dtype)
    size = math.prod(np.atleast_1d(shape).tolist()) * dtype.itemsize
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if size < HUGE_PAGE or advice is None:
        return np.zeros(shape, dtype)
    region = mmap.mmap(-1, size + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    raw = np.frombuffer(region, dtype=np.uint8)  # the array keeps the mapping alive
    start = -raw.ctypes.data % HUGE_PAGE
    try:
        region.madvise(advice, start, size)
    except OSError:
        pass
    return raw[start:start + size].view(dtype).reshape(shape)


def _owned(view: np.ndarray) -> np.ndarray:
    """A native-order, writable copy of a snapshot's array (a context table's as :func:`table_array`)."""
    dtype = view.dtype.newbyteorder("=")
    out = table_array(view.shape, dtype) if view.nbytes >= HUGE_PAGE else np.empty(view.shape, dtype)
    out[...] = view
    return out


def _context_arrays(config: OnlineConfig) -> dict:
    from .context import CTX_INTS, MATCH, MATCH_BUCKETS
    sources = config.sources
    S, A, K, E = len(sources), config.alphabet_cap, config.window, config.context_entries
    hashed = S > 0
    T = 1 << config.context_bits if hashed else 0
    H = 1 << config.history_bits if hashed else 0
    matching = any(kind == MATCH for kind, _ in sources)
    SH = S - int(matching)  # the match source comes last and has no table
    return dict(
        ctx_kind=np.array(sources, dtype=np.int64).reshape(S, 2),
        ctx_w=np.full((S, A + 1), config.context_weight, dtype=np.float64),
        ctx_P=np.broadcast_to(np.eye(S) / config.context_prior, (A + 1, S, S)).copy(),
        ctx_updates=np.zeros(A + 1 if S else 0, dtype=np.int64),
        ctx_updated=np.zeros(A + 1 if S else 0, dtype=np.int64),
        ctx_work=np.zeros((4, 2 * S)),
        ctx_tag=table_array((SH, T), dtype=np.uint32),
        ctx_sym=table_array((SH, T, E), dtype=np.uint16),
        ctx_cnt=table_array((SH, T, E), dtype=np.uint16),
        ctx_slot=np.zeros(S, dtype=np.int64),
        ctx_found=np.zeros(S, dtype=np.int64),
        ctx_want=np.zeros(S, dtype=np.uint32),
        ctx_int=np.zeros(CTX_INTS, dtype=np.int64),
        order0=np.zeros(A if hashed else 0, dtype=np.int64),
        hist=table_array(H, dtype=np.uint16),
        match_table=table_array(1 << config.match_bits if matching else 0, dtype=np.int64),
        match_stats=np.zeros((2, MATCH_BUCKETS), dtype=np.int64),
        feat=np.zeros((S, A + 1)),
        feat_nz=np.zeros((S * E + S, 2), dtype=np.int64),
        offset=np.zeros((K + 1, A + 1)),
        acc=np.zeros(A if hashed else 0),
        acc_mark=np.zeros(A if hashed else 0, dtype=np.int64),
        acc_list=np.zeros(S * E, dtype=np.int64),
    )


# -- serialisation ----------------------------------------------------------------------------

_HEADER = struct.Struct("<8sII")  # magic, version, header length


def to_bytes(config: OnlineConfig, state: OnlineState) -> bytes:
    """Versioned, checksummed snapshot: restoring it continues the stream bit for bit."""
    return b"".join(snapshot_parts(config, state))


def snapshot_parts(config: OnlineConfig, state: OnlineState) -> list[memoryview]:
    """The snapshot of :func:`to_bytes` as a list of buffers to be written in turn, in the same format.

    On a little-endian machine the arrays are not copied: the buffers are
    views of the state, valid while nothing learns.  The checksum and a
    file's ``write`` of a large buffer run without the GIL, so a thread that
    writes a snapshot of tens of megabytes does not stall the others (a
    single ``bytes`` of it would be built, and copied again, with the GIL held).
    """
    arrays = {name: np.ascontiguousarray(getattr(state, name)) for name in OnlineState._fields}
    meta = {
        "config": asdict(config),
        "arrays": [[name, arr.dtype.str, list(arr.shape)] for name, arr in arrays.items()],
    }
    header = json.dumps(meta, sort_keys=True).encode()
    parts = [memoryview(_HEADER.pack(FORMAT_MAGIC, FORMAT_VERSION, len(header)) + header)]
    for arr in arrays.values():
        little = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False))
        parts.append(memoryview(little.reshape(-1).view(np.uint8)))
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    parts.append(memoryview(struct.pack("<I", crc)))
    return parts


def from_bytes(data: bytes) -> tuple[OnlineConfig, OnlineState]:
    """Inverse of :func:`to_bytes`; every inconsistency is a clear ``ValueError``."""
    data = bytes(data)
    if len(data) < _HEADER.size + 4:
        raise ValueError("learner snapshot is truncated")
    magic, version, hlen = _HEADER.unpack_from(data)
    if magic != FORMAT_MAGIC:
        raise ValueError("not a seqd learner snapshot (wrong magic)")
    if version > FORMAT_VERSION:
        raise ValueError(f"learner snapshot format {version} is newer than this seqd understands ({FORMAT_VERSION})")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != crc:
        raise ValueError("learner snapshot is damaged (checksum mismatch)")
    try:
        meta = json.loads(data[_HEADER.size:_HEADER.size + hlen])
        config = OnlineConfig(**meta["config"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"learner snapshot header is invalid: {exc}") from None
    offset = _HEADER.size + hlen
    arrays = {}
    for name, dtype, shape in meta["arrays"]:
        dt = np.dtype(dtype)
        n = int(np.prod(shape)) * dt.itemsize
        if offset + n > len(data) - 4:
            raise ValueError("learner snapshot is truncated")
        arrays[name] = np.frombuffer(data, dtype=dt, count=int(np.prod(shape)), offset=offset).reshape(shape)
        offset += n
    if set(arrays) != set(OnlineState._fields):
        raise ValueError("learner snapshot does not hold the expected arrays")
    state = OnlineState(**{name: _owned(arrays[name]) for name in OnlineState._fields})
    reference = new_state(config)
    for name in OnlineState._fields:
        got, want = getattr(state, name), getattr(reference, name)
        if got.shape != want.shape or got.dtype != want.dtype:
            raise ValueError(f"learner snapshot array {name!r} is {got.dtype}{list(got.shape)}, "
                             f"expected {want.dtype}{list(want.shape)}")
    for name in ("w", "tau", "h0", "hd", "metric", "V", "a", "reals"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"learner snapshot holds a non-finite value in {name!r}")
    _check_indices(config, state)
    return config, state


def _check_indices(config: OnlineConfig, state: OnlineState) -> None:
    """Indices the kernels use without bounds checks must be in range."""
    n = int(state.counts[ACTIVE])
    if not 0 <= n <= config.alphabet_cap:
        raise ValueError(f"learner snapshot is inconsistent: {n} active symbols for an alphabet of {config.alphabet_cap}")
    if not 0 <= int(state.counts[WINDOW_POS]) <= config.window:
        raise ValueError("learner snapshot is inconsistent: window position out of range")
    codes = state.code_of
    seen = np.flatnonzero(codes)
    if codes.min() < 0 or len(seen) != n or not np.array_equal(np.sort(codes[seen]), np.arange(1, n + 1)) \
            or not np.array_equal(state.symbol_of[codes[seen]], seen):
        raise ValueError("learner snapshot is inconsistent: symbol codes do not match")
    for name in ("x", "targets", "touched"):
        arr = getattr(state, name)
        if arr.min() < 0 or arr.max() > n:
            raise ValueError(f"learner snapshot is inconsistent: {name!r} holds codes out of range")
    if state.inputs.min() < 0 or state.inputs.max() > config.units:
        raise ValueError("learner snapshot is inconsistent: the graph names units out of range")
    if state.ctx_kind.shape[0]:
        _check_context(config, state)


def _check_context(config: OnlineConfig, state: OnlineState) -> None:
    """The context units' tables, history and positions must be what ``context.py`` can have written."""
    from .context import LINE_START, MATCH_LEN, MATCH_PTR, NNZ, ORDER0_TOTAL, POS, PREV_LINE_LEN, PREV_LINE_START

    def bad(what):
        return ValueError(f"learner snapshot is inconsistent: {what}")

    cap = config.alphabet_cap
    sources = np.array(config.sources, dtype=np.int64).reshape(-1, 2)
    if not np.array_equal(state.ctx_kind, sources):
        raise bad(f"its context sources {state.ctx_kind.tolist()} are not the configuration's {sources.tolist()}")
    counted = state.ctx_cnt > 0
    if state.ctx_sym.size and int(state.ctx_sym.max()) >= cap:
        raise bad(f"a context table holds symbol {int(state.ctx_sym.max())}, outside the alphabet [0, {cap})")
    if counted.any() and not state.code_of[state.ctx_sym[counted].astype(np.int64)].all():
        raise bad("a context table counts a symbol the learner has never seen")
    if int(state.ctx_cnt.max(initial=0)) >= config.count_limit:
        raise bad(f"a context table holds a count >= count_limit = {config.count_limit}")
    if np.any(counted & (state.ctx_tag == 0)[..., None]):
        raise bad("an empty context slot holds counts")
    ints = state.ctx_int
    t, H = int(ints[POS]), state.hist.shape[0]
    if t < 0 or int(ints[ORDER0_TOTAL]) != t or state.order0.min(initial=0) < 0 or int(state.order0.sum()) != t:
        raise bad("the context units' symbol counts do not add up to their stream position")
    if state.hist.size and int(state.hist.max()) >= cap:
        raise bad(f"the history holds symbol {int(state.hist.max())}, outside the alphabet [0, {cap})")
    written = state.hist[(t - np.arange(1, min(t, H) + 1)) % H] if H else state.hist[:0]
    if written.size and not state.code_of[written.astype(np.int64)].all():
        raise bad("the history holds a symbol the learner has never seen")
    if not 0 <= int(ints[PREV_LINE_START]) <= int(ints[LINE_START]) <= t or int(ints[PREV_LINE_LEN]) < 0 \
            or int(ints[PREV_LINE_LEN]) > int(ints[LINE_START]) - int(ints[PREV_LINE_START]):
        raise bad("the context units' line positions are out of range")
    length, ptr = int(ints[MATCH_LEN]), int(ints[MATCH_PTR])
    if length < 0 or (length > 0 and not max(t - H, -1) < ptr < t):
        raise bad("the match model follows a position outside the history")
    hits, tries = state.match_stats
    if np.any(hits < 0) or np.any(hits > tries) or np.any(tries >= max(config.count_limit, 1)):
        raise bad("the match model's statistics are out of range")
    if state.match_table.size and (state.match_table.min() < 0 or int(state.match_table.max()) > t + 1):
        raise bad("the match table holds positions beyond the stream")
    if int(ints[NNZ]) != 0 or state.feat.any():
        raise bad("context activities are left over between symbols")


def bits_for_new_symbol(alphabet_cap: int, active_before: int) -> float:
    """Bits to name a first occurrence among the symbols not yet seen (uniform)."""
    return math.log2(alphabet_cap - active_before)
