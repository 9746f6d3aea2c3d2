"""The GLNN byte model's tables that grow with the stream: its context sources' tables and its match model's.

With ``table_growth`` on, every hashed source's table and the match model's
start at 2^GROWTH_START slots and double, each on its own, when more than
1/FULL of its slots are taken, up to 2^context_bits (2^match_bits for the
match model's), as every growing table of seqd does (``kit/growth.py``,
which also splits the match table).  Each table's size and count of taken
slots live in ``OnlineState.grown``, one row per hashed source and a last
row for the match model's table.

**Buckets, and what a full bucket gives up.**  A growing context table's
slots come in buckets of WAYS; a context may take any slot of the bucket its
hash names.  A new context takes an empty slot of its bucket, or else the
slot whose counts add up to least: the context seen least gives way, not
whichever one the hash happens to name (paq's replacement by priority).  In
a table where each context has one slot of its own, two busy contexts that
hash alike take the slot from each other again and again: at a quarter full
that cost the byte model 0.0035 bits/byte on the public logs
(``docs/benchmarks.md``, "Lifelong memory").

**The slot and the tag.**  A context's 64-bit hash z (``hashing.py``'s mix)
names its bucket by its top ``bits`` - WAY_BITS bits, and its 32-bit tag is
the 32 bits below the top MIN_TABLE_BITS - WAY_BITS (z >> TAG_SHIFT, its
lowest bit set so that 0 means empty).  So the bit that tells, when the
table doubles, which of the buckets 2j and 2j + 1 a context of bucket j goes
to (the next bit of z below the bucket's) is a bit of its tag
(:func:`split_bit`): a table splits in place, from its last bucket down,
with nothing rehashed and no context in another's way.  The tag still tells
two contexts of a bucket apart by its bits below the bucket's: 32 in the
smallest table, 24 at 2^18 slots.

The match model's table holds the position after each hashed context of
``match_min`` symbols, not a tag (``kit.growth.split_match_table``).
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel, kernel
from ..kit.growth import BITS, FULL, MIN_TABLE_BITS, TAKEN, due, split_match_table
from ..kit.hashing import finalize

WAY_BITS = 2
WAYS = 1 << WAY_BITS  # a growing context table's slots come in buckets of WAYS; a context may take any of its bucket's
# a growing table's tag: the 32 bits of the hash below the bucket's bits in the smallest table (bits 24 ... 55)
TAG_SHIFT = 64 - (MIN_TABLE_BITS - WAY_BITS) - 32


@inline_kernel
def find_slot(tag, cnt, s, h, bits):
    """(slot, found, check): where source ``s``'s table of 2^bits slots holds the context of hash ``h``
    (found 1), or the slot that context takes when it is counted (found 0): an empty slot of its bucket,
    or else the one whose counts add up to least."""
    z = finalize(h ^ (np.uint64(s + 1) * np.uint64(0xD6E8FEB86659FD93)))
    first = np.int64(z >> np.uint64(64 - bits + WAY_BITS)) * WAYS
    check = np.uint32(((z >> np.uint64(TAG_SHIFT)) & np.uint64(0xFFFFFFFF)) | np.uint64(1))
    empty = -1
    for slot in range(first, first + WAYS):
        if tag[s, slot] == check:
            return slot, 1, check
        if tag[s, slot] == 0 and empty < 0:
            empty = slot
    if empty >= 0:
        return empty, 0, check
    weakest = first
    least = np.int64(1) << 62
    for slot in range(first, first + WAYS):
        n = np.int64(0)
        for e in range(cnt.shape[2]):
            n += np.int64(cnt[s, slot, e])
        if n < least:
            least = n
            weakest = slot
    return weakest, 0, check


@inline_kernel
def split_bit(check, bits):
    """Which of the buckets 2j, 2j + 1 the context with tag ``check`` in bucket j of a table of 2^bits slots
    moves to when the table doubles: bit 63 - (bits - WAY_BITS) of its hash."""
    return np.int64((np.uint64(check) >> np.uint64(63 - bits + WAY_BITS - TAG_SHIFT)) & np.uint64(1))


@kernel
def split_context_table(tag, sym, cnt, s, bits):
    """Double source ``s``'s table from 2^bits slots to 2^(bits + 1), in place (its arrays have room).

    From the last bucket down, each context of bucket j moves to the first free slot of bucket 2j or
    2j + 1, the one its hash names: both lie above j (and were emptied before it), except for bucket 0,
    whose contexts that stay stay where they are."""
    E = sym.shape[2]
    for j in range((np.int64(1) << (bits - WAY_BITS)) - 1, -1, -1):
        for slot in range(j * WAYS, j * WAYS + WAYS):
            check = tag[s, slot]
            if check == 0:
                continue
            bucket = 2 * j + split_bit(check, bits)
            if bucket == j:
                continue
            to = bucket * WAYS
            while tag[s, to] != 0:
                to += 1
            tag[s, to] = check
            tag[s, slot] = 0
            for e in range(E):
                sym[s, to, e] = sym[s, slot, e]
                cnt[s, to, e] = cnt[s, slot, e]
                sym[s, slot, e] = 0
                cnt[s, slot, e] = 0


@kernel
def grow_tables(src, t, context_bits, match_bits, match_min):
    """Double every table of the sources ``src`` (``sources.Sources``) that has more than 1/FULL of its
    slots taken and is below its largest size; ``t`` is the stream's position."""
    grown, tag, sym, cnt, match_table, hist = src.grown, src.ctx_tag, src.ctx_sym, src.ctx_cnt, src.match_table, \
        src.hist
    S = tag.shape[0]
    for s in range(S):
        b = grown[s, BITS]
        if due(grown, s, context_bits, FULL):
            split_context_table(tag, sym, cnt, s, b)
            grown[s, BITS] = b + 1
    if match_table.shape[0] > 0:
        b = grown[S, BITS]
        if due(grown, S, match_bits, FULL):
            grown[S, TAKEN] -= split_match_table(match_table, hist, t, match_min, b)
            grown[S, BITS] = b + 1
