"""The number predictor both byte models share: the next number after the same symbols, from the last one seen.

Digits are most of a log's bits, and many of them belong to numbers that
come back in their template's next line changed by a small step: task and
block ids, counters, byte counts.  A count model sees such a number as new
text.  The predictor keeps, for each context of the last k symbols before a
number's first digit, the last number seen there, its change from the one
before, its length and the symbol after it, and predicts the next number
after that context as last + change, written with at least the last one's
length (leading zeros kept), then that symbol.

A model keeps one table per context length (``NUMBER_CONTEXTS``, the longer
first), each a table of slots (:data:`TAG` ... :data:`STREAK` columns), and
per table a row of scalars whose first columns are :data:`N_KEY` ...
:data:`N_ON_TRACK`; what it counts of its hits, and how it votes, is its own
(the GLNN byte model's ``online/numbers.py``, the bitwise model's
``bits/predicted.py``).  :func:`observe_number` is what both do after each
symbol.  A context's key is a 64-bit hash of its symbols; its slot is the
key's top bits, and its tag either the key's low 31 bits (``high_tag``
false: the models written before tables grew) or its top 32 bits, which hold
the bits a growing table splits by (``kit/growth.py``, ``split_keyed``).
Their arithmetic is part of the ``.sqd`` format.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import inline_kernel

NUMBER_CONTEXTS = (9, 4)  # the symbols before a number's first digit, one table each, the longer first
NUMBER_DIGITS = 18  # longest number it follows (its value stays below 10^18)
NUMBER_STREAK = 3  # right predictions in a row a table entry counts up to
NUMBER_POSITIONS = 17  # a vote's position: digit 0..15 (the later ones merged), then the symbol after the number
NUMBER_BUCKETS = NUMBER_POSITIONS * (NUMBER_STREAK + 1)  # a vote's bucket: its position and streak
# a table's columns: the context's check tag, its last number, that number's change from the one before, its
# length in digits, the symbol after it, and how many times in a row last + change was right
TAG, LAST, CHANGE, LENGTH, AFTER, STREAK = range(6)
# a table's scalars: the key of the context the current (or next) number is kept under and whether there is one
# (a number at the stream's start has none), the digits of the current run and their value, the prediction's
# length (-1: none) and whether the run has followed it so far; a model keeps more after these
N_KEY, N_KEYED, N_RUN, N_VALUE, N_PREDICTED, N_ON_TRACK = range(6)


class NumberTables(NamedTuple):
    """A model's number predictor, as :func:`observe_number` reads it: its tables (contexts, slots, TAG ...
    STREAK), each table's scalars (N_KEY ...) and each table's predicted digits and the symbol after them."""

    table: np.ndarray
    ints: np.ndarray
    digits: np.ndarray


@inline_kernel
def number_slot(key, bits, high_tag):
    """(slot, tag) of a context's key in a table of 2^bits slots: its top bits, and a non-zero check."""
    slot = np.int64(key >> np.uint64(64 - bits))
    if high_tag:
        return slot, np.int64(key >> np.uint64(32)) | 1
    return slot, np.int64(key & np.uint64(0x7FFFFFFF)) | 1


@inline_kernel
def observe_number(nt, j, symbol, key, bits, high_tag, streak_at):
    """Table j sees ``symbol``; ``key`` is the context a number starting next would have, ``bits`` the table's
    size (log2).  Returns 1 if a number was kept in a slot that was empty, else 0 (a growing table's count).

    A digit extends the current run (and takes the prediction off track if it
    differs); the symbol that ends a run stores the number under the context
    it started after (last, change, length, the symbol after it, the streak
    of right predictions); after any other symbol the last symbols are the
    context of a number that may start next (``key``), and what the table
    holds for them is its prediction: ``nint[j, N_PREDICTED]`` digits in
    ``digits[j]``, the symbol after them, and the entry's streak in
    ``nint[j, streak_at]`` (``nt`` is a :class:`NumberTables`)."""
    table, nint, digits = nt.table, nt.ints, nt.digits
    k = nint[j, N_RUN]
    if 48 <= symbol <= 57:
        length = nint[j, N_PREDICTED]
        if length > 0 and (k >= length or digits[j, k] != symbol):
            nint[j, N_ON_TRACK] = 0
        if k < NUMBER_DIGITS:
            nint[j, N_VALUE] = nint[j, N_VALUE] * 10 + (symbol - 48)
        nint[j, N_RUN] = k + 1
        return 0
    taken = 0
    if k > 0:  # a number ended: keep it under the context it started after
        if k <= NUMBER_DIGITS and nint[j, N_KEYED] == 1:
            slot, tag = number_slot(np.uint64(nint[j, N_KEY]), bits, high_tag)
            value = nint[j, N_VALUE]
            if table[j, slot, TAG] == tag:
                if value == table[j, slot, LAST] + table[j, slot, CHANGE]:
                    table[j, slot, STREAK] = min(table[j, slot, STREAK] + 1, NUMBER_STREAK)
                else:
                    table[j, slot, STREAK] = 0
                table[j, slot, CHANGE] = value - table[j, slot, LAST]
            else:
                if table[j, slot, TAG] == 0:
                    taken = 1
                table[j, slot, TAG] = tag
                table[j, slot, CHANGE] = 0
                table[j, slot, STREAK] = 0
            table[j, slot, LAST] = value
            table[j, slot, LENGTH] = k
            table[j, slot, AFTER] = symbol
        nint[j, N_RUN] = 0
        nint[j, N_VALUE] = 0
    # a number may start next, after the context `key`
    nint[j, N_KEY] = np.int64(key)
    nint[j, N_KEYED] = 1
    nint[j, N_PREDICTED] = -1
    slot, tag = number_slot(key, bits, high_tag)
    if table[j, slot, TAG] != tag:
        return taken
    value = table[j, slot, LAST] + table[j, slot, CHANGE]
    if value < 0:
        return taken
    n = 1
    v = value // 10
    while v > 0:
        n += 1
        v //= 10
    n = max(n, table[j, slot, LENGTH])
    if n > NUMBER_DIGITS:
        return taken
    v = value
    for i in range(n):
        digits[j, n - 1 - i] = 48 + v % 10
        v //= 10
    digits[j, n] = table[j, slot, AFTER]
    nint[j, N_PREDICTED] = n
    nint[j, N_ON_TRACK] = 1
    nint[j, streak_at] = table[j, slot, STREAK]
    return taken
