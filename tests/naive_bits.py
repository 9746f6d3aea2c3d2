"""Slow, obviously-correct references for the bitwise model's kernels (``seqd.core.bits``), from the formulas
of ``core/bits/mixing.py``'s docstring: plain Python floats and ``math``'s exp and log, one term at a time."""

from __future__ import annotations

import math

import numpy as np

from seqd.core.bits.config import (APM_POINTS, APM_RATE, APM_WEIGHT, BITS_SEEN, HISTORY_LIMIT, MIXERS, RATE,
                                   RATE_BITS, RATE_FLOOR, RUN_AT, SLOT_LIMIT, UNIT_WRITING_DISCOUNT,
                                   UNIT_WRITING_PRIOR)


def stretch(p: float) -> float:
    """log(p / (1 - p)) at the centre of the 4096th p falls in."""
    i = min(max(int(p * 4096.0), 0), 4095)
    q = (i + 0.5) / 4096
    return math.log(q / (1.0 - q))


def squash(x: float) -> float:
    x = min(max(x, -30.0), 30.0)
    return 1.0 / (1.0 + math.exp(-x))


def squash_table(x: float) -> float:
    """Revision 2's squash: linear interpolation between the logistic's values at the 64ths over [-12, 12]."""
    at = (min(max(x, -12.0), 12.0) + 12.0) * 64.0
    lo = min(int(at), 2 * 12 * 64 - 1)
    f0, f1 = (1.0 / (1.0 + math.exp(-(q / 64.0 - 12.0))) for q in (lo, lo + 1))
    return f0 + (f1 - f0) * (at - lo)


def run_bucket(n: int) -> int:
    return n if n < 8 else 8 + (n - 8) // 4 if n < 16 else 10 if n < 32 else 11 if n < 64 else 12 if n < 128 else 13


def runs_at_start(st) -> list[tuple[int, int, int, float, float]]:
    """Each source's run at a byte's start, from its high-nibble bucket: (source, byte, length bucket, vote for
    a 0, vote for a 1), the votes -stretch and stretch of the run's rates then."""
    out = []
    for j in range(st.buckets.shape[0]):
        b = int(st.bucket[0, j])
        if b < 0 or st.run_p.shape[0] == 0:
            continue
        w = int(st.buckets[j, b, RUN_AT])
        if w >> 8:
            c = run_bucket(w >> 8)
            out.append((j, w & 255, c, -stretch(float(st.run_p[j, c, 0])), stretch(float(st.run_p[j, c, 1]))))
    return out


def run_inputs(runs, sources: int, c0: int, bit: int) -> np.ndarray:
    """Each source's run vote on the bit: the one for the bit its byte has there, while that byte begins with
    the bits of c0; 0 otherwise."""
    x = np.zeros(sources)
    for j, byte, _, v0, v1 in runs:
        if (byte | 256) >> (bit + 1) == c0:
            x[j] = v1 if (byte >> bit) & 1 else v0
    return x


def unit_logit(st, c0: int) -> float:
    """sum_i a_i v[c0, i] at the current window time."""
    a = st.unit_a[int(st.unit_ints[0])]
    return sum(float(a[i]) * float(st.unit_v[c0, i]) for i in range(a.shape[0]))


def unit_writing_step(st, hyper, c0: int, y: int, u: float):
    """(v, h0, hd) rows of node c0 after its bit y, by eqs. 17-21: the discounted sums, then the
    quasi-diagonal Newton step scaled by 1/N, written term by term."""
    a = [float(v) for v in st.unit_a[int(st.unit_ints[0])]]
    v, h0, hd = (arr[c0].astype(float).copy() for arr in (st.unit_v, st.unit_h0, st.unit_hd))
    p = squash_table(u)
    c, e = p * (1 - p), y - p
    g = hyper[UNIT_WRITING_DISCOUNT]
    prior = g * hyper[UNIT_WRITING_PRIOR]
    h0[0] = (1 - g) * h0[0] + prior + c
    for i in range(1, len(a)):
        h0[i] = (1 - g) * h0[i] + c * a[i]
        hd[i] = (1 - g) * hd[i] + prior + c * a[i] ** 2
    grad0 = e - prior * v[0]
    steps = [(e * a[i] - prior * v[i] - grad0 * h0[i] / h0[0]) / (hd[i] - h0[i] ** 2 / h0[0])
             for i in range(1, len(a))]
    bias = grad0 / h0[0] - sum(h0[i] / h0[0] * steps[i - 1] for i in range(1, len(a)))
    eta = 1.0 / (len(a) - 1)
    v[1:] += eta * np.array(steps)
    v[0] += eta * bias
    return v, h0, hd


