"""The number source: numbers predicted from the last one seen after the same symbols.

Digits are most of a log's bits (``docs/benchmarks.md``, "Where the bits
go"), and many of them belong to numbers that come back in their template's
next line changed by a small step: task and block ids, counters, byte
counts.  A count model sees such a number as new text.  This source keeps,
for each context of the last k symbols before a number's first digit, the
last number seen there, its change from the one before, its length and the
symbol after it, and predicts the next number after that context as last +
change, written with at least the last one's length (leading zeros kept),
then that symbol.  It votes like the match model, with the log-odds that its
predictions were right so far, counted per position in the number and per
how many times in a row the context's prediction was right.

One source holds a table per context length (``NUMBER_CONTEXTS``), and
votes with the longest context whose prediction is still on track.  The
tables hold 2^(context_bits - 2) contexts each, one per slot (a context
takes over its slot).  Their hashing is part of the ``.sqd`` format, as the
context tables' is.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from .hashing import absorb, finalize, hashed, history, log2_ceil
from .hits import credit, log_odds

# the number source: one table per context length (the symbols before a number's first digit), the longer first
# (observe_numbers hashes them from the shortest up)
NUMBER_CONTEXTS = (9, 4)
NUMBER_DIGITS = 18  # longest number it follows (its value stays below 10^18)
NUMBER_STREAK = 3  # right predictions in a row a table entry counts up to
NUMBER_POSITIONS = 17  # the vote's position: digit 0..15 (the later ones merged), then the symbol after the number
NUMBER_BUCKETS = NUMBER_POSITIONS * (NUMBER_STREAK + 1)  # hit and try counts: per position and streak
# OnlineState.number_table[j, slot, .]: the context's check tag, its last number, that number's change from the one
# before, its length in digits, the symbol after it, and how many times in a row last + change was right
TAG, LAST, CHANGE, LENGTH, AFTER, STREAK = range(6)
# OnlineState.number_int[j, .]: the key of the context the current (or next) number is kept under and whether
# there is one (a number at the stream's start has none), the digits of the current run and their value, the
# prediction's length (-1: none) and whether the run has followed it so far, the symbol voted for at this position
# (-1: none) and its bucket, the streak of the entry the prediction came from
NUMBER_INTS = 9
N_KEY, N_KEYED, N_RUN, N_VALUE, N_PREDICTED, N_ON_TRACK, N_VOTED, N_BUCKET, N_STREAK = range(NUMBER_INTS)


@inline_kernel
def _number_slot(key, T):
    """(slot, tag) of a number context's key in a table of T = 2^b slots: its top b bits, a non-zero 31-bit check."""
    slot = np.int64(key >> np.uint64(64 - log2_ceil(T)))
    tag = np.int64(key & np.uint64(0x7FFFFFFF)) | 1
    return slot, tag


@inline_kernel
def number_vote(number_int, number_digits, number_stats, code_of, numerics):
    """The number source's vote for the next symbol: (code, activity, position), code 0 for none.

    The longer context's prediction first, else the shorter one's.  A
    prediction still on track at digit k of the current run votes for its
    digit k (past its last digit, for the symbol that ended the number last
    time) with the log-odds log((hits + 1/2) / (misses + 1/2)) of its table's
    bucket: the position voted for, and the streak of the entry it came from.
    """
    tables = number_int.shape[0]
    for j in range(tables):
        number_int[j, N_VOTED] = -1
    for j in range(tables):
        length = number_int[j, N_PREDICTED]
        k = number_int[j, N_RUN]
        if length <= 0 or number_int[j, N_ON_TRACK] == 0 or k > length:
            continue
        predicted = number_digits[j, k]
        code = code_of[predicted]
        if code == 0:  # a symbol not seen yet has no code to vote for
            continue
        position = min(k, NUMBER_POSITIONS - 2) if k < length else NUMBER_POSITIONS - 1
        bucket = position + NUMBER_POSITIONS * number_int[j, N_STREAK]
        number_int[j, N_VOTED] = predicted
        number_int[j, N_BUCKET] = bucket
        return code, log_odds(numerics, number_stats[j], bucket), position
    return np.int64(0), 0.0, np.int64(0)


