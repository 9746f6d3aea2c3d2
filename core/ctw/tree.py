"""The context tree's kernels: find a context's node, predict along the path, learn a buffer of symbols.

Equations in the package docstring (``__init__.py``).
"""

from __future__ import annotations

from ..jit import kernel
from ..kernels.elementary import exp, log, log2
from .config import ACTIVE, COUNT_LIMIT, EMPTY, NODES, SYMBOLS


@kernel
def child(st, parent, code, A, create):
    """The node for context (code, then parent's context), or -1; with ``create``, added if the pool has room."""
    slots, keys, counts = st.slots, st.keys, st.counts
    key = parent * (A + 1) + code
    mask = slots.shape[0] - 1
    h = (key * 6364136223846793005) & 0x7FFFFFFFFFFFFFFF  # Knuth's MMIX multiplier, in int64
    i = (h >> 20) & mask
    while slots[i] != EMPTY:
        if keys[i] == key:
            return slots[i]
        i = (i + 1) & mask
    if not create or counts[NODES] >= slots.shape[0] // 2:
        return -1
    node = counts[NODES]
    counts[NODES] = node + 1
    slots[i] = node
    keys[i] = key
    return node


@kernel
def predict(st, A, alpha, create):
    """p[0] = the next-symbol distribution over codes 0..width-1 (the escape 0 while the alphabet is open);
    path[d] = the node of depth d (-1 past the deepest), p[d] = p_s(y) of that node (``st.path``, ``st.p``).
    Returns the width."""
    recent, n, total, log_beta, path, p, counts = st.recent, st.n, st.total, st.log_beta, st.path, st.p, st.counts
    D = recent.shape[0]
    width = counts[ACTIVE] + 1
    first = 1 if counts[ACTIVE] == A else 0
    letters = width - first
    path[0] = 0
    for d in range(1, D + 1):
        path[d] = -1 if path[d - 1] < 0 else child(st, path[d - 1], recent[d - 1], A, create)
    uniform = 1.0 / letters
    for y in range(width):
        p[D + 1, y] = 0.0 if y < first else uniform  # below the leaves: an unseen context
    for d in range(D, -1, -1):
        s = path[d]
        if s < 0:
            for y in range(width):
                p[d, y] = p[D + 1, y]
            continue
        denominator = total[s] + alpha * letters
        if d == D:
            for y in range(width):
                p[d, y] = 0.0 if y < first else (n[s, y] + alpha) / denominator
        else:
            # weight of the node's own estimate: beta / (beta + 1), from log beta without overflow
            lb = log_beta[s]
            if lb >= 0.0:
                own = 1.0 / (1.0 + exp(-lb))
            else:
                e = exp(lb)
                own = e / (1.0 + e)
            for y in range(width):
                kt = 0.0 if y < first else (n[s, y] + alpha) / denominator
                p[d, y] = own * kt + (1.0 - own) * p[d + 1, y]
    return width


@kernel
def learn_buffer(st, A, alpha, symbols, bits):
    """Predict, score and learn each of ``symbols``: bits[t] = its prequential code length (the package
    docstring's recursion, then beta and the counts along the path)."""
    recent, n, total, log_beta, path, p, counts = st.recent, st.n, st.total, st.log_beta, st.path, st.p, st.counts
    code_of, symbol_of = st.code_of, st.symbol_of
    D = recent.shape[0]
    for t in range(symbols.shape[0]):
        symbol = symbols[t]
        width = predict(st, A, alpha, True)
        first = 1 if counts[ACTIVE] == A else 0
        letters = width - first
        code = code_of[symbol]
        if code == 0:  # a first occurrence: the escape, then its name among the unseen
            bits[t] = -log2(p[0, 0]) + log2(float(A - counts[ACTIVE]))
        else:
            bits[t] = -log2(p[0, code])
        # beta(s) <- beta(s) P_e(x | s) / p_cs(x), on the event as it was predicted (the escape for a new symbol)
        for d in range(D):
            s = path[d]
            if s < 0:
                break
            kt = (n[s, code] + alpha) / (total[s] + alpha * letters)
            log_beta[s] += log(kt) - log(p[d + 1, code])
        if code == 0:
            code = counts[ACTIVE] + 1
            counts[ACTIVE] = code
            code_of[symbol] = code
            symbol_of[code] = symbol
        for d in range(D + 1):
            s = path[d]
            if s < 0:
                break
            n[s, code] += 1
            total[s] += 1
            if total[s] >= COUNT_LIMIT:  # keep the counts in range for ever: halve them, rounding up
                total[s] = 0
                for y in range(n.shape[1]):
                    n[s, y] = (n[s, y] + 1) // 2
                    total[s] += n[s, y]
        for d in range(D - 1, 0, -1):
            recent[d] = recent[d - 1]
        recent[0] = code
        counts[SYMBOLS] += 1
