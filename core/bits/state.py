"""A bitwise learner's arrays (their shapes and dtypes follow from the configuration: ``config.state_shapes``)."""

from __future__ import annotations

import math
import mmap
from typing import NamedTuple

import numpy as np

from ..kit.growth import BITS
from ..kit.memory import HUGE_PAGE, advise_huge, table_array
from .config import (ADDED_WEIGHT, APM_BLOCK, GROWN_MAP1, GROWN_MAP2, GROWN_PAIRS, INPUTS, MIXERS, POS, SET_START_2,
                     SOURCES, WEIGHT, BitsConfig, state_shapes)
from .growth import GROWING, first_sizes, in_use
from .model import fill_tables
from .units import init_units


class BitsState(NamedTuple):
    """Every array a bitwise learner owns; S = the context sources, T = 2^table_bits, H = 2^history_bits."""

    code_of: np.ndarray  # (256,) int64: code of each byte, byte + 1 (the open-alphabet interface's)
    symbol_of: np.ndarray  # (257,) int64: byte of each code (-1 for the escape, which is never used)
    ints: np.ndarray  # the scalars (config: POS, LINE_START, ...)
    grown: np.ndarray  # (GROWN_ROWS, 2) int64, with table_growth: each growing table's size and count (growth.py)
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
    fresh: np.ndarray  # work, with table_growth: (2, S) whether each source's buckets of the byte were taken empty


def new_state(config: BitsConfig, eager: bool = False) -> BitsState:
    """A learner that has seen nothing.  The tables are megabytes read at random places: each gets memory of
    its own, aligned to a huge page (``kit/memory.table_array``), so a bucket is one cache line.  With
    ``table_growth`` those that grow and the history are ordinary mappings, whose pages take memory only
    once written (a new learner writes the first rows of each, ``growth.py``), and huge pages only once they
    fill them (:func:`advise`); ``eager`` asks for huge pages from the start: more memory for a short stream
    (2 MiB a table as soon as it is touched), fewer misses of the TLB while the tables are small (``seqd
    compress`` and ``seqd eval``, one stream to a process)."""
    shapes = state_shapes(config)
    state = BitsState(**{name: table_array(*shapes[name], huge=eager or not grows(config, name))
                         for name in BitsState._fields})
    state.code_of[:] = np.arange(1, 257)
    state.symbol_of[:] = np.arange(-1, 256)
    n0, n1 = np.divmod(np.arange(256), 16)
    state.history_p[:] = (n1 + 0.4) / (n0 + n1 + 0.8)
    weights = state.weights
    if config.table_growth:
        state.grown[...] = first_sizes(config)
        weights = weights[:SET_START_2[3] + (1 << int(state.grown[GROWN_PAIRS, BITS]))]
    weights[:, :INPUTS] = WEIGHT
    weights[:, INPUTS:] = ADDED_WEIGHT
    state.final[:] = 1.0 / MIXERS
    state.match_p[:] = 0.5
    state.number_p[:] = 0.5
    state.number_int[:, 4] = -1  # N_PREDICTED: none
    state.run_p[:] = 0.5
    fill_tables(state.stretch, state.apm_base)
    if config.revision >= 3:  # maps of probabilities: each row starts as the identity
        for apm, row in ((state.apm1, GROWN_MAP1), (state.apm2, GROWN_MAP2)):
            rows = APM_BLOCK << int(state.grown[row, BITS]) if config.table_growth else apm.shape[0]
            apm[:rows] = state.apm_base
    init_units(state, config)
    assert state.buckets.shape[0] == SOURCES
    return state


def grows(config: BitsConfig, name: str) -> bool:
    """Whether array ``name`` is in memory only as far as it has grown (or, the history, been written)."""
    return config.table_growth and (name in GROWING or name == "hist")


def resident_nbytes(config: BitsConfig, state: BitsState) -> int:
    """The bytes of the state in memory: every array whole, but, with ``table_growth``, each table that grows as
    far as it has grown and the history ring as far as it has been written, each to the page.  Memory that
    grows with what the stream has seen: what the daemon's budget counts."""
    t = int(state.ints[POS])
    return _resident(config, state_shapes(config), t, state.grown)


def first_resident_nbytes(config: BitsConfig) -> int:
    """:func:`resident_nbytes` of a learner that has seen nothing, without making one."""
    return _resident(config, state_shapes(config), 0, first_sizes(config) if config.table_growth else None)


def _resident(config: BitsConfig, shapes: dict, t: int, grown) -> int:
    total = 0
    for name, (shape, dtype) in shapes.items():
        nbytes = math.prod(shape) * np.dtype(dtype).itemsize
        if not grows(config, name) or nbytes < HUGE_PAGE:  # small arrays are ordinary NumPy memory
            total += nbytes
        elif name == "hist":
            total += _touched(min(t, shape[0]) * np.dtype(dtype).itemsize)
        else:
            row = _slot_nbytes(name, shape, dtype)
            total += sum(_touched(n * row) for _, n in in_use(config, name, grown))
    return total


def _slot_nbytes(name: str, shape, dtype) -> int:
    """The bytes of one slot (row) of a growing table: its trailing shape's."""
    return math.prod(shape[2:] if name in ("buckets", "number_table") else shape[1:]) * np.dtype(dtype).itemsize


def _touched(nbytes: int) -> int:
    """The memory ``nbytes`` of a growing table take: in pages, huge ones once they fill one (``advise``)."""
    page = HUGE_PAGE if nbytes >= HUGE_PAGE else mmap.PAGESIZE
    return -(-nbytes // page) * page


def advise(config: BitsConfig, state: BitsState, advised: set) -> None:
    """Huge pages for each table that grows (and the history) once what it uses fills one: from then on it
    takes memory a huge page at a time, whole, and its random reads miss the TLB far less (``kit/memory.py``).
    ``advised`` holds the parts already advised (a learner's own set)."""
    if not config.table_growth:
        return
    if "hist" not in advised and int(state.ints[POS]) >= HUGE_PAGE:
        advise_huge(state.hist, 0, state.hist.nbytes)
        advised.add("hist")
    for name in GROWING:
        array = getattr(state, name)
        for j, n in in_use(config, name, state.grown):
            if (name, j) in advised or n * _slot_nbytes(name, array.shape, array.dtype) < HUGE_PAGE:
                continue
            part = array if j is None else array[j]
            advise_huge(part, 0, part.nbytes)
            advised.add((name, j))
