"""The bitwise model's tables that grow with the stream (revision 3, ``table_growth``).

Every table of a new learner is small, and doubles in place as the stream
fills it (``kit/growth.py``, which says how each kind of table splits), up
to the size its configuration sets: a new stream takes a couple of
megabytes, and a learner takes the full size only once a stream has needed
it.  ``BitsState.grown`` has a row per table (``config.GROWN_*``):

* each context source's buckets, from 2^10 to 2^table_bits, doubling when
  more than a quarter of them are taken (a bucket taken over from another
  context does not count again); each bucket keeps the bits of its
  context's hash that name its half (``config.SPLIT_AT``);
* the match table, from 2^10 to 2^match_bits positions, the same way (a
  split drops the positions that have left the history);
* the two number tables, from 2^10 to 2^number_bits, the same way, by their
  keys' top bits (``kit/numbers.py``);
* the two probability maps' blocks of 256 rows, from 4 to 256 (the first:
  by the last byte's top bits; the second: by the hashed pair's, up to
  2^(apm2_bits - 8)), and the fourth mixer's weight sets, from 2^8 to 2^13
  (by the hashed pair), which keep no keys: they double by the stream's
  position, one block per MAP_SPAN bytes seen and one set per PAIR_SPAN, each
  new half starting from what its parent had learned.

The tables grow after a byte has been learned (``model.end_byte``), so that
every bit of a byte sees one layout; an encoder and its decoder grow theirs
at the same bytes.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from ..kit.growth import (BITS, TAKEN, blocks_due, double_blocks, due, initial_bits, split_keyed,
                          split_match_table, split_sets)
from ..kit.numbers import TAG
from .config import (APM_BLOCK, FIRST_MAP_BLOCKS, FIRST_PAIR_ROWS, GROWN_MAP1, GROWN_MAP2, GROWN_MATCH,
                     GROWN_NUMBERS, GROWN_PAIRS, GROWN_ROWS, MAP_SPAN, MATCH_MIN, PAIR_SPAN, POS, SET_START_2,
                     SOURCES, SPLIT_AT, BitsConfig)
from .config import APM2_BITS, MATCH_BITS, NUMBER_BITS, TABLE_BITS, TABLE_FILL
from .mixing import way_bits

PAIR_ROWS_BITS = 13  # log2 of the fourth mixer's sets at their largest (config.SET_ROWS_2)


def first_sizes(config: BitsConfig) -> np.ndarray:
    """``grown``'s rows for a learner that has seen nothing: each table at its first size, nothing taken."""
    grown = np.zeros((GROWN_ROWS, 2), np.int64)
    grown[:SOURCES, BITS] = initial_bits(config.table_bits)
    grown[GROWN_MATCH, BITS] = initial_bits(config.match_bits)
    grown[GROWN_NUMBERS:GROWN_NUMBERS + 2, BITS] = initial_bits(config.number_bits)
    grown[GROWN_MAP1, BITS] = FIRST_MAP_BLOCKS
    grown[GROWN_MAP2, BITS] = min(FIRST_MAP_BLOCKS, config.apm2_bits - 8)
    grown[GROWN_PAIRS, BITS] = FIRST_PAIR_ROWS
    return grown


def largest_sizes(config: BitsConfig) -> np.ndarray:
    """The most each row of ``grown`` may say (log2): what the configuration's arrays hold."""
    most = np.zeros(GROWN_ROWS, np.int64)
    most[:SOURCES] = config.table_bits
    most[GROWN_MATCH] = config.match_bits
    most[GROWN_NUMBERS:GROWN_NUMBERS + 2] = config.number_bits
    most[GROWN_MAP1] = 8
    most[GROWN_MAP2] = config.apm2_bits - 8
    most[GROWN_PAIRS] = PAIR_ROWS_BITS
    return most


@inline_kernel
def grow(st, hyper):
    """After a byte: every table that is due doubles (nothing without ``table_growth``).  A table of keys is
    looked at only when the byte took a slot of it that was empty; the doublings, rare, are kernels of their own
    (``kit/growth.py``) that take one table."""
    grown = st.grown
    if grown.shape[0] == 0:
        return
    buckets, fresh = st.buckets, st.fresh
    full = np.int64(hyper[TABLE_FILL])
    for j in range(buckets.shape[0]):
        taken = fresh[0, j] + fresh[1, j]
        if taken == 0:
            continue
        grown[j, TAKEN] += taken
        fresh[0, j] = 0
        fresh[1, j] = 0
        if due(grown, j, np.int64(hyper[TABLE_BITS]), full):
            split_sets(buckets, j, grown[j, BITS], SPLIT_AT, way_bits(hyper))
            grown[j, BITS] += 1
    if due(grown, GROWN_MATCH, np.int64(hyper[MATCH_BITS]), full):
        grown[GROWN_MATCH, TAKEN] -= split_match_table(st.match_table, st.hist, st.ints[POS], MATCH_MIN,
                                                       grown[GROWN_MATCH, BITS])
        grown[GROWN_MATCH, BITS] += 1
    table = st.number_table
    for k in range(table.shape[0]):
        if due(grown, GROWN_NUMBERS + k, np.int64(hyper[NUMBER_BITS]), full):
            split_keyed(table, k, grown[GROWN_NUMBERS + k, BITS], TAG)
            grown[GROWN_NUMBERS + k, BITS] += 1
    t = st.ints[POS]  # the tables that keep no keys: the two maps' blocks and the fourth mixer's sets
    if blocks_due(grown, GROWN_MAP1, 8, t, MAP_SPAN):
        double_blocks(st.apm1, 0, APM_BLOCK, grown[GROWN_MAP1, BITS])
        grown[GROWN_MAP1, BITS] += 1
    if blocks_due(grown, GROWN_MAP2, np.int64(hyper[APM2_BITS]) - 8, t, MAP_SPAN):
        double_blocks(st.apm2, 0, APM_BLOCK, grown[GROWN_MAP2, BITS])
        grown[GROWN_MAP2, BITS] += 1
    if blocks_due(grown, GROWN_PAIRS, PAIR_ROWS_BITS, t, PAIR_SPAN):
        double_blocks(st.weights, SET_START_2[3], 1, grown[GROWN_PAIRS, BITS])
        grown[GROWN_PAIRS, BITS] += 1


def in_use(config: BitsConfig, name: str, grown: np.ndarray) -> list:
    """For each array a table that grows keeps: (leading index or None, rows in use along its axis of slots) as
    ``grown`` says; [] for an array that does not grow."""
    if not config.table_growth:
        return []
    if name == "buckets":
        return [(j, 1 << int(grown[j, BITS])) for j in range(SOURCES)]
    if name == "match_table":
        return [(None, 1 << int(grown[GROWN_MATCH, BITS]))]
    if name == "number_table":
        return [(k, 1 << int(grown[GROWN_NUMBERS + k, BITS])) for k in range(2)]
    if name == "apm1":
        return [(None, APM_BLOCK << int(grown[GROWN_MAP1, BITS]))]
    if name == "apm2":
        return [(None, APM_BLOCK << int(grown[GROWN_MAP2, BITS]))]
    if name == "weights":
        return [(None, SET_START_2[3] + (1 << int(grown[GROWN_PAIRS, BITS])))]
    return []


GROWING = ("buckets", "match_table", "number_table", "apm1", "apm2", "weights")  # the arrays in_use knows
