"""Hit counts of the sources that predict one symbol (the match model, the number source), and their vote.

Such a source counts, per bucket of its own (a match length; a digit
position and streak), how often its prediction was tried and how often it
was right, and votes with the log-odds of being right so far.
"""

from __future__ import annotations

from ..jit import inline_kernel
from ..kernels.elementary import log_of


@inline_kernel
def log_odds(numerics, stats, bucket):
    """log((hits + 1/2) / (misses + 1/2)) of ``bucket``; ``stats[0]`` holds the hits, ``stats[1]`` the tries."""
    hits = stats[0, bucket]
    tries = stats[1, bucket]
    return log_of(numerics, (hits + 0.5) / (tries - hits + 0.5))


@inline_kernel
def credit(stats, bucket, hit, limit):
    """Count a try of ``bucket``, and a hit if ``hit``; both counts are halved when the tries reach ``limit``."""
    stats[1, bucket] += 1
    if hit:
        stats[0, bucket] += 1
    if stats[1, bucket] >= limit:
        stats[0, bucket] = (stats[0, bucket] + 1) // 2
        stats[1, bucket] = (stats[1, bucket] + 1) // 2
