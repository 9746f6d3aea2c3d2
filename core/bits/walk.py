"""The next byte's whole distribution, exactly as learning would score it.

A byte's bits are learned one by one as they are coded (``model.learn_buffer``):
bit 6 is predicted by the model that has learned bit 7.  So p(x) for each
byte x is the product along its path of the node probabilities that the
model would give after learning the path's earlier bits.  ``predict``
walks the byte's tree depth first: at each node it predicts, then for
each child learns the bit (:func:`save` first keeps every value the step
will change), goes down, and on the way back puts the values back
(:func:`restore`), so that the state ends exactly as it began.  A nibble's
buckets taken over (``mixing.claim``) are put back the same way.  The
walk costs some 255 predictions and 254 steps and their undoing: about
30 bytes' learning.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel, kernel
from .config import BITS_SEEN, BUCKET, HISTORY_AT, MIXERS, NUMBER_BUCKET, NUMBER_J
from .mixing import (APM1_ROW, APM2_ROW, APM_LO, C0_ROW, FINAL_ROW, MATCH_BUCKET, MATCH_EXPECTED, NODE,
                     NUMBER_EXPECTED, claim, find_buckets, history_of, learn_bit, probability)
from .model import start_byte
from .runs import voted

# an undo record (a row of ``undo``): the mixers' rows, the final mixer's row, per source (slot, history word,
# q, n), the maps' four points, the match and number models' (p, n); with runs, the (p, n) of each run's rate;
# with units, the node's writing weights and Hessian terms (``undo_width``)
SOURCE_VALUES, MAP_VALUES, PREDICTED_VALUES, RUN_VALUES, UNIT_ARRAYS = 4, 4, 4, 2, 3


def undo_width(inputs: int, sources: int, runs: int, unit_columns: int) -> int:
    """The length of one undo record: ``inputs`` mixer inputs, ``sources`` sources, ``runs`` sources with runs
    (0 or ``sources``), ``unit_columns`` = N + 1 with N units (0 without)."""
    return (MIXERS * inputs + MIXERS + SOURCE_VALUES * sources + MAP_VALUES + PREDICTED_VALUES + RUN_VALUES * runs
            + UNIT_ARRAYS * unit_columns)


@inline_kernel
def _layout(st):
    """Where an undo record's parts start: the final mixer's, the sources', the maps', the runs', the units'."""
    final_at = MIXERS * st.inputs.shape[1]
    sources_at = final_at + MIXERS
    maps_at = sources_at + SOURCE_VALUES * st.buckets.shape[0]
    runs_at = maps_at + MAP_VALUES + PREDICTED_VALUES
    units_at = runs_at + RUN_VALUES * max(st.runs.shape[0] - 1, 0)
    return final_at, sources_at, maps_at, runs_at, units_at


@inline_kernel
def save(st, bit, record):
    """Keep in ``record`` every value ``learn_bit(st, hyper, bit, y)`` will change, whatever y."""
    k = 7 - bit
    rows, buckets, bucket = st.rows[k], st.buckets, st.bucket[0 if bit >= 4 else 1]
    final_at, sources_at, at, runs_at, units_at = _layout(st)
    n_in = st.inputs.shape[1]
    for m in range(MIXERS):
        for i in range(n_in):
            record[m * n_in + i] = st.weights[rows[m], i]
        record[final_at + m] = st.final[rows[FINAL_ROW], m]
    node = rows[NODE]
    S = buckets.shape[0]
    for j in range(S):
        b = bucket[j]
        h = history_of(buckets, j, b, node)
        q = sources_at + SOURCE_VALUES * j
        record[q] = buckets[j, b, node]
        record[q + 1] = buckets[j, b, HISTORY_AT + (node >> 1)]
        record[q + 2] = st.history_p[j, h]
        record[q + 3] = st.history_n[j, h]
    lo = rows[APM_LO]
    record[at] = st.apm1[rows[APM1_ROW], lo]
    record[at + 1] = st.apm1[rows[APM1_ROW], lo + 1]
    record[at + 2] = st.apm2[rows[APM2_ROW], lo]
    record[at + 3] = st.apm2[rows[APM2_ROW], lo + 1]
    at += MAP_VALUES
    e = rows[MATCH_EXPECTED]
    if e >= 0:
        record[at] = st.match_p[rows[MATCH_BUCKET], e]
        record[at + 1] = st.match_n[rows[MATCH_BUCKET], e]
    e = rows[NUMBER_EXPECTED]
    if e >= 0:
        record[at + 2] = st.number_p[st.ints[NUMBER_J], st.ints[NUMBER_BUCKET]]
        record[at + 3] = st.number_n[st.ints[NUMBER_J], st.ints[NUMBER_BUCKET]]
    if st.runs.shape[0] > 0:
        runs = st.runs
        for q in range(runs[runs.shape[0] - 1, 0]):
            e, j, c = voted(runs[q, 1], rows[C0_ROW], bit), runs[q, 0], runs[q, 2]
            if e >= 0:
                record[runs_at + RUN_VALUES * j] = st.run_p[j, c, e]
                record[runs_at + RUN_VALUES * j + 1] = st.run_n[j, c, e]
    N1 = st.unit_v.shape[1]
    if st.unit_v.shape[0] > 0:
        c0 = rows[C0_ROW]
        for i in range(N1):
            record[units_at + i] = st.unit_v[c0, i]
            record[units_at + N1 + i] = st.unit_h0[c0, i]
            record[units_at + 2 * N1 + i] = st.unit_hd[c0, i]


@inline_kernel
def restore(st, bit, record):
    """Put back what :func:`save` kept: the state as it was before bit ``bit`` was learned."""
    k = 7 - bit
    rows, buckets, bucket = st.rows[k], st.buckets, st.bucket[0 if bit >= 4 else 1]
    final_at, sources_at, at, runs_at, units_at = _layout(st)
    n_in = st.inputs.shape[1]
    st.ints[BITS_SEEN] -= 1
    for m in range(MIXERS):
        for i in range(n_in):
            st.weights[rows[m], i] = record[m * n_in + i]
        st.final[rows[FINAL_ROW], m] = record[final_at + m]
    node = rows[NODE]
    S = buckets.shape[0]
    for j in range(S):
        b = bucket[j]
        q = sources_at + SOURCE_VALUES * j
        buckets[j, b, node] = np.uint16(record[q])
        buckets[j, b, HISTORY_AT + (node >> 1)] = np.uint16(record[q + 1])
        h = history_of(buckets, j, b, node)  # the history as it was
        st.history_p[j, h] = record[q + 2]
        st.history_n[j, h] = record[q + 3]
    lo = rows[APM_LO]
    st.apm1[rows[APM1_ROW], lo] = np.float32(record[at])
    st.apm1[rows[APM1_ROW], lo + 1] = np.float32(record[at + 1])
    st.apm2[rows[APM2_ROW], lo] = np.float32(record[at + 2])
    st.apm2[rows[APM2_ROW], lo + 1] = np.float32(record[at + 3])
    at += MAP_VALUES
    e = rows[MATCH_EXPECTED]
    if e >= 0:
        st.match_p[rows[MATCH_BUCKET], e] = record[at]
        st.match_n[rows[MATCH_BUCKET], e] = record[at + 1]
    e = rows[NUMBER_EXPECTED]
    if e >= 0:
        st.number_p[st.ints[NUMBER_J], st.ints[NUMBER_BUCKET]] = record[at + 2]
        st.number_n[st.ints[NUMBER_J], st.ints[NUMBER_BUCKET]] = record[at + 3]
    if st.runs.shape[0] > 0:
        runs = st.runs
        for q in range(runs[runs.shape[0] - 1, 0]):
            e, j, c = voted(runs[q, 1], rows[C0_ROW], bit), runs[q, 0], runs[q, 2]
            if e >= 0:
                st.run_p[j, c, e] = record[runs_at + RUN_VALUES * j]
                st.run_n[j, c, e] = record[runs_at + RUN_VALUES * j + 1]
    N1 = st.unit_v.shape[1]
    if st.unit_v.shape[0] > 0:
        c0 = rows[C0_ROW]
        for i in range(N1):
            st.unit_v[c0, i] = record[units_at + i]
            st.unit_h0[c0, i] = record[units_at + N1 + i]
            st.unit_hd[c0, i] = record[units_at + 2 * N1 + i]


@inline_kernel
def _claim_kept(st, c0, kept):
    """``mixing.claim`` for the nibble of c0, keeping in ``kept`` (S, BUCKET + 1) each source's bucket entry
    and, for a bucket taken over, its line as it was."""
    bucket = st.bucket[0 if c0 < 16 else 1]
    for j in range(bucket.shape[0]):
        kept[j, 0] = bucket[j]
        if bucket[j] < 0:
            b = -2 - bucket[j]
            for q in range(BUCKET):
                kept[j, 1 + q] = st.buckets[j, b, q]
    claim(st, c0)


@inline_kernel
def _unclaim(st, c0, kept):
    bucket = st.bucket[0 if c0 < 16 else 1]
    for j in range(bucket.shape[0]):
        if kept[j, 0] < 0:
            b = -2 - kept[j, 0]
            for q in range(BUCKET):
                st.buckets[j, b, q] = np.uint16(kept[j, 1 + q])
        bucket[j] = kept[j, 0]


@kernel
def predict(st, hyper, nodes, p, undo, kept, branch):
    """The next byte's distribution into ``p`` (257,): p[1 + b] for byte b (p[0], the escape, is 0: every byte
    is always possible), the product of the 16-bit probabilities of its bits that learning it would score.
    ``nodes`` (256,) receives p(1) at each node c0 = 1..255 of the byte's tree; ``undo`` (8, undo_width),
    ``kept`` (2, S, BUCKET + 1) int64 and ``branch`` (8,) int64 are work.  The state ends as it began, but
    for work arrays that learning overwrites.  Returns the width, 257."""
    start_byte(st, hyper)
    nodes[1] = probability(st, hyper, 1, 7) / 65536.0
    depth = 0
    c0 = 1
    branch[0] = 0
    while True:
        if depth < 7 and branch[depth] < 2:  # down to the next child
            y = branch[depth]
            branch[depth] += 1
            bit = 7 - depth
            if y == 0 and (bit == 7 or bit == 3):
                _claim_kept(st, c0, kept[0 if bit == 7 else 1])
            save(st, bit, undo[depth])
            learn_bit(st, hyper, bit, y)
            c0 = 2 * c0 + y
            depth += 1
            if depth == 4:
                find_buckets(st, hyper, c0)
            nodes[c0] = probability(st, hyper, c0, 7 - depth) / 65536.0
            branch[depth] = 0
            continue
        # this node's children are done: back up to its parent
        if depth == 0 or depth == 4:
            _unclaim(st, c0, kept[0 if depth == 0 else 1])
        if depth == 0:
            break
        depth -= 1
        c0 >>= 1
        restore(st, 7 - depth, undo[depth])
    p[0] = 0.0
    for b in range(256):
        prob = 1.0
        c0 = 1
        for bit in range(7, -1, -1):
            y = (b >> bit) & 1
            prob *= nodes[c0] if y == 1 else 1.0 - nodes[c0]
            c0 = c0 * 2 + y
        p[1 + b] = prob
    return 257
