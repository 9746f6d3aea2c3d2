"""The bitwise model's loop: a byte's steps, and learning a buffer of bytes (the whole distribution of the next
one: ``walk.py``; coding: ``codec.py``)."""

from __future__ import annotations

from ..jit import inline_kernel, kernel
from ..kernels.elementary import log
from . import contexts, predicted
from .config import POS
from .growth import grow
from .mixing import claim, code_length, find_buckets, learn_bit, probability, squash
from .runs import observe_runs, read_runs
from .units import advance


@inline_kernel
def start_byte(st, hyper):
    """What a byte's bits are predicted from: the sources' contexts, the match and number models' bytes, the
    high nibble's buckets and the runs in them."""
    contexts.locate(st)
    predicted.predict(st)
    find_buckets(st, hyper, 1)
    read_runs(st)


@inline_kernel
def end_byte(st, hyper, symbol):
    """After the byte ``symbol``: the runs, the units' transition (and window), the sources' history and line
    structure, the match and number models; then the tables that grow, if any is due."""
    t = st.ints[POS]
    observe_runs(st, symbol)
    advance(st, hyper, symbol)
    contexts.observe(st, symbol)
    predicted.observe_match(st, symbol, t)
    predicted.observe_numbers(st, symbol, t)
    st.counts[0] += 1
    grow(st, hyper)


@kernel
def learn_buffer(st, hyper, x, bits):
    """Predict, score and learn each byte of ``x`` in turn; ``bits[i]`` is byte i's code length in bits (the sum
    of its 8 bits', each scored by the 16-bit probability it was predicted with).  Each bit is learned as soon
    as it is scored: the next one is predicted by a model that knows it."""
    for i in range(x.shape[0]):
        symbol = x[i]
        start_byte(st, hyper)
        c0 = 1
        total = 0.0
        for bit in range(7, -1, -1):
            if bit == 3:
                find_buckets(st, hyper, c0)
            y = (symbol >> bit) & 1
            total += code_length(probability(st, hyper, c0, bit), y)
            if bit == 7 or bit == 3:
                claim(st, c0)
            learn_bit(st, hyper, bit, y)
            c0 = c0 * 2 + y
        bits[i] = total
        end_byte(st, hyper, symbol)


@kernel
def fill_tables(stretch, apm_base):
    """The constant tables: stretch at 4096 points, and the maps' 33 points squash((i - 16) / 2)."""
    for i in range(stretch.shape[0]):
        q = (i + 0.5) / stretch.shape[0]
        stretch[i] = log(q / (1.0 - q))
    for i in range(apm_base.shape[0]):
        apm_base[i] = squash((i - 16) / 2.0)
