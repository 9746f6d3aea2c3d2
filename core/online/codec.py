"""The online learner driving the range coder: one Numba loop per block, both ways.

For each symbol the learner predicts (``predict_step``), the prediction is
quantised (``coder.quantize``), the symbol's interval is coded, and the
learner learns the symbol (``learn_step``).  The decoder runs the same
learner on the symbols it decodes, so it sees the same predictions bit for
bit.  A first occurrence is coded as the escape, then as its rank among the
symbols not yet seen, uniformly.
"""

from __future__ import annotations

import numpy as np

from .. import coder
from ..jit import kernel
from .config import F
from .state import ACTIVE
from .steps import coded, learn_step, predict_step


@kernel
def _interval(freq, code):
    start = 0
    for y in range(code):
        start += freq[y]
    return start


@kernel
def encode_symbols(st, hyper, flags, symbols, cst, out, freq):
    """Encode ``symbols`` into ``out`` with coder state ``cst`` (``coder.encoder_state``)."""
    cap = flags[F.alphabet_cap]
    for t in range(symbols.shape[0]):
        symbol = symbols[t]
        width = predict_step(st, flags)
        first = 1 if st.counts[ACTIVE] == cap else 0
        total = coder.quantize(coded(st), first, width, freq)
        code = st.code_of[symbol]
        coder.encode(cst, out, _interval(freq, code), freq[code], total)
        if code == 0:
            rank = symbol
            for s in range(symbol):  # rank among the unseen symbols
                if st.code_of[s] != 0:
                    rank -= 1
            coder.encode(cst, out, rank, 1, cap - st.counts[ACTIVE])
        learn_step(st, hyper, flags, symbol)


@kernel
def decode_symbols(st, hyper, flags, data, cst, out, freq):
    """Decode ``out.shape[0]`` symbols from ``data`` (coder state ``coder.decoder_state(data)``).

    Returns how many were decoded: all of them, or fewer when the coder has
    read past the end of ``data``, which the encoder's output never makes it
    do (its last read is ``data``'s last byte): a symbol count larger than the
    payload holds is then caught at once rather than decoded from zeros.
    ``freq`` has ``flags[F.alphabet_cap] + 1`` entries (``freq_buffer``).
    """
    cap = flags[F.alphabet_cap]
    for t in range(out.shape[0]):
        if cst[coder.POS] > data.shape[0]:
            return t
        width = predict_step(st, flags)
        first = 1 if st.counts[ACTIVE] == cap else 0
        total = coder.quantize(coded(st), first, width, freq)
        v = coder.target(cst, total)
        code = 0
        start = 0
        while code < width - 1 and start + freq[code] <= v:
            start += freq[code]
            code += 1
        coder.consume(cst, data, start, freq[code], total)
        if code == 0:
            unseen = cap - st.counts[ACTIVE]
            rank = coder.target(cst, unseen)
            coder.consume(cst, data, rank, 1, unseen)
            symbol = 0
            while st.code_of[symbol] != 0 or rank > 0:  # the rank-th unseen symbol
                if st.code_of[symbol] == 0:
                    rank -= 1
                symbol += 1
        else:
            symbol = st.symbol_of[code]
        out[t] = symbol
        learn_step(st, hyper, flags, symbol)
    return out.shape[0]


def max_encoded_bytes(n_symbols: int) -> int:
    """An upper bound on the encoder's output for ``n_symbols`` symbols.

    Each symbol narrows the range by at most 2^16 (its frequency is at least
    1 of at most 2^16), plus at most 2^16 for a first occurrence's rank.
    """
    return 4 * n_symbols + 16


def freq_buffer(alphabet_cap: int) -> np.ndarray:
    return np.zeros(alphabet_cap + 1, dtype=np.int64)
