"""One binary decision of the bitwise model: its probability from the sources, then every part's step.

A byte is coded as its 8 bits, highest first; bit i is predicted from the
partial byte c0 (a 1 followed by the bits seen) and the byte's contexts, so
that p(x) = prod_i p(b_i | b_<i, contexts) and the code length of a byte is
the sum of its bits' (``__init__``'s docstring).  For each bit:

* **Inputs.**  Each context source's bucket for (its context, the nibble
  seen so far) holds, for each node of the nibble's binary tree, a
  probability p (16 bits) and a bit history (n0, n1): the counts of 0s and
  1s seen there, each at most 15, the other one halved past 2 on each new
  bit.  The source gives two inputs: stretch(p) and stretch(q(n0, n1)), q
  the probability its source's bit histories (n0, n1) turned out to have
  (indirect: learned across all its contexts).  A node never seen gives 0.
  The match and number models give +-stretch of their hit rate for the bit
  they predict (and the match model its length); a constant 0.25 is the bias.
  stretch(p) = log(p / (1 - p)), by a table of 4096 points.
* **Mixers.**  Four logistic mixers, each a weight vector selected by a
  small context (the partial byte; the match length with the number of
  deterministic sources and the bit position; the field and position in it;
  the last two bytes hashed), give logits d_m = w_m . x; a final mixer
  selected by bit position and match state weighs them, x_f = sum_m v_m d_m.
* **Maps.**  Two adaptive probability maps (by the last byte, and by the
  last two hashed, each with c0) refine squash(x_f) by interpolation between
  33 points over stretch in [-8, 8]; the final p is (1 - a) squash(x_f) + a
  (map1 + map2) / 2, quantised to 16 bits.

Learning, after bit y: each mixer steps on its own log-loss, w_m += r (y -
squash(d_m)) x, with a rate r that decays from ``rate`` to ``rate_floor``;
the final mixer by r / 2 on the final logit's; each slot's p moves toward y
by max(1 / (n0 + n1 + 1.5), 1 / slot_limit) of the error; the histories'
probabilities q by max(1 / (n + 1.5), 1 / history_limit), n the times that
history was met; the maps' two interpolation points by ``apm_rate``.

Revision 2 (preset ``bitwise-2``, ``config.revision``) adds two inputs to
every bit's mixers and changes three things.  The inputs: the units' logit
u(c0) (``units.py``; its weight starts at 0.05) and each source's run vote
(``runs.py``).  The changes: the second mixer is gone (ablated, it bought
nothing once the runs and the units were in); each dot product is summed
in four lanes, inputs i = 0, 1, 2, 3 mod 4, then (l0 + l1) + (l2 + l3), the
inputs padded with zeros to a multiple of 4 (a fixed order, so the same
bits everywhere, that the compiler can keep in one vector register);
squash is the table interpolation of ``tables.py``; and the order-2 map's
rows come in blocks of 256, one per hashed pair of last bytes, c0 the row
in the block, so that a byte's 8 rows are near each other (2^16 rows
instead of 2^18 hashed ones: the same bits on the public logs).

Every operation is a basic IEEE operation or seqd's own exp/log
(``kernels/elementary.py``); the tables hold integers where they can.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from ..kernels.elementary import exp, log2
from ..kit.growth import BITS, set_of, split_word
from ..kit.hashing import absorb, finalize
from ..kit.maps import between, knot, step_knot
from .config import (APM2_BITS, APM_POINTS, APM_RATE, APM_WEIGHT, BIAS, BIAS_INPUT, BITS_SEEN, BUCKET, FIELD,
                     FIELD_START, GROWN_MAP1, GROWN_MAP2, GROWN_PAIRS, HISTORY_AT, HISTORY_LIMIT, MATCH_BYTE,
                     MATCH_INPUT, MATCH_LEN, MIXERS, NUMBER_BUCKET, NUMBER_BYTE, NUMBER_INPUT, NUMBER_J, POS, RATE,
                     RATE_BITS, RATE_FLOOR, REVISION, SAME, SET_START, SET_START_2, SLOT_LIMIT, SPLIT_AT, TABLE_BITS,
                     TABLE_WAYS, TAG_AT, UNIT_INPUT)
from .contexts import back
from .predicted import agrees
from .runs import learn_runs, run_input
from .tables import RECIPROCALS, rate_of, squash_fast
from .units import learn_node, node_logit, units_of

# positions in the work arrays: ``rows`` (the mixers' rows, then these) and ``outputs`` (the mixers' logits)
FINAL_ROW, APM1_ROW, APM2_ROW, APM_LO, NODE, MATCH_BUCKET, MATCH_EXPECTED, NUMBER_EXPECTED = range(MIXERS, MIXERS + 8)
C0_ROW = MIXERS + 8  # revision 2: the bit's partial byte
FINAL_LOGIT, MIXED, APM_FRACTION, FINAL_P = range(MIXERS, MIXERS + 4)
UNIT_LOGIT = MIXERS + 4  # revision 2: the units' logit
CLAMP = 30.0  # logits are held in [-30, 30]


@inline_kernel
def squash(x):
    """1 / (1 + e^-x), x clamped to [-CLAMP, CLAMP]."""
    return 1.0 / (1.0 + exp(-min(max(x, -CLAMP), CLAMP)))


@inline_kernel
def stretch_of(table, p):
    """log(p / (1 - p)) of a probability in [0, 1], from the 4096-point table."""
    return table[min(max(np.int64(p * 4096.0), 0), 4095)]


@inline_kernel
def _bucket_and_tag(z, bits):
    """The bucket (of 2^bits) and the non-zero 16-bit check tag of the hash z of a context with a partial byte."""
    return np.int64(z >> np.uint64(64 - bits)), np.uint16((z >> np.uint64(8)) & np.uint64(0xFFFF)) | np.uint16(1)


@inline_kernel
def _source_bits(st, j, full):
    """log2 of source j's buckets in use: its table's whole size (``full``), or as far as it has grown."""
    return st.grown[j, BITS] if st.grown.shape[0] > 0 else full


@inline_kernel
def way_bits(hyper):
    """log2 of the buckets in a set (``table_ways``: 1, 2 or 4)."""
    ways = hyper[TABLE_WAYS]
    return 2 if ways == 4.0 else (1 if ways == 2.0 else 0)


@inline_kernel
def _in_set(buckets, j, z, bits, tag, ways):
    """With ``table_growth``: the bucket of source j holding the context of hash z (its ``tag``) in its set of
    2^ways (of 2^bits buckets), or -2 - b for the bucket b it would take: an empty one, else the one whose first
    node has seen fewer bits (PAQ's replacement by priority)."""
    first = set_of(z, bits, ways)
    weakest = -1
    least = 1 << 30
    for b in range(first, first + (1 << ways)):
        held = buckets[j, b, TAG_AT]
        if held == tag:
            return b
        seen = 0 if held == 0 else _seen(buckets[j, b, HISTORY_AT])
        if seen < least:
            least = seen
            weakest = b
    return -2 - weakest


@inline_kernel
def _seen(word):
    """n0 + n1 of the bit history of a bucket's node 1 (the high byte of its first history word)."""
    h = np.int64(word) >> 8
    return (h >> 4) + (h & 15)


@inline_kernel
def find_buckets(st, hyper, c0):
    """Each source's bucket for its context and the nibble seen so far (c0 = 1 at bit 7, 16..31 at bit 3), into
    ``st.bucket[0]`` or ``[1]``: its index b where the bucket's check tag is this context's, else -2 - b (no
    bucket yet: :func:`claim` takes b over once the byte is known).  Revision 3 looks in the context's set of
    buckets (:func:`_in_set`).  Nothing is written to the tables."""
    buckets, ctx, nibble = st.buckets, st.ctx, 0 if c0 < 16 else 1
    bucket = st.bucket[nibble]
    full = np.int64(hyper[TABLE_BITS])  # log2 of the tables' buckets
    sets = st.fresh.shape[0] > 0
    ways = way_bits(hyper)
    for j in range(buckets.shape[0]):
        z = finalize(absorb(ctx[j], c0))
        bits = _source_bits(st, j, full)
        b, tag = _bucket_and_tag(z, bits)
        if sets:
            bucket[j] = _in_set(buckets, j, z, bits, tag, ways)
            st.fresh[nibble, j] = 0
        else:
            bucket[j] = b if buckets[j, b, TAG_AT] == tag else -2 - b


@inline_kernel
def claim(st, c0):
    """Before a nibble's bits are learned: each source without a bucket for it (:func:`find_buckets`) takes
    over the one found for it, cleared (the context it held, if any, is lost).  Revision 3 keeps in the
    bucket the bits its table splits by, and counts (``st.fresh``) whether the bucket was empty."""
    buckets, ctx, nibble = st.buckets, st.ctx, 0 if c0 < 16 else 1
    bucket = st.bucket[nibble]
    sets = st.fresh.shape[0] > 0
    for j in range(buckets.shape[0]):
        if bucket[j] >= 0:
            continue
        b = -2 - bucket[j]
        z = finalize(absorb(ctx[j], c0))
        if sets:
            st.fresh[nibble, j] = 1 if buckets[j, b, TAG_AT] == 0 else 0
        buckets[j, b, TAG_AT] = np.uint16((z >> np.uint64(8)) & np.uint64(0xFFFF)) | np.uint16(1)
        for q in range(1, HISTORY_AT):
            buckets[j, b, q] = 32768
        for q in range(HISTORY_AT, BUCKET):
            buckets[j, b, q] = 0
        if sets:
            buckets[j, b, SPLIT_AT] = split_word(z)
        bucket[j] = b


@inline_kernel
def node_of(c0, bit):
    """The node (1..15) of the nibble's tree that bit ``bit`` is decided at, given the partial byte c0."""
    if bit >= 4:
        return c0
    seen = 3 - bit
    return (1 << seen) | (c0 & ((1 << seen) - 1))


@inline_kernel
def history_of(buckets, j, b, node):
    """The bit history (n0 << 4 | n1) of a node of bucket b of source j."""
    w = np.int64(buckets[j, b, HISTORY_AT + (node >> 1)])
    return (w >> 8) if (node & 1) else (w & 255)


@inline_kernel
def probability(st, hyper, c0, bit):
    """p(bit = 1) for bit ``bit`` of the current byte, c0 its partial byte, as an integer in [1, 65535] (out of
    65536); the inputs, rows and logits it was made from stay in the work arrays' row 7 - bit for
    :func:`learn_bit`.  Nothing learned changes."""
    k = 7 - bit
    buckets, bucket, inputs, rows, out = st.buckets, st.bucket[0 if bit >= 4 else 1], st.inputs[k], st.rows[k], \
        st.outputs[k]
    table = st.stretch
    ints = st.ints
    revised = hyper[REVISION] >= 2.0
    S = buckets.shape[0]
    node = node_of(c0, bit)
    rows[NODE] = node
    deterministic = 0
    for j in range(S):
        b = bucket[j]
        inputs[2 * j] = 0.0
        inputs[2 * j + 1] = 0.0
        if b < 0:  # no bucket: a context not seen (or lost to another)
            continue
        h = history_of(buckets, j, b, node)
        if h == 0:
            continue
        inputs[2 * j] = table[np.int64(buckets[j, b, node]) >> 4]
        inputs[2 * j + 1] = stretch_of(table, st.history_p[j, h])
        if (h >> 4) == 0 or (h & 15) == 0:
            deterministic += 1
    mb = 0
    rows[MATCH_EXPECTED] = -1
    inputs[MATCH_INPUT] = 0.0
    inputs[MATCH_INPUT + 1] = 0.0
    predicted = ints[MATCH_BYTE]
    if agrees(predicted, c0, bit):
        e = (predicted >> bit) & 1
        mlen = ints[MATCH_LEN]
        mb = min(mlen, 31) + 1
        s = stretch_of(table, st.match_p[mb, e])
        sign = 1.0 if e == 1 else -1.0
        inputs[MATCH_INPUT] = sign * s
        inputs[MATCH_INPUT + 1] = sign * min(mlen, 32) / 16.0
        rows[MATCH_EXPECTED] = e
    rows[MATCH_BUCKET] = mb
    rows[NUMBER_EXPECTED] = -1
    inputs[NUMBER_INPUT] = 0.0
    predicted = ints[NUMBER_BYTE]
    if agrees(predicted, c0, bit):
        e = (predicted >> bit) & 1
        s = stretch_of(table, st.number_p[ints[NUMBER_J], ints[NUMBER_BUCKET]])
        inputs[NUMBER_INPUT] = s if e == 1 else -s
        rows[NUMBER_EXPECTED] = e
    inputs[BIAS_INPUT] = BIAS
    if revised:  # the units' logit, then the runs' votes
        rows[C0_ROW] = c0
        un = units_of(st)
        runs_at = UNIT_INPUT
        if un.v.shape[0] > 0:
            u = node_logit(un, c0)
            out[UNIT_LOGIT] = u
            inputs[UNIT_INPUT] = min(max(u, -8.0), 8.0)
            runs_at += 1
        if st.runs.shape[0] > 0:
            run_input(st, inputs, runs_at, c0, bit)
    # the mixers' rows
    t = ints[POS]
    f = min(ints[FIELD], 15)
    pos = min(t - ints[FIELD_START], 7)
    last, before = back(st.hist, t, 1) & 255, back(st.hist, t, 2) & 255
    start = SET_START_2 if revised else SET_START
    rows[0] = start[0] + c0
    rows[1] = start[1] + (min(mb, 15) * 16 + min(deterministic, 15)) * 8 + (7 - bit)  # revision 1's only
    rows[2] = start[2] + (f * 8 + pos) * 2 + ints[SAME]
    pair = finalize(absorb(np.uint64(last), before))  # the last two bytes hashed: the fourth mixer's and map 2's
    growing = st.grown.shape[0] > 0
    rows[3] = start[3] + np.int64(pair >> np.uint64(64 - (st.grown[GROWN_PAIRS, BITS] if growing else 13)))
    w = st.weights
    if revised:  # three mixers, each dot product in four lanes
        out[0] = min(max(_dot4(w[rows[0]], inputs), -CLAMP), CLAMP)
        out[1] = 0.0
        out[2] = min(max(_dot4(w[rows[2]], inputs), -CLAMP), CLAMP)
        out[3] = min(max(_dot4(w[rows[3]], inputs), -CLAMP), CLAMP)
    else:
        n_in = inputs.shape[0]
        for m in range(MIXERS):
            r = rows[m]
            d = 0.0
            for i in range(n_in):
                d += w[r, i] * inputs[i]
            out[m] = min(max(d, -CLAMP), CLAMP)
    fr = (7 - bit) * 4 + (0 if mb == 0 else (1 if ints[MATCH_LEN] <= 16 else 2))
    rows[FINAL_ROW] = fr
    x = 0.0
    for m in range(MIXERS):
        x += st.final[fr, m] * out[m]
    out[FINAL_LOGIT] = x
    pm = squash_fast(x) if revised else squash(x)
    out[MIXED] = pm
    # the probability maps
    apm2_bits = np.int64(hyper[APM2_BITS])
    if hyper[REVISION] >= 3.0:  # blocks of 256 rows by the last byte's top bits and by the hashed pair's, as far as
        # the maps have grown; each row the probabilities at its knots (kit/maps.py)
        lo, frac = knot((min(max(x, -8.0), 8.0) + 8.0) * 2.0, APM_POINTS)
        blocks1 = st.grown[GROWN_MAP1, BITS] if growing else 8
        blocks2 = st.grown[GROWN_MAP2, BITS] if growing else apm2_bits - 8
        r1 = c0 + 256 * (last >> (8 - blocks1))
        r2 = (np.int64(pair >> np.uint64(64 - blocks2)) << 8) | c0
        a1 = between(st.apm1[r1], lo, frac)
        a2 = between(st.apm2[r2], lo, frac)
    else:  # offsets from the identity, apm_base
        xs = min(max(x, -7.999), 7.999)
        at = (xs + 8.0) * 2.0
        lo = np.int64(at)
        frac = at - lo
        r1 = c0 + 256 * last
        if revised:  # a block of 256 rows per hashed pair of bytes, the row c0 in it: a byte's 8 rows are near
            r2 = (np.int64(pair >> np.uint64(72 - apm2_bits)) << 8) | c0
        else:
            r2 = np.int64(finalize(absorb(absorb(np.uint64(c0), last), before)) >> np.uint64(64 - apm2_bits))
        base = st.apm_base[lo] * (1.0 - frac) + st.apm_base[lo + 1] * frac
        a1 = base + st.apm1[r1, lo] * (1.0 - frac) + st.apm1[r1, lo + 1] * frac
        a2 = base + st.apm2[r2, lo] * (1.0 - frac) + st.apm2[r2, lo + 1] * frac
    rows[APM_LO] = lo
    out[APM_FRACTION] = frac
    rows[APM1_ROW] = r1
    rows[APM2_ROW] = r2
    a = hyper[APM_WEIGHT]
    pf = (1.0 - a) * pm + a * 0.5 * (a1 + a2)
    p16 = min(max(np.int64(pf * 65536.0), 1), 65535)
    out[FINAL_P] = p16 / 65536.0
    return p16


@inline_kernel
def _dot4(row, x):
    """sum_i row[i] x[i] in four lanes, i mod 4, each summed in order, then (l0 + l1) + (l2 + l3); len(x) is a
    multiple of 4 (revision 2's inputs are padded with zeros)."""
    a0 = a1 = a2 = a3 = 0.0
    n = np.uint64(x.shape[0])
    i = np.uint64(0)
    while i < n:  # unsigned indices: no test for a negative one, which keeps the four lanes in one vector
        a0 += row[i] * x[i]
        a1 += row[i + np.uint64(1)] * x[i + np.uint64(1)]
        a2 += row[i + np.uint64(2)] * x[i + np.uint64(2)]
        a3 += row[i + np.uint64(3)] * x[i + np.uint64(3)]
        i += np.uint64(4)
    return (a0 + a1) + (a2 + a3)


@inline_kernel
def code_length(p16, y):
    """-log2 of the probability p16 / 65536 gave bit y."""
    return -log2((p16 if y == 1 else 65536 - p16) / 65536.0)


@inline_kernel
def _count(h, y):
    """The bit history h = (n0 << 4 | n1) after bit y: its count grows (to 15), the other one halves past 2."""
    n0 = h >> 4
    n1 = h & 15
    if y == 1:
        n1 = min(n1 + 1, 15)
        if n0 > 2:
            n0 = (n0 + 2) // 2
    else:
        n0 = min(n0 + 1, 15)
        if n1 > 2:
            n1 = (n1 + 2) // 2
    return n0 * 16 + n1


@inline_kernel
def _map_step(table, r, lo, frac, base, rate, y):
    """A probability map's two interpolation points (of row r, around ``lo``) move toward y."""
    table[r, lo] += np.float32(rate * (1.0 - frac) * (y - base[lo] - table[r, lo]))
    table[r, lo + 1] += np.float32(rate * frac * (y - base[lo + 1] - table[r, lo + 1]))


@inline_kernel
def learn_bit(st, hyper, bit, y):
    """Every part's step after bit ``bit`` of the byte turned out ``y``, from what :func:`probability` left
    for it."""
    k = 7 - bit
    buckets, bucket, inputs, rows, out = st.buckets, st.bucket[0 if bit >= 4 else 1], st.inputs[k], st.rows[k], \
        st.outputs[k]
    ints = st.ints
    seen = np.float64(ints[BITS_SEEN])
    ints[BITS_SEEN] += 1
    rate = hyper[RATE_FLOOR] + (hyper[RATE] - hyper[RATE_FLOOR]) * hyper[RATE_BITS] / (hyper[RATE_BITS] + seen)
    w = st.weights
    revised = hyper[REVISION] >= 2.0
    if revised:
        for m in (0, 2, 3):
            e = (y - squash_fast(out[m])) * rate
            row = w[rows[m]]
            for i in range(inputs.shape[0]):
                row[i] += e * inputs[i]
    else:
        n_in = inputs.shape[0]
        for m in range(MIXERS):
            r = rows[m]
            e = (y - squash(out[m])) * rate
            for i in range(n_in):
                w[r, i] += e * inputs[i]
    fr = rows[FINAL_ROW]
    e = (y - out[MIXED]) * rate * 0.5
    for m in range(MIXERS):
        st.final[fr, m] += e * out[m]
    node = rows[NODE]
    slot_floor = 1.0 / hyper[SLOT_LIMIT]
    history_floor = 1.0 / hyper[HISTORY_LIMIT]
    for j in range(buckets.shape[0]):
        b = bucket[j]
        h = history_of(buckets, j, b, node)
        n = (h >> 4) + (h & 15)
        r = max(RECIPROCALS[n], slot_floor)
        p = np.int64(buckets[j, b, node])
        p += np.int64(r * ((y << 16) - y - p))
        buckets[j, b, node] = np.uint16(p)
        if h != 0:
            st.history_n[j, h] += 1.0
            q = st.history_p[j, h]
            st.history_p[j, h] = q + rate_of(st.history_n[j, h], history_floor) * (y - q)
        at = HISTORY_AT + (node >> 1)
        word = np.int64(buckets[j, b, at])
        if node & 1:
            word = (word & 255) | (_count(h, y) << 8)
        else:
            word = (word & 0xFF00) | _count(h, y)
        buckets[j, b, at] = np.uint16(word)
    lo = rows[APM_LO]
    frac = out[APM_FRACTION]
    ar = hyper[APM_RATE]
    if hyper[REVISION] >= 3.0:
        map1, map2 = st.apm1[rows[APM1_ROW]], st.apm2[rows[APM2_ROW]]
        step_knot(map1, lo, ar, 1.0 - frac, y)
        step_knot(map1, lo + 1, ar, frac, y)
        step_knot(map2, lo, ar, 1.0 - frac, y)
        step_knot(map2, lo + 1, ar, frac, y)
    else:
        _map_step(st.apm1, rows[APM1_ROW], lo, frac, st.apm_base, ar, y)
        _map_step(st.apm2, rows[APM2_ROW], lo, frac, st.apm_base, ar, y)
    if revised:
        c0 = rows[C0_ROW]
        un = units_of(st)
        if un.v.shape[0] > 0:
            learn_node(un, hyper, c0, y, out[UNIT_LOGIT])
        if st.runs.shape[0] > 0:
            learn_runs(st, c0, bit, y)
    e = rows[MATCH_EXPECTED]
    if e >= 0:
        mb = rows[MATCH_BUCKET]
        st.match_n[mb, e] += 1.0
        st.match_p[mb, e] += rate_of(st.match_n[mb, e], 1.0 / 256) * ((1.0 if y == e else 0.0) - st.match_p[mb, e])
    e = rows[NUMBER_EXPECTED]
    if e >= 0:
        j = ints[NUMBER_J]
        k = ints[NUMBER_BUCKET]
        st.number_n[j, k] += 1.0
        st.number_p[j, k] += rate_of(st.number_n[j, k], 1.0 / 256) * ((1.0 if y == e else 0.0) - st.number_p[j, k])
