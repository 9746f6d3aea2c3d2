"""Slow, obviously-correct references for the bitwise model's kernels (``seqd.core.bits``), from the formulas
of ``core/bits/mixing.py``'s docstring: plain Python floats and ``math``'s exp and log, one term at a time."""

from __future__ import annotations

import math

import numpy as np

from seqd.core.bits.config import (APM_POINTS, APM_RATE, APM_WEIGHT, BITS_SEEN, HISTORY_LIMIT, MIXERS, RATE,
                                   RATE_BITS, RATE_FLOOR, SLOT_LIMIT)


def stretch(p: float) -> float:
    """log(p / (1 - p)) at the centre of the 4096th p falls in."""
    i = min(max(int(p * 4096.0), 0), 4095)
    q = (i + 0.5) / 4096
    return math.log(q / (1.0 - q))


def squash(x: float) -> float:
    x = min(max(x, -30.0), 30.0)
    return 1.0 / (1.0 + math.exp(-x))


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


def mixed(st, hyper, inputs, rows, final_row, apm_rows):
    """The mixers' logits, the final logit, squash of it, and the final 16-bit probability, from the inputs."""
    d = [min(max(float(np.dot(st.weights[r], inputs)), -30.0), 30.0) for r in rows]
    x = sum(float(st.final[final_row, m]) * d[m] for m in range(MIXERS))
    pm = squash(x)
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


def learn_bit(st, hyper, y, nibble, inputs, rows, d, pm, final_row, node, apm_rows, lo, frac):
    """The state after bit y, every part's step written out (on copies of the arrays it changes)."""
    seen = int(st.ints[BITS_SEEN])  # before this bit
    rate = hyper[RATE_FLOOR] + (hyper[RATE] - hyper[RATE_FLOOR]) * hyper[RATE_BITS] / (hyper[RATE_BITS] + seen)
    weights, final = st.weights.copy(), st.final.copy()
    for m, r in enumerate(rows):
        weights[r] += (y - squash(d[m])) * rate * inputs
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
        t[r, lo] += np.float32(hyper[APM_RATE] * (1 - frac) * (y - base[lo] - t[r, lo]))
        t[r, lo + 1] += np.float32(hyper[APM_RATE] * frac * (y - base[lo + 1] - t[r, lo + 1]))
        maps.append(t)
    return dict(weights=weights, final=final, buckets=buckets, history_p=history_p, history_n=history_n,
                apm1=maps[0], apm2=maps[1])