def node_of(c0: int, bit: int) -> int:
    """The nibble tree's node: the high nibble's bits seen (c0 itself), or the low nibble's with a leading 1."""
    if bit >= 4:
        return c0
    seen = 3 - bit
    return (1 << seen) | (c0 & ((1 << seen) - 1))


def histories(buckets, j, b) -> list[tuple[int, int]]:
    """(n0, n1) of each node 1..15 of bucket b of source j, unpacked byte by byte (index 0 unused)."""
    raw = buckets[j, b, 16:24].astype(np.uint16).view(np.uint8)  # little-endian: node 2k in byte 2k, 2k+1 next
    out = [(0, 0)]
    for node in range(1, 16):
        h = int(raw[node])
        out.append((h >> 4, h & 15))
    return out


def source_inputs(st, nibble: int, node: int) -> np.ndarray:
    """Each source's two inputs: stretch of its slot's p, stretch of its history's q; 0, 0 for a node unseen
    (``nibble``: 0 for the high one's buckets, 1 for the low one's)."""
    S = st.buckets.shape[0]
    x = np.zeros(2 * S)
    for j in range(S):
        b = int(st.bucket[nibble, j])
        if b < 0:  # no bucket for this context yet
            continue
        n0, n1 = histories(st.buckets, j, b)[node]
        if n0 == 0 and n1 == 0:
            continue
        x[2 * j] = stretch(int(st.buckets[j, b, node]) / 65536.0)
        x[2 * j + 1] = stretch(float(st.history_p[j, n0 * 16 + n1]))
    return x


def mixed(st, hyper, inputs, rows, final_row, apm_rows, revision=1):
    """The mixers' logits, the final logit, squash of it, and the final 16-bit probability, from the inputs
    (revision 2: no second mixer, squash by the table; revision 3: maps of probabilities, not of offsets from
    the identity, their knots placed from the stretch clipped to [-8, 8])."""
    d = [min(max(float(np.dot(st.weights[r], inputs)), -30.0), 30.0) for r in rows]
    if revision >= 2:
        d[1] = 0.0
    x = sum(float(st.final[final_row, m]) * d[m] for m in range(MIXERS))
    pm = squash_table(x) if revision >= 2 else squash(x)
    if revision >= 3:
        at = (min(max(x, -8.0), 8.0) + 8.0) * 2.0
        lo = min(int(at), APM_POINTS - 2)
        frac = at - lo
        maps = [(1 - frac) * float(table[r, lo]) + frac * float(table[r, lo + 1])
                for table, r in zip((st.apm1, st.apm2), apm_rows)]
        a = hyper[APM_WEIGHT]
        pf = (1 - a) * pm + a * (maps[0] + maps[1]) / 2
        return d, x, pm, min(max(int(pf * 65536.0), 1), 65535), lo, frac
    xs = min(max(x, -7.999), 7.999)
    at = (xs + 8.0) * 2.0
    lo = int(at)
    frac = at - lo
    base = [squash((i - 16) / 2.0) for i in range(APM_POINTS)]
    maps = []
    for table, r in zip((st.apm1, st.apm2), apm_rows):
        maps.append((base[lo] + float(table[r, lo])) * (1 - frac) + (base[lo + 1] + float(table[r, lo + 1])) * frac)
    a = hyper[APM_WEIGHT]
    pf = (1 - a) * pm + a * (maps[0] + maps[1]) / 2
    return d, x, pm, min(max(int(pf * 65536.0), 1), 65535), lo, frac


