"""The bitwise model's two predicted bytes: the match model's and the number model's.

Each names one byte for the next position, and votes on each bit of it
while the bits seen so far agree with it: for the bit it predicts, with the
log-odds that such a prediction was right so far (by match length, or by
the number's digit position and streak).

* **The match model** finds the last time the last ``MATCH_MIN`` bytes were
  seen (a table of positions by their hash), checks back how long the match
  is (up to ``MATCH_LONGEST``), and predicts the byte that came next; the
  match grows while it keeps being right.
* **The number model** is the predictor both byte models share
  (``kit/numbers.py``): for the last 9 (else 4) bytes before a number's
  first digit, it keeps the last number seen there and its change from the
  one before, and predicts last + change, written with at least the last
  one's length, then the byte after it.

With ``table_growth`` (revision 3) the match table and the number tables
grow with the stream (``kit/growth.py``); ``st.grown`` holds their sizes.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from ..kit.growth import BITS, TAKEN, match_hash, match_slot
from ..kit.hashing import absorb, finalize, log2_ceil
from ..kit.numbers import (N_ON_TRACK, N_PREDICTED, N_RUN, NUMBER_CONTEXTS, NUMBER_POSITIONS, NumberTables,
                           observe_number)
from .config import (GROWN_MATCH, GROWN_NUMBERS, MATCH_BYTE, MATCH_LEN, MATCH_LONGEST, MATCH_MIN, MATCH_PTR,
                     N_STREAK_NOW, NUMBER_BUCKET, NUMBER_BYTE, NUMBER_J)
from .contexts import back


@inline_kernel
def predict(st):
    """The byte each model predicts at the current position, into ``st.ints`` (-1: none)."""
    ints = st.ints
    ints[MATCH_BYTE] = -1
    if ints[MATCH_LEN] > 0:
        ints[MATCH_BYTE] = st.hist[ints[MATCH_PTR] & (st.hist.shape[0] - 1)]
    ints[NUMBER_BYTE] = -1
    nint, digits = st.number_int, st.number_digits
    for j in range(nint.shape[0]):  # the longer context's prediction first
        length = nint[j, N_PREDICTED]
        k = nint[j, N_RUN]
        if length <= 0 or nint[j, N_ON_TRACK] == 0 or k > length:
            continue
        position = min(k, NUMBER_POSITIONS - 2) if k < length else NUMBER_POSITIONS - 1
        ints[NUMBER_BYTE] = digits[j, k]
        ints[NUMBER_J] = j
        ints[NUMBER_BUCKET] = position + NUMBER_POSITIONS * nint[j, N_STREAK_NOW]
        return


@inline_kernel
def agrees(predicted, c0, bit):
    """Whether the byte ``predicted`` (>= 0) begins with the bits of the partial byte c0 (1, then the bits seen
    from the highest) before bit ``bit``."""
    return predicted >= 0 and ((predicted + 256) >> (bit + 1)) == c0


@inline_kernel
def observe_match(st, symbol, t):
    """The match model after byte t (``symbol``, already in the history): the match grows or ends; without
    one, the table gives the last position after the same ``MATCH_MIN`` bytes, checked back.

    Revisions 1 and 2 hash those bytes with a seed of their own and keep the position after them; revision 3
    hashes them as seqd's growing match tables do (``kit/growth.py``) and keeps that position plus one, in a
    table of the size ``st.grown`` says."""
    ints, hist, table = st.ints, st.hist, st.match_table
    H = hist.shape[0]
    mask = H - 1
    if ints[MATCH_LEN] > 0:
        if hist[ints[MATCH_PTR] & mask] == symbol:
            ints[MATCH_LEN] += 1
            ints[MATCH_PTR] += 1
        else:
            ints[MATCH_LEN] = 0
    if t + 1 < MATCH_MIN:
        return
    growing = st.grown.shape[0] > 0
    if growing:
        slot = match_slot(match_hash(hist, t + 1, MATCH_MIN), st.grown[GROWN_MATCH, BITS])
        offset = 1  # an entry holds the position after its context plus one
    else:
        h = np.uint64(0x9753)
        for q in range(MATCH_MIN):
            h = absorb(h, hist[(t - q) & mask])
        slot = np.int64(finalize(h) >> np.uint64(64 - log2_ceil(table.shape[0])))
        offset = 0  # an entry holds the position after its context, counted from 1
    if ints[MATCH_LEN] == 0:
        cand = table[slot] - offset  # the position after the last occurrence (0: none)
        if cand > 0:
            n = 0
            while n < MATCH_LONGEST and cand - 1 - n >= 0 and t - (cand - 1 - n) < H - MATCH_LONGEST \
                    and hist[(cand - 1 - n) & mask] == hist[(t - n) & mask]:
                n += 1
            if n >= MATCH_MIN:
                ints[MATCH_LEN] = n
                ints[MATCH_PTR] = cand
    if growing and table[slot] == 0:
        st.grown[GROWN_MATCH, TAKEN] += 1
    table[slot] = t + 1 + offset


@inline_kernel
def observe_numbers(st, symbol, t):
    """The number model after byte t (``symbol``, already in the history): the shared predictor
    (``kit/numbers.py``) of each table, keyed by the last NUMBER_CONTEXTS[j] bytes, one hash, shortest up."""
    table, nint, digits, hist = st.number_table, st.number_int, st.number_digits, st.hist
    grown = st.grown
    growing = grown.shape[0] > 0
    digit = 48 <= symbol <= 57  # no number starts after a digit: the key goes unread
    h = absorb(np.uint64(0x2468), symbol)
    done = 1
    for j in range(nint.shape[0] - 1, -1, -1):
        while not digit and done < NUMBER_CONTEXTS[j]:
            h = absorb(h, back(hist, t + 1, done + 1))
            done += 1
        bits = grown[GROWN_NUMBERS + j, BITS] if growing else log2_ceil(table.shape[1])
        taken = observe_number(NumberTables(table, nint, digits), j, symbol, finalize(h), bits, growing,
                               N_STREAK_NOW)
        if growing:
            grown[GROWN_NUMBERS + j, TAKEN] += taken
