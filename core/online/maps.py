"""Adaptive probability maps: the mixer's prediction refined by what followed predictions like it.

The mix (``mixer.py``, ``writing.py``) is one softmax.  A probability map
(the PAQ compressors' APM or secondary symbol estimation: Mahoney, "Data
Compression Explained", section 4.4, and paq8px's ``APM`` class) learns, per
small context, what a predicted probability turned out to mean.  Here it
refines the probability of the mix's most likely symbol, the event a log
stream is mostly made of ("the next byte is the one the mix expects"):

* p = pi(y*), y* the mix's most probable code (the lowest on a tie), its
  stretch s = log(p / (1 - p)) clipped to [-8, 8], and x = s + 8: the
  position of s on a grid of MAP_POINTS knots one nat apart, j = floor(x)
  (at most MAP_POINTS - 2, so that j + 1 is a knot), f = x - j;
* two maps, each a table of MAP_POINTS estimates per context row, read
  between the knots: e = (1 - f) T[row, j] + f T[row, j + 1] (``kit/maps.py``,
  which reads and steps both byte models' maps).  Map A's row
  is the match source's state (its length bucket, ``sources._match_bucket``,
  and whether the symbol it predicts is y*); map B's is the field set's row
  (``selecting._field_selecting_row``; 0 without the field-selected weights)
  times 4 plus the match length up to 3;
* the refined probability q = (2 p + e_A + e_B) / 4, and every other code's
  probability scaled by (1 - q) / r, r the others' probabilities summed
  (1 - p in exact arithmetic), so the prediction still sums to 1;
* once the symbol is known, hit = 1 if it was y*, and each of the two knots
  read in each map moves toward hit by its share of the step,
  T <- T + r w (hit - T), w = 1 - f or f, r = max(1 / (n + 3/2), 1/200), n
  the knot's count of past shares (kept up to MAP_COUNT_LIMIT): the first
  visits average, later ones follow the stream with a memory of about 200.

A table starts as the identity (knot j holds 1 / (1 + e^(8 - j))), so a new
context passes the mix's probability through.  The network and the mixer
learn from the mix's own prediction (the gradients of eqs. 17-21 are the
softmax's), and the maps learn from what they saw: the refined prediction
is what is scored and coded.  Only basic IEEE operations and seqd's own log
(``kernels.elementary``) run here, so a decoder anywhere refines the same
way.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import inline_kernel
from ..kernels.elementary import log_of, logistic
from ..kit.maps import between, knot, step_knot
from .sources import MATCH_BUCKETS, MATCH_LEN, MATCH_PTR, _match_bucket

MAP_POINTS = 17  # knots at stretch -8, -7, ..., 8
STRETCH_LIMIT = 8.0
MAP_A_ROWS = MATCH_BUCKETS * 2  # (match length bucket, its symbol is the mix's favourite)
MATCH_CLASSES = 4  # map B: match length 0, 1, 2, 3 and more
MAP_COUNT_LIMIT = 255.0
MAP_RATE_FLOOR = 1.0 / 200.0
# positions in OnlineState.map_at: the favourite code, the knot below, the two maps' rows
MAP_TOP, MAP_KNOT, MAP_ROW_A, MAP_ROW_B = range(4)


def map_rows(field_rows: int) -> int:
    """Rows of the two maps, stacked: map A's, then map B's (``field_rows`` of the field set, or none)."""
    return MAP_A_ROWS + max(field_rows, 1) * MATCH_CLASSES


def initial_maps(rows: int) -> np.ndarray:
    """Tables that pass the mix's probability through: knot j holds the probability whose stretch is j - 8
    (seqd's own logistic, the same bits on every machine)."""
    knots = [logistic(float(j) - STRETCH_LIMIT) for j in range(MAP_POINTS)]
    return np.tile(np.array(knots), (rows, 1))


class Maps(NamedTuple):
    """The maps' arrays of the learner's state (``state.OnlineState``, which documents each)."""

    maps: np.ndarray
    map_counts: np.ndarray
    map_at: np.ndarray
    map_frac: np.ndarray
    coded: np.ndarray


@inline_kernel
def maps_of(st):
    """The probability maps' arrays of the state ``st`` (``Maps``)."""
    return Maps(st.maps, st.map_counts, st.map_at, st.map_frac, st.coded)


@inline_kernel
def refine(mp, pi_t, src, code_of, fsel_row, field_set, numerics, width):
    """Write the refined prediction of the next symbol into ``mp.coded[:width]`` from the mix's ``pi_t``, and
    what the update needs into ``mp.map_at`` and ``mp.map_frac``.  The match source's prediction is read from
    the sources ``src`` (``sources.Sources``), the field set's row from ``fsel_row``."""
    maps, map_at, map_frac, coded, hist, ctx_int = mp.maps, mp.map_at, mp.map_frac, mp.coded, src.hist, src.ctx_int
    top = 0
    p = pi_t[0]
    for y in range(1, width):
        if pi_t[y] > p:
            p = pi_t[y]
            top = y
    # the knot: x = clip(log(p / (1 - p)), -8, 8) + 8 (a favourite has p > 0; p = 1 when the rest underflowed)
    x = 2.0 * STRETCH_LIMIT
    if p < 1.0:
        x = min(max(log_of(numerics, p / (1.0 - p)) + STRETCH_LIMIT, 0.0), 2.0 * STRETCH_LIMIT)
    j, f = knot(x, MAP_POINTS)
    length = ctx_int[MATCH_LEN]  # 0 without a match model (snapshot.py refuses anything else)
    agree = 0
    if length > 0:
        H = hist.shape[0]
        agree = 1 if code_of[np.int64(hist[ctx_int[MATCH_PTR] % H])] == top else 0
    row_a = _match_bucket(length) * 2 + agree
    row_b = MAP_A_ROWS + (fsel_row[0] if field_set else 0) * MATCH_CLASSES + min(length, MATCH_CLASSES - 1)
    e_a = between(maps[row_a], j, f)
    e_b = between(maps[row_b], j, f)
    q = (2.0 * p + e_a + e_b) / 4.0
    rest = 0.0  # the others' probability, summed: 1 - p would lose its digits to cancellation when p is near 1
    for y in range(width):
        if y != top:
            rest += pi_t[y]
    scale = (1.0 - q) / rest if rest > 0.0 else 0.0
    for y in range(width):
        coded[y] = pi_t[y] * scale
    coded[top] = q if rest > 0.0 else p
    map_at[MAP_TOP] = top
    map_at[MAP_KNOT] = j
    map_at[MAP_ROW_A] = row_a
    map_at[MAP_ROW_B] = row_b
    map_frac[0] = f


@inline_kernel
def learn_maps(mp, target):
    """Move the knots ``refine`` read toward whether the symbol (code ``target``) was the favourite."""
    maps, map_counts, map_at, map_frac = mp.maps, mp.map_counts, mp.map_at, mp.map_frac
    hit = 1.0 if target == map_at[MAP_TOP] else 0.0
    j = map_at[MAP_KNOT]
    f = map_frac[0]
    for m in range(2):
        row = map_at[MAP_ROW_A + m]
        for knot in range(2):
            share = f if knot == 1 else 1.0 - f
            k = j + knot
            n = map_counts[row, k]
            rate = 1.0 / (n + 1.5)
            if rate < MAP_RATE_FLOOR:
                rate = MAP_RATE_FLOOR
            step_knot(maps[row], k, rate, share, hit)
            map_counts[row, k] = min(n + share, MAP_COUNT_LIMIT)
