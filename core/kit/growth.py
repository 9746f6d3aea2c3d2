"""Tables that grow with the stream, doubled in place: what every growing table of seqd's byte models shares.

A stream that has seen a few kilobytes needs a few thousand slots per
context; one that has seen gigabytes needs millions.  A growing table starts
at 2^GROWTH_START slots (or blocks) and doubles, on its own, up to the
largest size its configuration allows, so memory follows what the stream
has seen and the tables a stream does not fill stay small.  Each table's
size, log2, and the count of its slots taken live in a row of a ``grown``
array of its model's state (columns :data:`BITS`, :data:`TAKEN`).

Every table here is addressed by the **top** bits of a 64-bit hash (or of a
byte, for a table by the last byte): at 2^b slots a key's slot is its top b
bits, so at 2^(b + 1) it is 2j or 2j + 1, j the old slot, by the next bit.
Doubling is therefore a pass from the last slot down, each entry moving to
one of two places above it (or staying, for slot 0), with nothing in
another's way.  What a table keeps of its keys decides how it splits:

* :func:`split_match_table`: a match model's table of positions keeps no
  key; each entry's context is hashed again from the history (and dropped if
  it has left it);
* :func:`split_sets`: a table of buckets, one context each, in sets of
  :data:`WAYS` (the bitwise model's), keeps in a word of each bucket the
  key's bits below the smallest table's sets (:func:`split_word`), which
  name the half;
* :func:`split_keyed`: a table whose entries keep their key in a column
  (the number tables of the bitwise model) reads the bit from there;
* :func:`double_blocks`: a table that keeps nothing of its keys (a
  probability map, a mixer's weight sets selected by a hashed context)
  copies each block into both halves: each new block starts from what its
  parent had learned.

A table of keys doubles when more than 1/FULL of its slots are taken
(:func:`due`); one that keeps no keys, by the stream's position
(:func:`blocks_due`).  Doubling a table of n slots costs O(n) once, after
about n/FULL new keys, so growth costs O(1) per symbol amortised.  Every
step is a function of the stream alone, so an encoder and its decoder grow
their tables at the same symbols.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel, kernel
from .hashing import absorb, finalize

MIN_TABLE_BITS = 10  # the smallest table a growing byte model's configuration allows
GROWTH_START = MIN_TABLE_BITS  # log2 of a growing table's first size
BITS, TAKEN = 0, 1  # the columns of a model's ``grown`` array: log2 of a table's size, its slots taken
FULL = 4  # a table of keys doubles when more than 1/FULL of its slots are taken (the GLNN byte model's tables)
MOST_WAYS = 4  # a table of buckets comes in sets of 1, 2 or 4: a context may take any bucket of its set
SPLIT_TOP = GROWTH_START - 2  # a key's bits that name its set in the smallest table of sets of MOST_WAYS
SPLIT_BITS = 16  # the key's bits below those that a bucket keeps to split by: its set grows 2^16-fold at most


def initial_bits(most: int) -> int:
    """A growing table's first size, in bits: GROWTH_START, or ``most`` if smaller."""
    return min(GROWTH_START, most)


@inline_kernel
def due(grown, row, most, full):
    """Whether table ``row`` of ``grown`` is below 2^most slots and has more than 1/full of them taken."""
    b = grown[row, BITS]
    return b < most and full * grown[row, TAKEN] > (np.int64(1) << b)


@inline_kernel
def blocks_due(grown, row, most, t, span):
    """Whether table ``row`` (of blocks that keep no keys) is below 2^most blocks and the stream, at position
    ``t``, has passed ``span`` symbols per block it has."""
    b = grown[row, BITS]
    return b < most and t > span * (np.int64(1) << b)


@inline_kernel
def match_slot(h, bits):
    """The slot of a hashed context of ``match_min`` symbols in a match table of 2^bits entries."""
    return np.int64(finalize(h) >> np.uint64(64 - bits))


@inline_kernel
def match_hash(hist, p, match_min):
    """The hash of the ``match_min`` symbols before position ``p`` (all of them still in the ring, whose length
    is a power of two)."""
    mask = hist.shape[0] - 1
    h = np.uint64(0)
    for back in range(1, match_min + 1):
        h = absorb(h, np.int64(hist[(p - back) & mask]))
    return h


