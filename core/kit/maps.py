"""Adaptive probability maps, as both byte models read and step them.

A probability map (the PAQ compressors' APM or secondary symbol estimation:
Mahoney, "Data Compression Explained", section 4.4) learns, per small
context, what a predicted probability turned out to mean.  Each context has
a row of knots over the prediction's stretch, log(p / (1 - p)), placed at
equal steps; the map's estimate is read between the two knots around the
stretch (:func:`knot`, :func:`between`), and once the outcome is known each
of the two knots moves toward it by its share of a step (:func:`step_knot`).
The GLNN byte model maps the probability of its mix's favourite symbol
(``online/maps.py``: 17 knots a nat apart), the bitwise model each bit's
(``bits/mixing.py``: 33 knots half a nat apart); their contexts, rates and
how the estimate is blended are their own.  Only basic IEEE operations run
here, in this order: a decoder anywhere reads the same estimates.
"""

from __future__ import annotations

from ..jit import inline_kernel


@inline_kernel
def knot(x, points):
    """(j, f): the knot below position ``x`` (in [0, points - 1], in knots) and the fraction of the way to the
    next one; j is at most points - 2, so that j + 1 is a knot."""
    j = min(int(x), points - 2)
    return j, x - j


@inline_kernel
def between(row, j, f):
    """The estimate a ``row`` of knots gives between knots j and j + 1, a fraction ``f`` of the way."""
    return (1.0 - f) * row[j] + f * row[j + 1]


@inline_kernel
def step_knot(row, k, rate, share, target):
    """Knot k of ``row`` moves toward ``target`` by ``rate`` times its ``share`` of the reading."""
    row[k] += rate * share * (target - row[k])
