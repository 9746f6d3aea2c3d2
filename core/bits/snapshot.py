"""A bitwise learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, how a learner whose
tables grow stores them, and what a restored state must satisfy."""

from __future__ import annotations

import numpy as np

from ..arrays_snapshot import Layout, ring_views
from ..kit.growth import BITS, TAKEN
from ..kit.numbers import N_PREDICTED, N_RUN, NUMBER_DIGITS, TAG
from .config import FIELDS, GROWN_MATCH, GROWN_NUMBERS, GROWN_ROWS, MATCH_LEN, POS, PREV_FIELDS, SOURCES, BitsConfig
from .growth import GROWING, first_sizes, in_use, largest_sizes
from .state import BitsState

MAGIC = b"SEQDBIT\x00"
VERSION = 3  # 1: seqd 0.20; 2: 0.21, the runs' and the units' arrays (a version-1 snapshot's model has neither);
# 3: 0.22, with table_growth: the growing tables as far as they have grown, the history ring as the symbols it holds
# (or none, kept elsewhere), their sizes (grown)


def _grown(config: BitsConfig, arrays: dict) -> np.ndarray:
    """The tables' sizes a snapshot holds, checked before they say how much of each table to read."""
    grown = arrays["grown"]
    bits = grown[:, BITS]
    if grown.shape != (GROWN_ROWS, 2) or np.any(bits < first_sizes(config)[:, BITS]) \
            or np.any(bits > largest_sizes(config)) or np.any(grown[:, TAKEN] < 0):
        raise ValueError("bitwise snapshot holds a table size outside its configuration's")
    return grown


def stored_views(config: BitsConfig, name: str, array: np.ndarray, arrays: dict, elsewhere: bool) -> list:
    """The parts of ``array`` a snapshot stores (``arrays_snapshot.Layout``): the whole array, but, with
    ``table_growth``, a table that grows as far as it has grown and the history ring as the symbols it holds,
    oldest first (none if they are kept elsewhere)."""
    if not config.table_growth:
        return [array]
    if name == "hist":
        t = int(arrays["ints"][POS])
        if t < 0:
            raise ValueError("bitwise snapshot holds a position outside its arrays")
        n = 0 if elsewhere else min(t, array.shape[0])
        return ring_views(array, t - n, n)
    if name not in GROWING:
        return [array]
    return [array[j, :n] if j is not None else array[:n] for j, n in in_use(config, name, _grown(config, arrays))]


def history_ring(config: BitsConfig, arrays: dict) -> tuple[np.ndarray, int] | None:
    """(history ring, stream position) of a learner whose snapshots may leave the ring elsewhere: one whose tables
    grow (its 64 MiB ring is a stream's history file in the daemon)."""
    if not config.table_growth:
        return None
    return arrays["hist"], int(arrays["ints"][POS])


LAYOUT = Layout(stored_views, history_ring)


def check(config: BitsConfig, state: BitsState) -> None:
    """Every index a kernel follows stays inside its array (a snapshot that passes its checksum may still have
    been written wrong)."""
    ints = state.ints
    if not (np.array_equal(state.code_of, np.arange(1, 257)) and np.array_equal(state.symbol_of, np.arange(-1, 256))):
        raise ValueError("bitwise snapshot holds a byte code that is not byte + 1")
    if ints[POS] < 0 or ints[MATCH_LEN] < 0 or not 0 <= ints[PREV_FIELDS] <= FIELDS:
        raise ValueError("bitwise snapshot holds a position outside its arrays")
    nint = state.number_int
    if np.any(nint[:, N_RUN] < 0) or np.any(nint[:, N_PREDICTED] > NUMBER_DIGITS) \
            or np.any(state.number_digits < 0) or np.any(state.number_digits > 255):
        raise ValueError("bitwise snapshot holds a number prediction outside its arrays")
    if state.number_table.shape[1] != 1 << config.number_bits or np.any(state.match_table < 0):
        raise ValueError("bitwise snapshot holds a table entry outside its arrays")
    for name in ("history_p", "weights", "final", "match_p", "number_p", "stretch", "apm_base", "apm1", "apm2",
                 "run_p", "run_n", "unit_tau", "unit_V", "unit_a", "unit_v", "unit_h0", "unit_hd", "unit_G",
                 "unit_metric", "unit_reals"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"bitwise snapshot holds a non-finite value in {name}")
    if config.table_growth:
        _check_growth(config, state)
    if config.units:  # the units' graph and window, which the kernels index with
        N1, K = config.units + 1, config.unit_window
        inputs = state.unit_inputs
        if np.any(inputs < 0) or np.any(inputs >= N1) or np.any(state.unit_x < 0) or np.any(state.unit_x > 255) \
                or not 0 <= state.unit_ints[0] <= K or np.any(inputs[1:, 0] != 0) \
                or np.any(inputs[1:, 1] != np.arange(1, N1)):
            raise ValueError("bitwise snapshot holds a unit index outside its arrays")


def _check_growth(config: BitsConfig, state: BitsState) -> None:
    """Each growing table's count of keys taken is what it holds (beyond its size the table was never read
    into: ``stored_views``)."""
    grown = _grown(config, state._asdict())
    for j in range(SOURCES):
        size = 1 << int(grown[j, BITS])
        if np.count_nonzero(state.buckets[j, :size, 0]) != grown[j, TAKEN]:
            raise ValueError("bitwise snapshot's context table does not hold what its size and count say")
    size = 1 << int(grown[GROWN_MATCH, BITS])
    if np.count_nonzero(state.match_table[:size]) != grown[GROWN_MATCH, TAKEN]:
        raise ValueError("bitwise snapshot's match table does not hold what its size and count say")
    for k in range(2):
        size = 1 << int(grown[GROWN_NUMBERS + k, BITS])
        table = state.number_table[k]
        if np.count_nonzero(table[:size, TAG]) != grown[GROWN_NUMBERS + k, TAKEN]:
            raise ValueError("bitwise snapshot's number table does not hold what its size and count say")
