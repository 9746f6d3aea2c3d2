"""The bitwise model's context sources: the contexts of the next byte, and what each byte seen changes.

At each byte boundary every source hashes its context (``locate``): the
order-k chain over the last k bytes (``ORDERS``), the column with the byte
above it in the previous line, the current word with its field number, the
field column (field number, position in the field, the byte at that position
of the previous line's same field, and whether the field so far repeats it),
and the indirect source (the last byte with the byte that followed the last
two bytes the time before).  These are the 256-way model's sources
(``online/sources.py``), read here as contexts of binary decisions.  After
the byte, ``observe`` moves the history ring, the line and field positions
and the word hash on.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from ..kit.hashing import absorb
from .config import (COLUMN, FIELD, FIELD_ABOVE, FIELD_COLUMN, FIELD_START, FIELDS, INDIRECT, LINE_START, ORDERS,
                     POS, PREV_FIELDS, PREV_LINE_LEN, PREV_LINE_START, PREV_WORD, SAME, WORD, WORD_HASH)

EMPTY = 256  # a byte before the stream's start, or no byte above


@inline_kernel
def back(hist, t, k):
    """The byte k steps before position t (1: the last one), or EMPTY before the stream began or beyond the
    ring."""
    if k > t or k > hist.shape[0]:
        return np.int64(EMPTY)
    return np.int64(hist[(t - k) & (hist.shape[0] - 1)])


@inline_kernel
def locate(st):
    """Every source's context hash for the next byte, into ``st.ctx``; the field column's byte above into
    ``st.ints[FIELD_ABOVE]`` (``observe`` tells from it whether the field still repeats)."""
    ints, hist, fields, ctx = st.ints, st.hist, st.fields, st.ctx
    t = ints[POS]
    h = np.uint64(0)
    done = 0
    for j in range(len(ORDERS)):
        while done < ORDERS[j]:
            done += 1
            h = absorb(h, back(hist, t, done))
        ctx[j] = absorb(h, 1000 + ORDERS[j])
    col = t - ints[LINE_START]
    above = np.int64(EMPTY)
    if col < ints[PREV_LINE_LEN]:
        above = back(hist, t, t - ints[PREV_LINE_START] - col)
    ctx[COLUMN] = absorb(absorb(np.uint64(0x1234), min(col, 1023)), above)
    ctx[WORD] = absorb(absorb(np.uint64(0x5678), min(ints[FIELD], 63)), ints[WORD_HASH])
    f = min(ints[FIELD], FIELDS - 1)
    pos = t - ints[FIELD_START]
    above = np.int64(EMPTY)
    if f < ints[PREV_FIELDS]:  # fields[1, f]: where the previous line's field f starts; it ends before f + 1's
        at = fields[1, f] + pos
        if at < fields[1, f + 1] - 1:
            above = back(hist, t, t - at)
    ints[FIELD_ABOVE] = above
    ctx[FIELD_COLUMN] = absorb(absorb(absorb(absorb(np.uint64(0x4321), f), min(pos, 255)), above), ints[SAME])
    last = back(hist, t, 1)
    follower = np.int64(st.followers[(last & 255) * 256 + (back(hist, t, 2) & 255)])
    ctx[INDIRECT] = absorb(absorb(np.uint64(0x8765), last), follower)


@inline_kernel
def _is_word_byte(b):
    return (48 <= b <= 57) or (65 <= b <= 90) or (97 <= b <= 122)


@inline_kernel
def observe(st, symbol):
    """The byte ``symbol`` was seen: the history, the indirect source's followers, the line and field
    positions and the words move on (the match and number models have their own, ``predicted.observe``)."""
    ints, hist, fields = st.ints, st.hist, st.fields
    t = ints[POS]
    st.followers[(back(hist, t, 1) & 255) * 256 + (back(hist, t, 2) & 255)] = symbol
    hist[t & (hist.shape[0] - 1)] = symbol
    if symbol == 10:  # a new line: its fields become the previous line's
        line_len = t - ints[LINE_START]
        if line_len < hist.shape[0] // 2:  # a line the ring still holds whole
            ints[PREV_LINE_START] = ints[LINE_START]
            ints[PREV_LINE_LEN] = line_len
            n = min(ints[FIELD], FIELDS - 1) + 1
            for q in range(n):
                fields[1, q] = fields[0, q]
            fields[1, n] = t + 1
            ints[PREV_FIELDS] = n
        else:
            ints[PREV_LINE_LEN] = 0
            ints[PREV_FIELDS] = 0
        ints[LINE_START] = t + 1
        ints[FIELD] = 0
        ints[FIELD_START] = t + 1
        fields[0, 0] = t + 1
        ints[WORD_HASH] = 0
        ints[PREV_WORD] = 0
        ints[SAME] = 1
    elif symbol == 32 or symbol == 9:
        ints[FIELD] += 1
        ints[FIELD_START] = t + 1
        if ints[FIELD] < FIELDS:
            fields[0, ints[FIELD]] = t + 1
        ints[WORD_HASH] = 0
        ints[SAME] = 1
    else:
        if symbol != ints[FIELD_ABOVE]:
            ints[SAME] = 0
        if _is_word_byte(symbol):
            ints[WORD_HASH] = np.int64(absorb(np.uint64(ints[WORD_HASH]), symbol) >> np.uint64(1))
        else:
            ints[WORD_HASH] = 0
    ints[POS] = t + 1
