"""The number source: the shared number predictor (``kit/numbers.py``), voting for a symbol of the 256-way mix.

One source holds a table per context length (``NUMBER_CONTEXTS``), and
votes with the longest context whose prediction is still on track, with the
log-odds that its predictions were right so far, counted per position in
the number and per how many times in a row the context's prediction was
right (``hits.py``).  The tables hold 2^(context_bits - 2) contexts each, one
per slot (a context takes over its slot); the tag is the key's low 31 bits.
Their hashing is part of the ``.sqd`` format, as the context tables' is.
"""

from __future__ import annotations

import numpy as np

from ..jit import inline_kernel
from ..kit.hashing import absorb, finalize, hashed, history, log2_ceil
from ..kit.numbers import (N_ON_TRACK, N_PREDICTED, N_RUN, NUMBER_CONTEXTS, NUMBER_POSITIONS, NumberTables,
                           observe_number)
from .hits import credit, log_odds

# OnlineState.number_int[j, .]: the shared predictor's scalars (kit/numbers.py: N_KEY ... N_ON_TRACK), then the
# symbol voted for at this position (-1: none) and its bucket, the streak of the entry the prediction came from
N_VOTED, N_BUCKET, N_STREAK = 6, 7, 8
NUMBER_INTS = 9


@inline_kernel
def number_vote(number_int, number_digits, number_stats, code_of, numerics):
    """The number source's vote for the next symbol: (code, activity, position), code 0 for none.

    The longer context's prediction first, else the shorter one's.  A
    prediction still on track at digit k of the current run votes for its
    digit k (past its last digit, for the symbol that ended the number last
    time) with the log-odds log((hits + 1/2) / (misses + 1/2)) of its table's
    bucket: the position voted for, and the streak of the entry it came from.
    """
    tables = number_int.shape[0]
    for j in range(tables):
        number_int[j, N_VOTED] = -1
    for j in range(tables):
        length = number_int[j, N_PREDICTED]
        k = number_int[j, N_RUN]
        if length <= 0 or number_int[j, N_ON_TRACK] == 0 or k > length:
            continue
        predicted = number_digits[j, k]
        code = code_of[predicted]
        if code == 0:  # a symbol not seen yet has no code to vote for
            continue
        position = min(k, NUMBER_POSITIONS - 2) if k < length else NUMBER_POSITIONS - 1
        bucket = position + NUMBER_POSITIONS * number_int[j, N_STREAK]
        number_int[j, N_VOTED] = predicted
        number_int[j, N_BUCKET] = bucket
        return code, log_odds(numerics, number_stats[j], bucket), position
    return np.int64(0), 0.0, np.int64(0)


@inline_kernel
def observe_numbers(hist, t, number_int, number_digits, number_table, number_stats, symbol, limit):
    """Each number table sees ``symbol`` and, after a non-digit, the context a number starting next has there.

    ``hist`` and ``t`` are the history ring and the position (``hashing.history``), the other arrays this
    source's own.
    """
    digit = 48 <= symbol <= 57  # no number starts after a digit: the key goes unread
    h = absorb(np.uint64(0x2468), hashed(symbol))  # its last NUMBER_CONTEXTS[j] symbols: one hash, shortest up
    done = 1
    for j in range(number_int.shape[0] - 1, -1, -1):
        while not digit and done < NUMBER_CONTEXTS[j]:
            h = absorb(h, hashed(history(hist, t, done)))
            done += 1
        if number_int[j, N_VOTED] >= 0:
            credit(number_stats[j], number_int[j, N_BUCKET], number_int[j, N_VOTED] == symbol, limit)
        observe_number(NumberTables(number_table, number_int, number_digits), j, symbol, finalize(h),
                       log2_ceil(number_table.shape[1]), False, N_STREAK)
