"""A bitwise learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, and what a restored
state must satisfy."""

from __future__ import annotations

import numpy as np

from .config import (FIELDS, MATCH_LEN, N_PREDICTED, N_RUN, NUMBER_DIGITS, NUMBER_TABLE_BITS, POS, PREV_FIELDS,
                     BitsConfig)
from .state import BitsState

MAGIC = b"SEQDBIT\x00"
VERSION = 2  # 1: seqd 0.20; 2: 0.21, the runs' and the units' arrays (a version-1 snapshot's model has neither)


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
    if state.number_table.shape[1] != 1 << NUMBER_TABLE_BITS or np.any(state.match_table < 0):
        raise ValueError("bitwise snapshot holds a table entry outside its arrays")
    for name in ("history_p", "weights", "final", "match_p", "number_p", "stretch", "apm_base", "apm1", "apm2",
                 "run_p", "run_n", "unit_tau", "unit_V", "unit_a", "unit_v", "unit_h0", "unit_hd", "unit_G",
                 "unit_metric", "unit_reals"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"bitwise snapshot holds a non-finite value in {name}")
    if config.units:  # the units' graph and window, which the kernels index with
        N1, K = config.units + 1, config.unit_window
        inputs = state.unit_inputs
        if np.any(inputs < 0) or np.any(inputs >= N1) or np.any(state.unit_x < 0) or np.any(state.unit_x > 255) \
                or not 0 <= state.unit_ints[0] <= K or np.any(inputs[1:, 0] != 0) \
                or np.any(inputs[1:, 1] != np.arange(1, N1)):
            raise ValueError("bitwise snapshot holds a unit index outside its arrays")
