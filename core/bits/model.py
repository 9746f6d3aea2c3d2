"""The bitwise model's loop: learn a buffer of bytes (the whole distribution of the next one: ``walk.py``)."""

from __future__ import annotations

from ..jit import kernel
from ..kernels.elementary import log
from . import contexts, predicted
from .mixing import claim, code_length, find_buckets, learn_bit, probability, squash


@kernel
def learn_buffer(st, hyper, x, bits):
    """Predict, score and learn each byte of ``x`` in turn; ``bits[i]`` is byte i's code length in bits (the sum
    of its 8 bits', each scored by the 16-bit probability it was predicted with).  Each bit is learned as soon
    as it is scored: the next one is predicted by a model that knows it."""
    for i in range(x.shape[0]):
        symbol = x[i]
        contexts.locate(st)
        predicted.predict(st)
        c0 = 1
        total = 0.0
        for bit in range(7, -1, -1):
            if bit == 7 or bit == 3:
                find_buckets(st, c0)
            y = (symbol >> bit) & 1
            total += code_length(probability(st, hyper, c0, bit), y)
            if bit == 7 or bit == 3:
                claim(st, c0)
            learn_bit(st, hyper, bit, y)
            c0 = c0 * 2 + y
        bits[i] = total
        t = st.ints[0]
        contexts.observe(st, symbol)
        predicted.observe_match(st, symbol, t)
        predicted.observe_numbers(st, symbol, t)
    st.counts[0] += x.shape[0]


@kernel
def fill_tables(stretch, apm_base):
    """The constant tables: stretch at 4096 points, and the maps' 33 points squash((i - 16) / 2)."""
    for i in range(stretch.shape[0]):
        q = (i + 0.5) / stretch.shape[0]
        stretch[i] = log(q / (1.0 - q))
    for i in range(apm_base.shape[0]):
        apm_base[i] = squash((i - 16) / 2.0)