def learn_bit(st, hyper, y, nibble, inputs, rows, d, pm, final_row, node, apm_rows, lo, frac, revision=1):
    """The state after bit y, every part's step written out (on copies of the arrays it changes); revision 2's
    runs and units have theirs in :func:`learn_runs` and :func:`unit_writing_step`."""
    seen = int(st.ints[BITS_SEEN])  # before this bit
    rate = hyper[RATE_FLOOR] + (hyper[RATE] - hyper[RATE_FLOOR]) * hyper[RATE_BITS] / (hyper[RATE_BITS] + seen)
    weights, final = st.weights.copy(), st.final.copy()
    for m, r in enumerate(rows):
        if revision >= 2 and m == 1:
            continue
        weights[r] += (y - (squash_table(d[m]) if revision >= 2 else squash(d[m]))) * rate * inputs
    final[final_row] += (y - pm) * rate * 0.5 * np.array(d)
    buckets, history_p, history_n = st.buckets.copy(), st.history_p.copy(), st.history_n.copy()
    for j in range(buckets.shape[0]):
        b = int(st.bucket[nibble, j])
        n0, n1 = histories(st.buckets, j, b)[node]
        r = max(1.0 / (n0 + n1 + 1.5), 1.0 / hyper[SLOT_LIMIT])
        p = int(buckets[j, b, node])
        buckets[j, b, node] = p + int(r * ((y << 16) - y - p))
        if n0 or n1:
            h = n0 * 16 + n1
            history_n[j, h] += 1
            history_p[j, h] += max(1.0 / (history_n[j, h] + 1.5), 1.0 / hyper[HISTORY_LIMIT]) * (y - history_p[j, h])
        if y:
            n1 = min(n1 + 1, 15)
            n0 = (n0 + 2) // 2 if n0 > 2 else n0
        else:
            n0 = min(n0 + 1, 15)
            n1 = (n1 + 2) // 2 if n1 > 2 else n1
        raw = buckets[j, b, 16:24].copy().view(np.uint8)
        raw[node] = n0 * 16 + n1
        buckets[j, b, 16:24] = raw.view(np.uint16)
    maps = []
    base = [squash((i - 16) / 2.0) for i in range(APM_POINTS)]
    for table, r in zip((st.apm1, st.apm2), apm_rows):
        t = table.copy()
        if revision >= 3:  # a knot moves toward the bit by its share of the rate
            for k, share in ((lo, 1 - frac), (lo + 1, frac)):
                t[r, k] = np.float32(float(t[r, k]) + hyper[APM_RATE] * share * (y - float(t[r, k])))
        else:
            t[r, lo] += np.float32(hyper[APM_RATE] * (1 - frac) * (y - base[lo] - t[r, lo]))
            t[r, lo + 1] += np.float32(hyper[APM_RATE] * frac * (y - base[lo + 1] - t[r, lo + 1]))
        maps.append(t)
    return dict(weights=weights, final=final, buckets=buckets, history_p=history_p, history_n=history_n,
                apm1=maps[0], apm2=maps[1])



def learn_runs(st, runs, c0: int, bit: int, y: int):
    """(run_p, run_n) after bit y: each run that voted moves its rate toward whether it was right."""
    p, n = st.run_p.copy(), st.run_n.copy()
    for j, byte, c, _, _ in runs:
        if (byte | 256) >> (bit + 1) == c0:
            e = (byte >> bit) & 1
            n[j, c, e] += 1
            p[j, c, e] += max(1.0 / (n[j, c, e] + 1.5), 1.0 / 256) * ((y == e) - p[j, c, e])
    return p, n


def rows_3(st, c0: int) -> tuple[int, int, int]:
    """Revision 3's rows that follow the tables' growth: the fourth mixer's set (by the hashed pair of last
    bytes, as many of its top bits as the sets have grown to), and the two maps' rows (blocks of 256 by the last
    byte's top bits and by the pair's, c0 the row in the block)."""
    from naive import fold, splitmix_finalize
    from seqd.core.bits.config import GROWN_MAP1, GROWN_MAP2, GROWN_PAIRS, POS, SET_START_2

    t = int(st.ints[POS])
    last = int(st.hist[(t - 1) % len(st.hist)]) if t >= 1 else 256
    before = int(st.hist[(t - 2) % len(st.hist)]) if t >= 2 else 256
    pair = splitmix_finalize(fold(last & 255, before & 255))
    g = st.grown[:, 0]
    fourth = SET_START_2[3] + (pair >> (64 - int(g[GROWN_PAIRS])))
    map1 = c0 + 256 * ((last & 255) >> (8 - int(g[GROWN_MAP1])))
    map2 = ((pair >> (64 - int(g[GROWN_MAP2]))) << 8) | c0
    return fourth, map1, map2
