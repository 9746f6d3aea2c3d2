"""A bitwise learner's arrays (their shapes and dtypes follow from the configuration: ``config.state_shapes``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..online.tables import table_array
from .config import ADDED_WEIGHT, INPUTS, MIXERS, SOURCES, WEIGHT, BitsConfig, state_shapes
from .model import fill_tables
from .units import init_units


class BitsState(NamedTuple):
    """Every array a bitwise learner owns; S = the context sources, T = 2^table_bits, H = 2^history_bits."""

    code_of: np.ndarray  # (256,) int64: code of each byte, byte + 1 (the open-alphabet interface's)
    symbol_of: np.ndarray  # (257,) int64: byte of each code (-1 for the escape, which is never used)
    ints: np.ndarray  # the scalars (config: POS, LINE_START, ...)
    fields: np.ndarray  # (2, FIELDS + 2) int64: where each field of this line [0] and the previous one [1] starts
    hist: np.ndarray  # (H,) uint8: the history ring
    followers: np.ndarray  # (65536,) uint8: the byte that followed each pair of bytes last
    buckets: np.ndarray  # (S, T, 32) uint16: each source's buckets (config: TAG_AT, HISTORY_AT, RUN_AT)
    history_p: np.ndarray  # (S, 256): q, the probability of a 1 after each bit history, per source
    history_n: np.ndarray  # (S, 256): the times each was met
    weights: np.ndarray  # (rows of the weight sets, inputs): the mixers' weight sets, stacked
    final: np.ndarray  # (FINAL_ROWS, MIXERS): the final mixer's
    apm1: np.ndarray  # (2^16, 33) float32: the order-1 map, as offsets from apm_base
    apm2: np.ndarray  # (2^apm2_bits, 33) float32: the hashed order-2 map, the same way
    match_table: np.ndarray  # (2^match_bits,) int64: the position after the last occurrence of each hashed context
    match_p: np.ndarray  # (64, 2): the match model's hit rate, by length bucket and bit predicted
    match_n: np.ndarray  # (64, 2): its tries
    number_table: np.ndarray  # the number model (config: N_TAG, ...), one table per context length
    number_int: np.ndarray
    number_digits: np.ndarray
    number_p: np.ndarray  # its hit rate by table, position and streak
    number_n: np.ndarray
    stretch: np.ndarray  # (4096,): constant, log(p / (1 - p)) at p = (i + 1/2) / 4096
    apm_base: np.ndarray  # (33,): constant, squash((i - 16) / 2)
    ctx: np.ndarray  # work, from here on: each source's context hash
    bucket: np.ndarray  # each source's bucket for the current nibble
    inputs: np.ndarray  # the mixers' inputs
    outputs: np.ndarray  # the mixers' logits and what the final probability was made of
    rows: np.ndarray  # the rows chosen, and the bit's node and predictions
    counts: np.ndarray  # (2,) int64: bytes seen, (reserved, 0)
    # the runs (empty without them)
    run_p: np.ndarray  # (S, RUN_BUCKETS, 2): a run's hit rate by source, length bucket and the bit it predicts
    run_n: np.ndarray  # its tries
    runs: np.ndarray  # work: (S + 1, 3) the byte's runs (source, byte + 256, length bucket), their number last
    run_stretch: np.ndarray  # work: (S, 2) each run's vote for a 0 and for a 1
    # the recurrent units (units.py; empty without them)
    unit_inputs: np.ndarray
    unit_tau: np.ndarray
    unit_V: np.ndarray
    unit_a: np.ndarray
    unit_x: np.ndarray
    unit_v: np.ndarray
    unit_h0: np.ndarray
    unit_hd: np.ndarray
    unit_G: np.ndarray
    unit_metric: np.ndarray
    unit_updates: np.ndarray
    unit_work: np.ndarray
    unit_saved: np.ndarray
    unit_reals: np.ndarray
    unit_ints: np.ndarray


def new_state(config: BitsConfig) -> BitsState:
    """A learner that has seen nothing.  The tables are megabytes read at random places: each gets memory of
    its own, aligned to a huge page (``online/tables.table_array``), so a bucket is one cache line."""
    shapes = state_shapes(config)
    state = BitsState(**{name: table_array(*shapes[name]) for name in BitsState._fields})
    state.code_of[:] = np.arange(1, 257)
    state.symbol_of[:] = np.arange(-1, 256)
    n0, n1 = np.divmod(np.arange(256), 16)
    state.history_p[:] = (n1 + 0.4) / (n0 + n1 + 0.8)
    state.weights[:, :INPUTS] = WEIGHT
    state.weights[:, INPUTS:] = ADDED_WEIGHT
    state.final[:] = 1.0 / MIXERS
    state.match_p[:] = 0.5
    state.number_p[:] = 0.5
    state.number_int[:, 4] = -1  # N_PREDICTED: none
    state.run_p[:] = 0.5
    fill_tables(state.stretch, state.apm_base)
    init_units(state, config)
    assert state.buckets.shape[0] == SOURCES
    return state