@kernel
def split_match_table(table, hist, t, match_min, bits):
    """Double the match table from 2^bits entries to 2^(bits + 1), in place; returns the entries it dropped
    (those whose context has left the history ring, and could no longer be found).  An entry holds the
    position after its context, plus one (0: empty)."""
    H = hist.shape[0]
    oldest = t - H if t > H else 0
    dropped = 0
    for i in range((np.int64(1) << bits) - 1, -1, -1):
        stored = table[i]
        if stored == 0:
            continue
        table[i] = 0
        p = stored - 1
        if p - match_min < oldest:
            dropped += 1
            continue
        table[match_slot(match_hash(hist, p, match_min), bits + 1)] = stored
    return dropped


@inline_kernel
def split_word(z):
    """What a bucket keeps of its key ``z`` (a 64-bit hash) to split by: the SPLIT_BITS bits below its top
    SPLIT_TOP, which name its set in the smallest table (of sets of MOST_WAYS, or fewer)."""
    return np.uint16((z >> np.uint64(64 - SPLIT_TOP - SPLIT_BITS)) & np.uint64(0xFFFF))


@inline_kernel
def set_of(z, bits, way_bits):
    """The first bucket of the set of 2^way_bits that key ``z`` names in a table of 2^bits buckets."""
    return np.int64(z >> np.uint64(64 - bits + way_bits)) << way_bits


@kernel
def split_sets(table, j, bits, at, way_bits):
    """Double table ``j`` of ``table`` (tables, buckets, words) from 2^bits buckets, in sets of 2^way_bits, to
    2^(bits + 1), in place: each bucket whose word 0 (its tag) is not 0 moves to a bucket of set 2s or 2s + 1,
    s its set, by the bit its word ``at`` (:func:`split_word`) holds there.  From the last set down, both
    lie at or above s and were emptied before it, but for set 0, whose buckets that stay stay where they are."""
    words = table.shape[2]
    ways = np.int64(1) << way_bits
    set_bits = bits - way_bits
    shift = SPLIT_BITS - 1 - (set_bits - SPLIT_TOP)
    for s in range((np.int64(1) << set_bits) - 1, -1, -1):
        for b in range(s * ways, s * ways + ways):
            if table[j, b, 0] == 0:
                continue
            child = 2 * s + ((np.int64(table[j, b, at]) >> shift) & 1)
            if child == s:  # set 0's buckets that stay in set 0
                continue
            to = child * ways
            while table[j, to, 0] != 0:
                to += 1
            for q in range(words):
                table[j, to, q] = table[j, b, q]
                table[j, b, q] = 0


@kernel
def split_keyed(table, j, bits, key_at):
    """Double table ``j`` of ``table`` (tables, slots, columns) from 2^bits slots to 2^(bits + 1), in place: each
    slot whose column ``key_at`` is not 0 holds its key's top 32 bits there (its tag), and moves to slot 2i or
    2i + 1 by the key's bit below its slot's."""
    columns = table.shape[2]
    shift = 31 - bits
    for i in range((np.int64(1) << bits) - 1, -1, -1):
        key = table[j, i, key_at]
        if key == 0:
            continue
        to = 2 * i + ((key >> shift) & 1)
        if to == i:
            continue
        for q in range(columns):
            table[j, to, q] = table[j, i, q]
            table[j, i, q] = 0


@kernel
def double_blocks(table, first, block, bits):
    """Double the rows ``first`` on of ``table``, 2^bits blocks of ``block`` rows each, to 2^(bits + 1) blocks:
    block i is copied into blocks 2i and 2i + 1 (from the last down, so that no block is read after it is
    written over)."""
    columns = table.shape[1]
    for i in range((np.int64(1) << bits) - 1, -1, -1):
        for r in range(block):
            src = first + i * block + r
            lo = first + 2 * i * block + r
            hi = lo + block
            for c in range(columns):
                value = table[src, c]
                table[hi, c] = value
                table[lo, c] = value