@inline_kernel
def observe_number(number_int, number_digits, number_table, number_stats, j, symbol, key, limit):
    """Table j of the number source sees ``symbol``; ``key`` is the context a number starting next would have.

    Its vote is credited to its bucket; a digit extends the current run (and
    takes the prediction off track if it differs); the symbol that ends a run
    stores the number under the context it started after (last, change,
    length, the symbol after it, the streak of right predictions); after any
    other symbol, the last symbols (hashed by ``observe_numbers``)
    are the context of a number that may start next (``key``), and what the
    table holds for them is its prediction: last + change, written with at
    least the last one's length.
    """
    if number_int[j, N_VOTED] >= 0:
        credit(number_stats[j], number_int[j, N_BUCKET], number_int[j, N_VOTED] == symbol, limit)
    T = number_table.shape[1]
    k = number_int[j, N_RUN]
    if 48 <= symbol <= 57:
        length = number_int[j, N_PREDICTED]
        if length > 0 and (k >= length or number_digits[j, k] != symbol):
            number_int[j, N_ON_TRACK] = 0
        if k < NUMBER_DIGITS:
            number_int[j, N_VALUE] = number_int[j, N_VALUE] * 10 + (symbol - 48)
        number_int[j, N_RUN] = k + 1
        return
    if k > 0:  # a number ended: keep it under the context it started after
        if k <= NUMBER_DIGITS and number_int[j, N_KEYED] == 1:
            slot, tag = _number_slot(np.uint64(number_int[j, N_KEY]), T)
            value = number_int[j, N_VALUE]
            if number_table[j, slot, TAG] == tag:
                if value == number_table[j, slot, LAST] + number_table[j, slot, CHANGE]:
                    number_table[j, slot, STREAK] = min(number_table[j, slot, STREAK] + 1, NUMBER_STREAK)
                else:
                    number_table[j, slot, STREAK] = 0
                number_table[j, slot, CHANGE] = value - number_table[j, slot, LAST]
            else:
                number_table[j, slot, TAG] = tag
                number_table[j, slot, CHANGE] = 0
                number_table[j, slot, STREAK] = 0
            number_table[j, slot, LAST] = value
            number_table[j, slot, LENGTH] = k
            number_table[j, slot, AFTER] = symbol
        number_int[j, N_RUN] = 0
        number_int[j, N_VALUE] = 0
    # a number may start next, after the context `key`
    number_int[j, N_KEY] = np.int64(key)
    number_int[j, N_KEYED] = 1
    number_int[j, N_PREDICTED] = -1
    slot, tag = _number_slot(key, T)
    if number_table[j, slot, TAG] != tag:
        return
    value = number_table[j, slot, LAST] + number_table[j, slot, CHANGE]
    if value < 0:
        return
    n = 1
    v = value // 10
    while v > 0:
        n += 1
        v //= 10
    n = max(n, number_table[j, slot, LENGTH])
    if n > NUMBER_DIGITS:
        return
    v = value
    for i in range(n):
        number_digits[j, n - 1 - i] = 48 + v % 10
        v //= 10
    number_digits[j, n] = number_table[j, slot, AFTER]
    number_int[j, N_PREDICTED] = n
    number_int[j, N_ON_TRACK] = 1
    number_int[j, N_STREAK] = number_table[j, slot, STREAK]


@inline_kernel
def observe_numbers(hist, t, number_int, number_digits, number_table, number_stats, symbol, limit):
    """Each number table sees ``symbol`` and, after a non-digit, the context a number starting next has there.

    ``hist`` and ``t`` are the history ring and the position (``hashing.history``), the other arrays this
    source's own.
    """
    digit = 48 <= symbol <= 57  # no number starts after a digit: the key goes unread
    h = absorb(np.uint64(0x2468), hashed(symbol))  # its last NUMBER_CONTEXTS[j] symbols: one hash, shortest up
    done = 1
    for j in range(number_int.shape[0] - 1, -1, -1):
        while not digit and done < NUMBER_CONTEXTS[j]:
            h = absorb(h, hashed(history(hist, t, done)))
            done += 1
        observe_number(number_int, number_digits, number_table, number_stats, j, symbol, finalize(h), limit)
