"""How the context sources turn a context into a table slot: 64-bit hashes, folded one value at a time.

A context (the last k symbols, a column and the symbol above it, a field and
its word, ...) is folded value by value into a running 64-bit hash
(:func:`absorb`); :func:`slot_and_tag` mixes it with the source's number and
splits it into a slot of the source's table and a 32-bit tag that tells the
slot's owner from another context hashed to the same slot.  The functions
are bijective mixes of 64-bit words (the finalizer of SplitMix64: Steele,
Lea and Flood, "Fast splittable pseudorandom number generators", OOPSLA
2014, with the constants of Stafford's "Mix13" as in Vigna's splitmix64.c),
so two contexts share a slot and a tag only when their hashes agree on the
bits the two take (the table's ``bits`` and 31 more, after the mix).
Their arithmetic is part of the ``.sqd`` format: a slot decides which counts
a context sees.  :func:`history` reads the symbols a context is made of from
the learner's ring of recent symbols.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel

EMPTY = -1  # the time before the stream started, and "nothing above": no symbol takes this value
EMPTY_HASHED = 0xFFFF  # what EMPTY is hashed as (its value when it was one; byte streams hash as before)
TOP_HASHED = 0x10000  # what symbol 0xFFFF is hashed as, so that it never hashes as EMPTY


@inline_kernel
def finalize(z):
    """SplitMix64's finalizer: a bijective mix of a 64-bit word."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@inline_kernel
def absorb(h, value):
    """Fold one non-negative integer into a running hash."""
    return (h ^ np.uint64(value + 1)) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x632BE59BD9B4E019)


@inline_kernel
def slot_and_tag(h, source, bits):
    """(slot, tag) of a context hash for a source: top ``bits`` bits, and a non-zero 32-bit check."""
    z = finalize(h ^ (np.uint64(source + 1) * np.uint64(0xD6E8FEB86659FD93)))
    slot = np.int64(z >> np.uint64(64 - bits))
    tag = np.uint32((z & np.uint64(0xFFFFFFFF)) | np.uint64(1))
    return slot, tag


@inline_kernel
def hashed(symbol):
    """The value a symbol, or EMPTY, is folded into a context hash as: one value each, all distinct.

    Symbols hash as themselves except 0xFFFF (an alphabet of 65536), which would hash as EMPTY did.
    """
    if symbol == EMPTY:
        return np.int64(EMPTY_HASHED)
    if symbol == 0xFFFF:
        return np.int64(TOP_HASHED)
    return np.int64(symbol)


@inline_kernel
def log2_ceil(n):
    """The least b with 2^b >= n: the bits of a table of n slots (n a power of two)."""
    b = 0
    while (np.int64(1) << b) < n:
        b += 1
    return b


@inline_kernel
def history(hist, t, back):
    """The symbol ``back`` steps before position ``t`` (1 = the last one), or EMPTY before the stream began.

    The ring ``hist`` holds the last H symbols, so ``back`` must be at most H (``OnlineConfig`` refuses longer
    orders).
    """
    if back > t:
        return np.int64(EMPTY)
    H = hist.shape[0]
    return np.int64(hist[(t - back) % H])
