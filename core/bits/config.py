"""The settings of a bitwise learner, the shapes of its arrays, and the positions inside them.

``__init__``'s docstring says what the model is; each setting's comment says what it does to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..kit.numbers import NUMBER_BUCKETS, NUMBER_CONTEXTS, NUMBER_DIGITS
from ..settings import integers, numbers
from .versions import UNWRITTEN

MAX_STATE_BYTES = 1 << 32  # a configuration whose tables would hold more is refused

# the context sources, in the order of the bucket tables: the order-k chain, then the line-structure sources
ORDERS = (1, 2, 3, 4, 6, 8, 12, 16)
COLUMN, WORD, FIELD_COLUMN, INDIRECT = range(len(ORDERS), len(ORDERS) + 4)
SOURCES = len(ORDERS) + 4
# mixer inputs: two per source (its slot's probability, its bit history's), the match model's two, the number
# model's, and a constant (revision 1's INPUTS); then, with units, their logit (UNIT_INPUT), and with runs one
# per source; revision 2 pads them with zeros to a multiple of 4 (``input_count``)
MATCH_INPUT = 2 * SOURCES
NUMBER_INPUT = MATCH_INPUT + 2
BIAS_INPUT = NUMBER_INPUT + 1
INPUTS = BIAS_INPUT + 1
UNIT_INPUT = INPUTS
BIAS = 0.25  # the constant input's value
WEIGHT, ADDED_WEIGHT = 0.15, 0.05  # the mixers' initial weights: of the first INPUTS inputs, of the units' and runs'

# a bucket: 32 uint16 (one 64-byte line): its check tag, the 15 nodes of a nibble's binary tree (p, 16 bits),
# and their 15 bit histories, two bytes to a uint16 (n0 in the high nibble of each byte, n1 in the low one);
# with runs, a high nibble's bucket holds at RUN_AT the byte its context saw last (low byte) and how many times
# in a row (high byte)
BUCKET = 32
TAG_AT, HISTORY_AT, RUN_AT = 0, 16, 24
SPLIT_AT = 25  # revision 3: the bits of its context's hash that tell which half it goes to when its table doubles

# the mixers' weight sets, stacked in one array: selected by the partial byte (256 rows), by the match model's
# length and the number of deterministic sources (16 x 16 x 8 bit positions; revision 1 only), by field and
# position in it (16 x 8 x 2), and by the last two bytes (hashed to 2^13 rows)
SET_ROWS = (256, 2048, 256, 8192)
SET_START = tuple(int(s) for s in np.cumsum((0,) + SET_ROWS[:-1]))
SET_ROWS_2 = (256, 0, 256, 8192)  # revision 2: no second mixer
SET_START_2 = tuple(int(s) for s in np.cumsum((0,) + SET_ROWS_2[:-1]))
MIXERS = len(SET_ROWS)
FINAL_ROWS = 8 * 4  # the final mixer: by bit position and match state

# adaptive probability maps: 33 interpolation points over stretch in [-8, 8]; by the order-1 context (2^16
# rows) and by a hash of the order-2 one (2^apm2_bits rows)
APM_POINTS = 33
APM1_ROWS = 1 << 16
APM_BLOCK = 256  # a map's rows come in blocks of 256, one per partial byte

# revision 3's tables that grow (``kit/growth.py``), the rows of ``BitsState.grown``: each source's buckets, the
# match table, the two number tables (those three by the keys they hold), then the two maps' blocks and the
# fourth mixer's rows (by the stream's position: MAP_SPAN bytes a block, PAIR_SPAN a row)
GROWN_MATCH = SOURCES
GROWN_NUMBERS = SOURCES + 1  # and SOURCES + 2: one row per number table
GROWN_MAP1, GROWN_MAP2, GROWN_PAIRS = SOURCES + 3, SOURCES + 4, SOURCES + 5
GROWN_ROWS = SOURCES + 6
FIRST_MAP_BLOCKS = 2  # log2 of a map's blocks at the start (4 of 256 rows); they grow to 2^8 (map 1), 2^(apm2_bits - 8)
FIRST_PAIR_ROWS = 8  # log2 of the fourth mixer's rows at the start; they grow to 2^13
MAP_SPAN = 1024  # bytes seen per map block, before a map doubles
PAIR_SPAN = 16  # bytes seen per row of the fourth mixer, before its rows double

MATCH_MIN = 6  # the match model's shortest match, also the length of its hashed context
MATCH_LONGEST = 32  # the longest length it verifies back on finding a candidate
MATCH_BUCKETS = 64
RUN_BUCKETS = 14  # a run's hit rate is kept by its length: 1..7 one by one, then 8-11, 12-15, 16-31, 32-63, ...

# the number model (``kit/numbers.py``, voting for one predicted byte): its scalars, the shared predictor's
# (N_KEY ... N_ON_TRACK) and the streak of the entry the prediction came from
N_STREAK_NOW = 6
NUMBER_INTS = 7

FIELDS = 64  # fields of a line the field column tells apart

# the scalars: positions in ``BitsState.ints``; the last four are the byte's predictions (-1: none), set at
# its start (``predicted.predict``)
(POS, LINE_START, PREV_LINE_START, PREV_LINE_LEN, FIELD, FIELD_START, SAME, PREV_FIELDS, WORD_HASH, PREV_WORD,
 MATCH_PTR, MATCH_LEN, FIELD_ABOVE, BITS_SEEN, MATCH_BYTE, NUMBER_BYTE, NUMBER_J, NUMBER_BUCKET, INTS) = range(19)


@dataclass(frozen=True)
class BitsConfig:
    """Settings of a bitwise learner of bytes.  ``seed`` draws the units' graph and their reading rates."""

    alphabet_cap: int = 256  # bytes: the model codes 8 binary decisions a symbol
    table_bits: int = 18  # log2 of each context source's buckets (64 bytes each)
    history_bits: int = 26  # log2 of the history ring (bytes) the match model copies from
    match_bits: int = 22  # log2 of the match model's table of positions
    rate: float = 0.02  # the mixers' first learning rate ...
    rate_floor: float = 0.002  # ... which decays to this one ...
    rate_bits: float = 200000.0  # ... as rate_bits / (rate_bits + bits seen)
    slot_limit: int = 60  # a slot's probability moves by at least 1/slot_limit of its error
    history_limit: int = 1023  # a bit history's probability, by at least 1/history_limit
    apm_rate: float = 0.02  # the probability maps' rate
    apm_weight: float = 0.5  # the maps' share of the final probability
    # the formulas' revision: 1 as seqd 0.20 wrote them (each squash by exp, the order-2 map's rows hashed with the
    # partial byte); 2: squash by interpolation in a table (``tables.py``), the order-2 map's rows in blocks of 256,
    # one block per hashed pair of bytes, the partial byte the row within it; 3: tables that can grow (each
    # bucket keeps the bits it splits by, the number tables their keys' top bits, the match table seqd's common
    # hash), the maps hold probabilities, interpolated as every map of seqd is (``kit/maps.py``)
    revision: int = 3
    apm2_bits: int = 16  # log2 of the order-2 map's rows
    table_growth: bool = True  # revision 3: every table starts small and grows with the stream (``growth.py``)
    table_ways: int = 4  # revision 3, with table_growth: a context may take any of the buckets of its set of these
    table_fill: int = 4  # ... and a table of keys doubles when more than 1/table_fill of its slots are taken
    number_bits: int = 16  # log2 of each number table's slots (at most, with table_growth)
    runs: bool = True  # each source's run (the byte its context saw last, and how often in a row) votes: revision 2
    units: int = 4  # the GLNN's recurrent units (``units.py``; 0: none): revision 2
    unit_degree: int = 3
    unit_window: int = 16
    unit_input_scale: float = 16.0
    unit_writing_discount: float = 1.0 / 4096
    unit_writing_prior: float = 1.0
    unit_metric_discount: float = 1.0 / 1024
    unit_metric_prior: float = 1.0
    seed: int = 0

    def __post_init__(self):
        integers(self, "alphabet_cap", "table_bits", "history_bits", "match_bits", "slot_limit", "history_limit",
                 "revision", "apm2_bits", "units", "unit_degree", "unit_window", "number_bits", "table_ways",
                 "table_fill", "seed")
        numbers(self, "rate", "rate_floor", "rate_bits", "apm_rate", "apm_weight", "unit_input_scale",
                "unit_writing_discount", "unit_writing_prior", "unit_metric_discount", "unit_metric_prior")
        for name in ("runs", "table_growth"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
            object.__setattr__(self, name, bool(getattr(self, name)))
        if self.revision not in (1, 2, 3):
            raise ValueError(f"revision must be 1, 2 or 3, got {self.revision}")
        if self.revision == 1 and (self.runs or self.units):
            raise ValueError("runs and units need revision 2 (revision 1 is seqd 0.20's model, which had neither)")
        if self.table_growth and self.revision < 3:
            raise ValueError("table_growth needs revision 3 (the buckets of revisions 1 and 2 cannot split)")
        if self.table_ways not in (1, 2, 4) or not 2 <= self.table_fill <= 64 \
                or (not self.table_growth and (self.table_ways, self.table_fill) != (1, 4)):
            raise ValueError(f"table_ways must be 1, 2 or 4 and table_fill in [2, 64], each as it is (1, 4) without "
                             f"table_growth; got {self.table_ways} and {self.table_fill}")
        if not 10 <= self.number_bits <= 24 or (self.revision < 3 and self.number_bits != 16):
            raise ValueError(f"number_bits must be in [10, 24] (16 before revision 3), got {self.number_bits}")
        if not 10 <= self.apm2_bits <= 24:
            raise ValueError(f"apm2_bits must be in [10, 24], got {self.apm2_bits}")
        if not 0 <= self.units <= 64 or (self.units and not 1 <= self.unit_degree <= self.units) \
                or not 1 <= self.unit_window <= 4096:
            raise ValueError(f"need 0 <= units <= 64, 1 <= unit_degree <= units and 1 <= unit_window <= 4096, got "
                             f"{self.units}, {self.unit_degree} and {self.unit_window}")
        if not (0.0 < self.unit_writing_discount < 1.0 and 0.0 < self.unit_metric_discount < 1.0
                and self.unit_writing_prior > 0.0 and self.unit_metric_prior > 0.0 and self.unit_input_scale >= 0.0):
            raise ValueError("the units' discounts must be in (0, 1), their priors > 0 and unit_input_scale >= 0")
        if self.alphabet_cap != 256:
            raise ValueError(f"the bitwise model learns bytes: alphabet_cap must be 256, got {self.alphabet_cap}")
        if not 10 <= self.table_bits <= 24 or not 10 <= self.match_bits <= 26:
            raise ValueError(f"table_bits must be in [10, 24] and match_bits in [10, 26], got {self.table_bits} and "
                             f"{self.match_bits}")
        if not 10 <= self.history_bits <= 30:
            raise ValueError(f"history_bits must be in [10, 30], got {self.history_bits}")
        if not (0.0 < self.rate_floor <= self.rate <= 1.0) or not self.rate_bits > 0.0:
            raise ValueError(f"the rates must satisfy 0 < rate_floor <= rate <= 1 and rate_bits > 0, got "
                             f"{self.rate_floor}, {self.rate}, {self.rate_bits}")
        if not 2 <= self.slot_limit <= 65535 or not 2 <= self.history_limit <= 65535:
            raise ValueError(f"slot_limit and history_limit must be in [2, 65535], got {self.slot_limit} and "
                             f"{self.history_limit}")
        if not 0.0 < self.apm_rate <= 1.0 or not 0.0 <= self.apm_weight <= 1.0:
            raise ValueError(f"apm_rate must be in (0, 1] and apm_weight in [0, 1], got {self.apm_rate} and "
                             f"{self.apm_weight}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if state_nbytes(self) > MAX_STATE_BYTES:
            raise ValueError(f"these tables hold {state_nbytes(self):,} bytes, more than {MAX_STATE_BYTES:,}: lower "
                             "table_bits, history_bits or match_bits")

    @classmethod
    def from_settings(cls, settings: dict) -> "BitsConfig":
        """The configuration stored ``settings`` name; one an earlier seqd did not write takes the value that
        seqd used (``versions.UNWRITTEN``), so a stream, snapshot or file it made keeps its model."""
        return cls(**{**UNWRITTEN, **settings})

    def hyper(self) -> np.ndarray:
        """The real-valued settings as the kernels read them (``HYPER``'s order)."""
        return np.array([getattr(self, name) for name in HYPER], dtype=np.float64)


HYPER = ("rate", "rate_floor", "rate_bits", "slot_limit", "history_limit", "apm_rate", "apm_weight", "revision",
         "apm2_bits", "unit_input_scale", "unit_writing_discount", "unit_writing_prior", "unit_metric_discount",
         "unit_metric_prior", "table_growth", "table_ways", "table_fill", "table_bits", "match_bits", "number_bits")
(RATE, RATE_FLOOR, RATE_BITS, SLOT_LIMIT, HISTORY_LIMIT, APM_RATE, APM_WEIGHT, REVISION, APM2_BITS, UNIT_INPUT_SCALE,
 UNIT_WRITING_DISCOUNT, UNIT_WRITING_PRIOR, UNIT_METRIC_DISCOUNT, UNIT_METRIC_PRIOR, TABLE_GROWTH, TABLE_WAYS,
 TABLE_FILL, TABLE_BITS, MATCH_BITS, NUMBER_BITS) = range(len(HYPER))


def state_shapes(config: BitsConfig) -> dict:
    """(shape, dtype) of every array of a learner of ``config`` (``state.BitsState``): seqd 0.20's arrays, then
    those of the runs and the units (empty without them: a snapshot of 0.20 lacks them), then revision 3's."""
    i, f, u16 = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.uint16)
    f32, u8 = np.dtype(np.float32), np.dtype(np.uint8)
    S = SOURCES
    R = S if config.runs else 0
    n_in = input_count(config)
    revised = 1 if config.revision >= 2 else 0
    return {
        "code_of": ((config.alphabet_cap,), i), "symbol_of": ((config.alphabet_cap + 1,), i),
        "ints": ((INTS,), i), "grown": ((GROWN_ROWS if config.table_growth else 0, 2), i),
        "fields": ((2, FIELDS + 2), i),
        "hist": ((1 << config.history_bits,), u8), "followers": ((1 << 16,), u8),
        "buckets": ((S, 1 << config.table_bits, BUCKET), u16),
        "history_p": ((S, 256), f), "history_n": ((S, 256), f),
        "weights": ((sum(SET_ROWS_2 if revised else SET_ROWS), n_in), f), "final": ((FINAL_ROWS, MIXERS), f),
        "apm1": ((APM1_ROWS, APM_POINTS), f32), "apm2": ((1 << config.apm2_bits, APM_POINTS), f32),
        "match_table": ((1 << config.match_bits,), i), "match_p": ((MATCH_BUCKETS, 2), f),
        "match_n": ((MATCH_BUCKETS, 2), f),
        "number_table": ((len(NUMBER_CONTEXTS), 1 << config.number_bits, 6), i),
        "number_int": ((len(NUMBER_CONTEXTS), NUMBER_INTS), i),
        "number_digits": ((len(NUMBER_CONTEXTS), NUMBER_DIGITS + 2), i),
        "number_p": ((len(NUMBER_CONTEXTS), NUMBER_BUCKETS), f),
        "number_n": ((len(NUMBER_CONTEXTS), NUMBER_BUCKETS), f),
        "stretch": ((4096,), f), "apm_base": ((APM_POINTS,), f),
        # work: each source's context hash and bucket (per nibble), and per bit of the byte (the highest first) the
        # inputs, the mixers' outputs, the rows chosen (revision 2: one more of each, mixing.C0_ROW, UNIT_LOGIT)
        "ctx": ((S,), np.dtype(np.uint64)), "bucket": ((2, S), i), "inputs": ((8, n_in), f),
        "outputs": ((8, MIXERS + 4 + revised), f), "rows": ((8, MIXERS + 8 + revised), i),
        "counts": ((2,), i),
        # the runs: each one's hit rate and tries by source, length and the bit it predicts; work: the byte's runs
        # (source, byte + 256, length bucket; their number in the last row) and their two votes
        "run_p": ((R, RUN_BUCKETS, 2), f), "run_n": ((R, RUN_BUCKETS, 2), f),
        "runs": ((R + 1 if R else 0, 3), i), "run_stretch": ((R, 2), f),
        **unit_shapes(config),
        # work, revision 3: whether each source's bucket for each nibble of the byte was empty when taken
        "fresh": ((2, S) if config.table_growth else (0, 0), i),
    }


# positions in ``unit_reals`` and ``unit_ints`` (``units.py``)
ETA_TAU, WINDOW_GAIN, UNIT_REALS = range(3)
AT, WINDOWS, REJECTED, NONFINITE, UNIT_INTS = range(5)


def unit_shapes(config: BitsConfig) -> dict:
    """(shape, dtype) of the units' arrays (``units.Units``): empty without units."""
    N1 = config.units + 1 if config.units else 0
    D = config.unit_degree + 1 if config.units else 0
    K = config.unit_window if config.units else 0
    Y = 256 if config.units else 0
    i, f = np.dtype(np.int64), np.dtype(np.float64)
    return {
        "unit_inputs": ((N1, D), i), "unit_tau": ((Y, N1, D), f), "unit_V": ((K + 1 if N1 else 0, N1), f),
        "unit_a": ((K + 1 if N1 else 0, N1), f), "unit_x": ((K + 1 if N1 else 0,), i), "unit_v": ((Y, N1), f),
        "unit_h0": ((Y, N1), f), "unit_hd": ((Y, N1), f), "unit_G": ((Y, N1, D), f),
        "unit_metric": ((Y, N1, D, D), f), "unit_updates": ((Y, N1), i),
        "unit_work": ((4, K + 3 if N1 else 0, max(N1, 2 * D)), f), "unit_saved": ((K, N1, D), f),
        "unit_reals": ((UNIT_REALS if N1 else 0,), f), "unit_ints": ((UNIT_INTS if N1 else 0,), i),
    }


def input_count(config: BitsConfig) -> int:
    """The mixers' inputs: the sources', the match and number models', the bias; the units'; the runs'."""
    n = INPUTS + (SOURCES if config.runs else 0) + (1 if config.units else 0)
    return n if config.revision == 1 else -(-n // 4) * 4  # revision 2's lanes: padded to a multiple of 4


def state_nbytes(config: BitsConfig) -> int:
    """Bytes held by a learner of ``config``, fixed by its configuration."""
    return sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in state_shapes(config).values())
