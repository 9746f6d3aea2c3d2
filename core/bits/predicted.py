"""The bitwise model's two predicted bytes: the match model's and the number model's.

Each names one byte for the next position, and votes on each bit of it
while the bits seen so far agree with it: for the bit it predicts, with the
log-odds that such a prediction was right so far (by match length, or by
the number's digit position and streak).

* **The match model** finds the last time the last ``MATCH_MIN`` bytes were
  seen (a table of positions by their hash), checks back how long the match
  is (up to ``MATCH_LONGEST``), and predicts the byte that came next; the
  match grows while it keeps being right.
* **The number model** is the 256-way model's number source
  (``online/numbers.py``): for the last 9 (else 4) bytes before a number's
  first digit, it keeps the last number seen there and its change from the
  one before, and predicts last + change, written with at least the last
  one's length, then the byte after it.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from ..online.hashing import absorb, finalize, log2_ceil
from .config import (MATCH_BYTE, MATCH_LEN, MATCH_LONGEST, MATCH_MIN, MATCH_PTR, N_AFTER, N_CHANGE, N_KEY, N_KEYED,
                     N_LAST, N_LENGTH, N_ON_TRACK, N_PREDICTED, N_RUN, N_STREAK, N_STREAK_NOW, N_TAG, N_VALUE,
                     NUMBER_BUCKET, NUMBER_BYTE, NUMBER_CONTEXTS, NUMBER_DIGITS, NUMBER_J, NUMBER_POSITIONS,
                     NUMBER_STREAK, NUMBER_TABLE_BITS)
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
    one, the table gives the last position after the same ``MATCH_MIN`` bytes, checked back."""
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
    h = np.uint64(0x9753)
    for q in range(MATCH_MIN):
        h = absorb(h, hist[(t - q) & mask])
    slot = np.int64(finalize(h) >> np.uint64(64 - log2_ceil(table.shape[0])))
    if ints[MATCH_LEN] == 0:
        cand = table[slot]  # the position after the last occurrence, + 0: none (positions count from 1 here)
        if cand > 0:
            n = 0
            while n < MATCH_LONGEST and cand - 1 - n >= 0 and t - (cand - 1 - n) < H - MATCH_LONGEST \
                    and hist[(cand - 1 - n) & mask] == hist[(t - n) & mask]:
                n += 1
            if n >= MATCH_MIN:
                ints[MATCH_LEN] = n
                ints[MATCH_PTR] = cand
    table[slot] = t + 1


@inline_kernel
def _keep_number(table, nint, j, k, symbol):
    """A number of k digits ended (before ``symbol``): keep it under the context it started after."""
    if k > NUMBER_DIGITS or nint[j, N_KEYED] != 1:
        return
    key = np.uint64(nint[j, N_KEY])
    slot = np.int64(key >> np.uint64(64 - NUMBER_TABLE_BITS))
    tag = np.int64(key & np.uint64(0x7FFFFFFF)) | 1
    value = nint[j, N_VALUE]
    if table[j, slot, N_TAG] == tag:
        if value == table[j, slot, N_LAST] + table[j, slot, N_CHANGE]:
            table[j, slot, N_STREAK] = min(table[j, slot, N_STREAK] + 1, NUMBER_STREAK)
        else:
            table[j, slot, N_STREAK] = 0
        table[j, slot, N_CHANGE] = value - table[j, slot, N_LAST]
    else:
        table[j, slot, N_TAG] = tag
        table[j, slot, N_CHANGE] = 0
        table[j, slot, N_STREAK] = 0
    table[j, slot, N_LAST] = value
    table[j, slot, N_LENGTH] = k
    table[j, slot, N_AFTER] = symbol


@inline_kernel
def _expect_number(table, nint, digits, j, key):
    """A number may start next, after the context ``key``: what table j holds for it is its prediction."""
    nint[j, N_KEY] = np.int64(key)
    nint[j, N_KEYED] = 1
    nint[j, N_PREDICTED] = -1
    slot = np.int64(key >> np.uint64(64 - NUMBER_TABLE_BITS))
    tag = np.int64(key & np.uint64(0x7FFFFFFF)) | 1
    if table[j, slot, N_TAG] != tag:
        return
    value = table[j, slot, N_LAST] + table[j, slot, N_CHANGE]
    if value < 0:
        return
    n = 1
    v = value // 10
    while v > 0:
        n += 1
        v //= 10
    n = max(n, table[j, slot, N_LENGTH])
    if n > NUMBER_DIGITS:
        return
    v = value
    for i in range(n):
        digits[j, n - 1 - i] = 48 + v % 10
        v //= 10
    digits[j, n] = table[j, slot, N_AFTER]
    nint[j, N_PREDICTED] = n
    nint[j, N_ON_TRACK] = 1
    nint[j, N_STREAK_NOW] = table[j, slot, N_STREAK]


@inline_kernel
def observe_numbers(st, symbol, t):
    """The number model after byte t (``symbol``, already in the history)."""
    table, nint, digits, hist = st.number_table, st.number_int, st.number_digits, st.hist
    digit = 48 <= symbol <= 57  # no number starts after a digit: the key goes unread
    h = absorb(np.uint64(0x2468), symbol)  # the last NUMBER_CONTEXTS[j] bytes: one hash, shortest up
    done = 1
    for j in range(nint.shape[0] - 1, -1, -1):
        while not digit and done < NUMBER_CONTEXTS[j]:
            h = absorb(h, back(hist, t + 1, done + 1))
            done += 1
        k = nint[j, N_RUN]
        if digit:
            length = nint[j, N_PREDICTED]
            if length > 0 and (k >= length or digits[j, k] != symbol):
                nint[j, N_ON_TRACK] = 0
            if k < NUMBER_DIGITS:
                nint[j, N_VALUE] = nint[j, N_VALUE] * 10 + (symbol - 48)
            nint[j, N_RUN] = k + 1
            continue
        if k > 0:
            _keep_number(table, nint, j, k, symbol)
            nint[j, N_RUN] = 0
            nint[j, N_VALUE] = 0
        _expect_number(table, nint, digits, j, finalize(h))
