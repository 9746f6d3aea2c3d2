"""The settings of a bitwise learner, the shapes of its arrays, and the positions inside them.

``__init__``'s docstring says what the model is; each setting's comment says what it does to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..settings import integers, numbers

MAX_STATE_BYTES = 1 << 32  # a configuration whose tables would hold more is refused

# the context sources, in the order of the bucket tables: the order-k chain, then the line-structure sources
ORDERS = (1, 2, 3, 4, 6, 8, 12, 16)
COLUMN, WORD, FIELD_COLUMN, INDIRECT = range(len(ORDERS), len(ORDERS) + 4)
SOURCES = len(ORDERS) + 4
# mixer inputs: two per source (its slot's probability, its bit history's), the match model's two, the number
# model's, and a constant
MATCH_INPUT = 2 * SOURCES
NUMBER_INPUT = MATCH_INPUT + 2
BIAS_INPUT = NUMBER_INPUT + 1
INPUTS = BIAS_INPUT + 1
BIAS = 0.25  # the constant input's value

# a bucket: 32 uint16 (one 64-byte line): its check tag, the 15 nodes of a nibble's binary tree (p, 16 bits),
# and their 15 bit histories, two bytes to a uint16 (n0 in the high nibble of each byte, n1 in the low one)
BUCKET = 32
TAG_AT, HISTORY_AT = 0, 16

# the mixers' weight sets, stacked in one array: selected by the partial byte (256 rows), by the match model's
# length and the number of deterministic sources (16 x 16 x 8 bit positions), by field and position in it
# (16 x 8 x 2), and by the last two bytes (hashed to 2^13 rows)
SET_ROWS = (256, 2048, 256, 8192)
SET_START = tuple(int(s) for s in np.cumsum((0,) + SET_ROWS[:-1]))
MIXERS = len(SET_ROWS)
FINAL_ROWS = 8 * 4  # the final mixer: by bit position and match state

# adaptive probability maps: 33 interpolation points over stretch in [-8, 8]; by the order-1 context (2^16
# rows) and by a hash of the order-2 one (2^18 rows)
APM_POINTS = 33
APM1_ROWS, APM2_BITS = 1 << 16, 18

MATCH_MIN = 6  # the match model's shortest match, also the length of its hashed context
MATCH_LONGEST = 32  # the longest length it verifies back on finding a candidate
MATCH_BUCKETS = 64

# the number model (as ``online/numbers.py``, voting for one predicted byte): its contexts and table columns
NUMBER_CONTEXTS = (9, 4)
NUMBER_DIGITS = 18
NUMBER_STREAK = 3
NUMBER_POSITIONS = 17
NUMBER_BUCKETS = NUMBER_POSITIONS * (NUMBER_STREAK + 1)
NUMBER_TABLE_BITS = 16
N_TAG, N_LAST, N_CHANGE, N_LENGTH, N_AFTER, N_STREAK = range(6)
N_KEY, N_KEYED, N_RUN, N_VALUE, N_PREDICTED, N_ON_TRACK, N_STREAK_NOW = range(7)
NUMBER_INTS = 7

FIELDS = 64  # fields of a line the field column tells apart

# the scalars: positions in ``BitsState.ints``; the last four are the byte's predictions (-1: none), set at
# its start (``predicted.predict``)
(POS, LINE_START, PREV_LINE_START, PREV_LINE_LEN, FIELD, FIELD_START, SAME, PREV_FIELDS, WORD_HASH, PREV_WORD,
 MATCH_PTR, MATCH_LEN, FIELD_ABOVE, BITS_SEEN, MATCH_BYTE, NUMBER_BYTE, NUMBER_J, NUMBER_BUCKET, INTS) = range(19)


@dataclass(frozen=True)
class BitsConfig:
    """Settings of a bitwise learner of bytes.  ``seed`` is accepted for a common interface: it draws nothing."""

    alphabet_cap: int = 256  # bytes: the model codes 8 binary decisions a symbol
    table_bits: int = 18  # log2 of each context source's buckets (64 bytes each)
    history_bits: int = 22  # log2 of the history ring (bytes) the match model copies from
    match_bits: int = 20  # log2 of the match model's table of positions
    rate: float = 0.02  # the mixers' first learning rate ...
    rate_floor: float = 0.002  # ... which decays to this one ...
    rate_bits: float = 200000.0  # ... as rate_bits / (rate_bits + bits seen)
    slot_limit: int = 60  # a slot's probability moves by at least 1/slot_limit of its error
    history_limit: int = 1023  # a bit history's probability, by at least 1/history_limit
    apm_rate: float = 0.02  # the probability maps' rate
    apm_weight: float = 0.5  # the maps' share of the final probability
    seed: int = 0

    def __post_init__(self):
        integers(self, "alphabet_cap", "table_bits", "history_bits", "match_bits", "slot_limit", "history_limit",
                 "seed")
        numbers(self, "rate", "rate_floor", "rate_bits", "apm_rate", "apm_weight")
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

    def hyper(self) -> np.ndarray:
        """The real-valued settings as the kernels read them (``HYPER``'s order)."""
        return np.array([getattr(self, name) for name in HYPER], dtype=np.float64)


# The bitwise model's presets as ``.sqd`` headers name them (format 4): each row frozen, written out in full;
# changing BitsConfig's defaults adds a row (tests/test_container.py checks that the last one is BitsConfig()).
PRESETS = {
    "bitwise-1": dict(alphabet_cap=256, table_bits=18, history_bits=22, match_bits=20, rate=0.02, rate_floor=0.002,
                      rate_bits=200000.0, slot_limit=60, history_limit=1023, apm_rate=0.02, apm_weight=0.5, seed=0),
}
PRESET = "bitwise-1"  # the preset files are written with

HYPER = ("rate", "rate_floor", "rate_bits", "slot_limit", "history_limit", "apm_rate", "apm_weight")
RATE, RATE_FLOOR, RATE_BITS, SLOT_LIMIT, HISTORY_LIMIT, APM_RATE, APM_WEIGHT = range(len(HYPER))


def state_shapes(config: BitsConfig) -> dict:
    """(shape, dtype) of every array of a learner of ``config`` (``state.BitsState``), in snapshot order."""
    i, f, u16 = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.uint16)
    f32, u8 = np.dtype(np.float32), np.dtype(np.uint8)
    S = SOURCES
    return {
        "code_of": ((config.alphabet_cap,), i), "symbol_of": ((config.alphabet_cap + 1,), i),
        "ints": ((INTS,), i), "fields": ((2, FIELDS + 2), i),
        "hist": ((1 << config.history_bits,), u8), "followers": ((1 << 16,), u8),
        "buckets": ((S, 1 << config.table_bits, BUCKET), u16),
        "history_p": ((S, 256), f), "history_n": ((S, 256), f),
        "weights": ((sum(SET_ROWS), INPUTS), f), "final": ((FINAL_ROWS, MIXERS), f),
        "apm1": ((APM1_ROWS, APM_POINTS), f32), "apm2": ((1 << APM2_BITS, APM_POINTS), f32),
        "match_table": ((1 << config.match_bits,), i), "match_p": ((MATCH_BUCKETS, 2), f),
        "match_n": ((MATCH_BUCKETS, 2), f),
        "number_table": ((len(NUMBER_CONTEXTS), 1 << NUMBER_TABLE_BITS, 6), i),
        "number_int": ((len(NUMBER_CONTEXTS), NUMBER_INTS), i),
        "number_digits": ((len(NUMBER_CONTEXTS), NUMBER_DIGITS + 2), i),
        "number_p": ((len(NUMBER_CONTEXTS), NUMBER_BUCKETS), f),
        "number_n": ((len(NUMBER_CONTEXTS), NUMBER_BUCKETS), f),
        "stretch": ((4096,), f), "apm_base": ((APM_POINTS,), f),
        # work: each source's context hash and bucket (per nibble), and per bit of the byte (the highest first) the
        # inputs, the mixers' outputs, the rows chosen
        "ctx": ((S,), np.dtype(np.uint64)), "bucket": ((2, S), i), "inputs": ((8, INPUTS), f),
        "outputs": ((8, MIXERS + 4), f), "rows": ((8, MIXERS + 8), i),
        "counts": ((2,), i),
    }


def state_nbytes(config: BitsConfig) -> int:
    """Bytes held by a learner of ``config``, fixed by its configuration."""
    return sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in state_shapes(config).values())
