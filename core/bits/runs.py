"""The sources' runs: the byte each context saw last, and how many times in a row (revision 2).

A high nibble's bucket of a source (``mixing.find_buckets``) is the context's
own: besides its nodes it keeps, at ``RUN_AT``, the byte that followed the
context the last time and the length of the run of that byte there (up to
255).  At a byte's start each source with a run names that byte
(``read_runs``); while the bits seen agree with it, the run votes for its
next bit with stretch(r), r the rate at which runs of that source, length
bucket and predicted bit turned out right so far, read once per byte
(``run_input``).  After each bit, the rates of the runs that voted learn
whether they were right (``learn_runs``): r moves toward it by max(1 / (n +
1.5), 1/256), n their tries.  After the byte, each source's run grows or
starts anew (``observe_runs``).  Where a bit history (``mixing.py``) tells
how a node's bits went, a run tells that a context has been deterministic at
the byte level, and for how long: PAQ's run model (Mahoney, "Data
Compression Explained", section 4.2).
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from .config import RUN_AT
from .tables import rate_of

RUN_RATE_FLOOR = 1.0 / 256


@inline_kernel
def run_bucket(n):
    """The length bucket of a run of n (1..255): 1..7 one by one, then 8-11, 12-15, 16-31, 32-63, 64-127, more."""
    if n < 8:
        return n
    if n < 16:
        return 8 + (n - 8) // 4
    if n < 32:
        return 10
    if n < 64:
        return 11
    if n < 128:
        return 12
    return 13


@inline_kernel
def voted(v, c0, bit):
    """The bit a run of byte ``v - 256`` votes for at bit ``bit``, 0 or 1, if that byte begins with the partial
    byte c0's bits; else -1 (it voted on no bit of the byte since it disagreed)."""
    return (v >> bit) & 1 if (v >> (bit + 1)) == c0 else -1


@inline_kernel
def _stretch(table, p):
    return table[min(max(np.int64(p * 4096.0), 0), 4095)]


@inline_kernel
def read_runs(st):
    """The byte's runs, from each source's high-nibble bucket (found, not yet claimed): into ``st.runs`` (source,
    byte + 256, length bucket; their number in the last row) and their votes for a 0 and a 1 into
    ``st.run_stretch``."""
    buckets, bucket, runs, votes = st.buckets, st.bucket[0], st.runs, st.run_stretch
    if runs.shape[0] == 0:
        return
    n = 0
    for j in range(runs.shape[0] - 1):
        b = bucket[j]
        if b < 0:
            continue
        w = np.int64(buckets[j, b, RUN_AT])
        if w >> 8:
            c = run_bucket(w >> 8)
            runs[n, 0] = j
            runs[n, 1] = (w & 255) | 256  # it agrees with the partial byte c0 before bit i if its >> (i + 1) is c0
            runs[n, 2] = c
            votes[n, 0] = -_stretch(st.stretch, st.run_p[j, c, 0])
            votes[n, 1] = _stretch(st.stretch, st.run_p[j, c, 1])
            n += 1
    runs[runs.shape[0] - 1, 0] = n


@inline_kernel
def run_input(st, inputs, at, c0, bit):
    """Each source's run vote on bit ``bit`` (partial byte c0) into ``inputs[at + source]``: its vote for the bit
    it predicts if it still agrees with c0, else 0."""
    runs = st.runs
    for j in range(runs.shape[0] - 1):
        inputs[at + j] = 0.0
    for q in range(runs[runs.shape[0] - 1, 0]):
        e = voted(runs[q, 1], c0, bit)
        if e >= 0:
            inputs[at + runs[q, 0]] = st.run_stretch[q, e]


@inline_kernel
def learn_runs(st, c0, bit, y):
    """After bit ``bit`` (partial byte c0) came out ``y``: the hit rate of each run that voted on it."""
    runs, p, n = st.runs, st.run_p, st.run_n
    for q in range(runs[runs.shape[0] - 1, 0]):
        e = voted(runs[q, 1], c0, bit)
        if e >= 0:
            j, c = runs[q, 0], runs[q, 2]
            n[j, c, e] += 1.0
            p[j, c, e] += rate_of(n[j, c, e], RUN_RATE_FLOOR) * ((1.0 if y == e else 0.0) - p[j, c, e])


@inline_kernel
def observe_runs(st, symbol):
    """After the byte ``symbol``: each source's run (in its high-nibble bucket, claimed by now) grows, or starts
    anew with this byte."""
    if st.runs.shape[0] == 0:
        return
    buckets, bucket = st.buckets, st.bucket[0]
    for j in range(st.runs.shape[0] - 1):
        b = bucket[j]
        w = np.int64(buckets[j, b, RUN_AT])
        if (w >> 8) > 0 and (w & 255) == symbol:
            if (w >> 8) < 255:
                w += 256
        else:
            w = 256 | symbol
        buckets[j, b, RUN_AT] = np.uint16(w)
