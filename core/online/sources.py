"""The context sources: online count models whose predictions vote in the writing layer.

Seed 000's output layer is a vote (eq. 6): every active unit sways the
softmax through its writing weights.  A *context unit* is a unit whose
activity is not a recurrent state but what an online context model says about
the next symbol, one value per symbol, x_s(y).  The logits become

    sum_i a_i w_iy  +  sum_s x_s(y) c_sy

and the writing update trains the context weights c_sy with the same
discounted Newton step (eqs. 17-21) as the recurrent units' weights: per
symbol, each source learns how far it is to be trusted.  This module holds
the sources: it finds each one's context (``locate``), reads its counts into
the activities x_s(y) (``activities``) and counts the symbol that came
(``observe``).  What the activities are worth, the mixer learns
(``mixer.py``).

Sources (each deterministic, bounded in memory, O(small) per symbol):

* **order-k contexts**, hashed into bounded tables of ``entries`` (symbol,
  count) pairs per slot.  Orders form a chain k_1 < k_2 < ... whose estimates
  are interpolated as in Witten-Bell smoothing,

      p_k(y) = (n_k(y) + u_k p_{k-1}(y)) / (n_k + u_k)

  (n_k: the context's count, u_k: its number of distinct symbols, p_0 the
  Krichevsky-Trofimov order-0 estimate), and the unit of order k carries what
  its context adds to the order below,

      x_k(y) = log p_k(y) - log p_{k-1}(y) - log(u_k / (n_k + u_k))
             = log(1 + n_k(y) / (u_k p_{k-1}(y))),

  which is 0 for every symbol the context has not seen.  With every weight
  at 1 the votes add up to log p_K(y) - log p_0(y) plus a constant, the
  interpolated estimate of the longest order; the writing update moves the
  weights from there.  A context whose slot holds another context (a hash
  collision) or nothing yet adds nothing.
* **column**: the context (column in the line, the symbol above it in the
  previous line), with x(y) = log(1 + n(y) / (u p_0(y))).  Past the end of
  the previous line, or after a line too long for the history, there is
  nothing above.
* **field column** (``field_column_context``): the context (field number,
  position in the field, the symbol at that position of the same field in
  the previous line, whether the field so far *is* the previous line's),
  same form.  Where the column source loses its place as soon as an earlier
  field changes length (a longer id, a shorter number), this one stays
  aligned with the field; the last part tells a field that repeats the line
  above (a timestamp in the same second, the same process id) from one that
  has already left it (a number that moved on), whose next symbols follow
  other rules.  Fields are counted up to the 64th; later ones belong to it.
* **word**: the context (field number in the line, hash of the current
  word), same form.  Fields are separated by spaces and tabs; words are runs
  of letters and digits.
* **indirect** (``indirect_context``): the context (the last symbol, the
  symbol that followed the previous occurrence of the last two), same form:
  an order-1 context refined by what the order-2 context did last time, so
  that a pattern seen once ("ab" was followed by "c") is followed again
  where the order-2 counts, averaged over every past occurrence, do not yet
  prefer it.  This is the indirect model of the PAQ compressors (Mahoney,
  "Data Compression Explained", section 4.3).  The symbol that followed is
  kept per pair of last symbols, each taken mod 257 (exact for bytes).
* **match**: the symbol that followed the longest recent repeat of the
  current context (found through a hash of the last ``match_min`` symbols and
  verified backwards over the part of the history still held), voted with
  the log-odds that a match of its length predicted right so far,
  (hits + 1/2) / (misses + 1/2).
* **number** (``number_context``, ``numbers.py``): the next number after the
  same symbols, predicted as the last one there plus its last change.

The line structure uses symbol 10 (newline) and fields symbols 32 and 9
(space, tab), so column, field column and word help byte streams; on other
alphabets they are harmless and can be switched off.

What the sources say, the mixer (``mixer.py``) weighs: the activities x_s(y)
are its inputs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..jit import inline_kernel, kernel
from ..kernels.elementary import log1p_of
from ..kit.growth import BITS, TAKEN, match_hash, match_slot
from .growth import find_slot
from ..kit.hashing import EMPTY, absorb, hashed, history, log2_ceil, slot_and_tag
from .hits import credit, log_odds
from .numbers import number_vote, observe_numbers

# source kinds (Sources.ctx_kind[s, 0]; ctx_kind[s, 1] is the order for ORDER)
ORDER, COLUMN, WORD, MATCH, FIELD_COLUMN, INDIRECT, NUMBER = 0, 1, 2, 3, 4, 5, 6
FIELD_SLOTS = 64  # fields of a line the field column tells apart; OnlineState.fields has FIELD_SLOTS + 2 columns
# OnlineState.fields[0, ABOVE]: the symbol above the current position (EMPTY: nothing), found by locate for
# observe; fields[0, SAME]: 1 while the current field so far is the previous line's, symbol for symbol
ABOVE, SAME = FIELD_SLOTS, FIELD_SLOTS + 1
FOLLOWER_BASE = 257  # OnlineState.followers is indexed by the last two symbols, each as (symbol + 1) mod 257
# positions in OnlineState.ctx_int
CTX_INTS = 10  # the positions just below, in this order
POS, MATCH_PTR, MATCH_LEN, LINE_START, PREV_LINE_START, PREV_LINE_LEN, FIELD, WORD_HASH, ORDER0_TOTAL, NNZ = range(CTX_INTS)
NEWLINE = 10
MATCH_BUCKETS = 24  # match lengths 0..15 one by one, then 16-23, 24-31, ... (see _match_bucket)
MATCH_VERIFY = 32  # longest length credited to a match found by hash (it grows by one per hit after)
# the selected weights' source states b_s: 0 for a source that does not vote, 1..14 for a count source's
# (total, distinct) (_count_state), 1..16 for the match source's length and the number source's position
# (1 + its bucket or position, the long ones merged)
SELECTING_BUCKETS = 17


class Sources(NamedTuple):
    """The arrays of the learner's state (``state.OnlineState``, which documents each) that the sources read
    and write: their tables, the history and the line structure.  ``sources_of`` takes them from the state."""

    ctx_kind: np.ndarray
    ctx_int: np.ndarray
    hist: np.ndarray
    fields: np.ndarray
    followers: np.ndarray
    ctx_slot: np.ndarray
    ctx_found: np.ndarray
    ctx_want: np.ndarray
    ctx_tag: np.ndarray
    ctx_sym: np.ndarray
    ctx_cnt: np.ndarray
    grown: np.ndarray
    order0: np.ndarray
    acc: np.ndarray
    acc_list: np.ndarray
    acc_mark: np.ndarray
    match_table: np.ndarray
    match_stats: np.ndarray
    number_table: np.ndarray
    number_int: np.ndarray
    number_digits: np.ndarray
    number_stats: np.ndarray


@inline_kernel
def sources_of(st):
    """The sources' arrays of the state ``st`` (``Sources``)."""
    return Sources(st.ctx_kind, st.ctx_int, st.hist, st.fields, st.followers, st.ctx_slot, st.ctx_found, st.ctx_want,
                   st.ctx_tag, st.ctx_sym, st.ctx_cnt, st.grown, st.order0, st.acc, st.acc_list, st.acc_mark,
                   st.match_table, st.match_stats, st.number_table, st.number_int, st.number_digits, st.number_stats)


@inline_kernel
def _is_word_symbol(s):
    return (48 <= s <= 57) or (65 <= s <= 90) or (97 <= s <= 122) or s >= 128


@inline_kernel
def _match_bucket(length):
    if length < 16:
        return length
    b = 16 + (length - 16) // 8
    return b if b < MATCH_BUCKETS else MATCH_BUCKETS - 1


@kernel
def locate(src, bits):
    """Find every hashed source's slot for the current position (``src.ctx_slot``, ``src.ctx_found``): in a
    table of 2^bits slots, or, if the tables grow, in the bucket of its own table that the context hashes to
    (``src.grown``, ``growth.find_slot``)."""
    ctx_kind, ctx_int, hist, fields, followers = src.ctx_kind, src.ctx_int, src.hist, src.fields, src.followers
    ctx_tag, ctx_cnt, grown = src.ctx_tag, src.ctx_cnt, src.grown
    S = ctx_kind.shape[0]
    h = np.uint64(0)
    done = 0
    for s in range(S):
        kind = ctx_kind[s, 0]
        if kind == MATCH or kind == NUMBER:
            continue
        if kind == ORDER:
            k = ctx_kind[s, 1]
            while done < k:  # orders are increasing: extend the running hash of the last symbols
                done += 1
                h = absorb(h, hashed(history(hist, ctx_int[POS], done)))
            key = h ^ np.uint64(k)
        elif kind == COLUMN:
            col = ctx_int[POS] - ctx_int[LINE_START]
            above = np.int64(EMPTY)
            # the symbol above is LINE_START - PREV_LINE_START <= H steps back (observe keeps only such lines)
            if col < ctx_int[PREV_LINE_LEN]:
                H = hist.shape[0]
                above = np.int64(hist[(ctx_int[PREV_LINE_START] + col) % H])
            key = absorb(absorb(np.uint64(0x1234), min(col, 1023)), hashed(above))
        elif kind == FIELD_COLUMN:
            # fields[0, f]: where field f of this line starts; fields[1, f]: of the previous line, whose
            # field f ends one before fields[1, f + 1] (a separator, or the newline); fields[1, -1]: its fields
            f = min(ctx_int[FIELD], FIELD_SLOTS - 1)
            pos = ctx_int[POS] - fields[0, f]
            above = np.int64(EMPTY)
            H = hist.shape[0]
            if f < fields[1, FIELD_SLOTS + 1]:
                at = fields[1, f] + pos
                if at < fields[1, f + 1] - 1 and ctx_int[POS] - at <= H:
                    above = np.int64(hist[at % H])
            fields[0, ABOVE] = above
            key = absorb(absorb(absorb(absorb(np.uint64(0x4321), f), min(pos, 255)), hashed(above)),
                          fields[0, SAME])
        elif kind == INDIRECT:
            last = history(hist, ctx_int[POS], 1)
            follower = followers[_follower_index(last, history(hist, ctx_int[POS], 2))]
            key = absorb(absorb(np.uint64(0x8765), hashed(last)), follower)
        else:  # WORD
            key = absorb(absorb(np.uint64(0x5678), min(ctx_int[FIELD], 255)), ctx_int[WORD_HASH])
        if grown.shape[0] > 0:
            slot, found, tag = find_slot(ctx_tag, ctx_cnt, s, key, grown[s, BITS])
        else:
            slot, tag = slot_and_tag(key, s, bits)
            found = 1 if ctx_tag[s, slot] == tag else 0
        src.ctx_slot[s] = slot
        src.ctx_found[s] = found
        src.ctx_want[s] = tag


@inline_kernel
def _follower_index(last, before):
    """Where ``followers`` keeps the symbol that followed the pair (before, last): each as (symbol + 1) mod 257."""
    return ((last + 1) % FOLLOWER_BASE) * FOLLOWER_BASE + (before + 1) % FOLLOWER_BASE


@inline_kernel
def _order0(order0, total, symbol, cap):
    """Krichevsky-Trofimov order-0 probability of a symbol, from its count and the ``total`` count."""
    return (order0[symbol] + 0.5) / (total + 0.5 * cap)


@inline_kernel
def _add_activity(feat, feat_nz, ctx_int, s, code, value):
    n = ctx_int[NNZ]
    feat[s, code] = value
    feat_nz[n, 0] = s
    feat_nz[n, 1] = code
    ctx_int[NNZ] = n + 1


@inline_kernel
def _count_state(n, u):
    """A count source's state in 1..14 from its context's total count n and distinct symbols u (u >= 1)."""
    if u == 1:  # deterministic so far: by how often it was seen
        if n <= 3:
            return n
        if n <= 5:
            return 4
        if n <= 9:
            return 5
        if n <= 19:
            return 6
        return 7
    if u == 2:
        return 8 if n < 4 else (9 if n < 10 else 10)
    if u <= 4:
        return 11 if n < 8 else 12
    return 13 if n < 16 else 14


@kernel
def activities(src, code_of, numerics, cap, feat, feat_nz, source_states):
    """The context units' activities for the next symbol, from the slots ``locate`` found.

    Writes x_s(y) into ``feat`` for the active codes and lists the non-zero
    entries in ``feat_nz`` (their number in ``src.ctx_int[NNZ]``).  With the
    mixer's selected weights, ``source_states`` (the mixer's row array,
    ``Mixer.sel_row``, which ``mixer.select`` then turns into rows) receives
    each source's state b_s in 0 .. SELECTING_BUCKETS - 1 (0: it does not
    vote), then at index S the number k of hashed sources whose context was
    found; it is empty without the selected weights.
    """
    ctx_kind, ctx_int, hist, ctx_found, ctx_slot = src.ctx_kind, src.ctx_int, src.hist, src.ctx_found, src.ctx_slot
    ctx_sym, ctx_cnt, order0, acc, acc_list, acc_mark = src.ctx_sym, src.ctx_cnt, src.order0, src.acc, src.acc_list, \
        src.acc_mark
    S = ctx_kind.shape[0]
    M = ctx_sym.shape[2]
    ctx_int[NNZ] = 0
    selected = source_states.shape[0] > 0
    if selected:
        found = 0
        for s in range(S):
            if ctx_kind[s, 0] != MATCH and ctx_kind[s, 0] != NUMBER:
                found += ctx_found[s]
        for s in range(S):
            source_states[s] = 0  # silent until the source votes
        source_states[S] = found
    # the interpolated chain: acc(y) = scale * p_0(y) + extra[y], with extra kept sparse
    scale = 1.0
    n_list = 0
    for s in range(S):
        kind = ctx_kind[s, 0]
        if kind == NUMBER:
            code, value, position = number_vote(src.number_int, src.number_digits, src.number_stats, code_of, numerics)
            if code > 0:
                _add_activity(feat, feat_nz, ctx_int, s, code, value)
                if selected:
                    source_states[s] = 1 + min(position, SELECTING_BUCKETS - 2)
            continue
        if kind == MATCH:
            length = ctx_int[MATCH_LEN]
            if length > 0:
                H = hist.shape[0]
                predicted = np.int64(hist[ctx_int[MATCH_PTR] % H])
                b = _match_bucket(length)
                _add_activity(feat, feat_nz, ctx_int, s, code_of[predicted], log_odds(numerics, src.match_stats, b))
                if selected:
                    source_states[s] = 1 + min(b, SELECTING_BUCKETS - 2)
            continue
        if ctx_found[s] == 0:
            continue
        slot = ctx_slot[s]
        n = 0
        u = 0
        for e in range(M):
            c = np.int64(ctx_cnt[s, slot, e])
            if c > 0:
                n += c
                u += 1
        if u == 0:
            continue
        if selected:
            source_states[s] = _count_state(n, u)
        if kind == ORDER:
            for e in range(M):
                c = np.int64(ctx_cnt[s, slot, e])
                if c > 0:
                    y = np.int64(ctx_sym[s, slot, e])
                    below = scale * _order0(order0, ctx_int[ORDER0_TOTAL], y, cap) + acc[y]
                    _add_activity(feat, feat_nz, ctx_int, s, code_of[y], log1p_of(numerics, c / (u * below)))
            lam = u / (n + u)
            scale *= lam
            for q in range(n_list):
                acc[acc_list[q]] *= lam
            for e in range(M):
                c = np.int64(ctx_cnt[s, slot, e])
                if c > 0:
                    y = np.int64(ctx_sym[s, slot, e])
                    if acc_mark[y] == 0:
                        acc_mark[y] = 1
                        acc_list[n_list] = y
                        n_list += 1
                    acc[y] += c / (n + u)
        else:
            for e in range(M):
                c = np.int64(ctx_cnt[s, slot, e])
                if c > 0:
                    y = np.int64(ctx_sym[s, slot, e])
                    _add_activity(feat, feat_nz, ctx_int, s, code_of[y], log1p_of(numerics, c / (u * _order0(order0,
                                 ctx_int[ORDER0_TOTAL], y, cap))))
    for q in range(n_list):
        y = acc_list[q]
        acc[y] = 0.0
        acc_mark[y] = 0


@kernel
def clear_activities(ctx_int, feat, feat_nz):
    """Zero the entries ``activities`` wrote (the activity array stays all-zero between symbols)."""
    for q in range(ctx_int[NNZ]):
        feat[feat_nz[q, 0], feat_nz[q, 1]] = 0.0
    ctx_int[NNZ] = 0


@kernel
def observe(src, symbol, limit, match_min):
    """Count ``symbol`` in every source's current context, then append it to the history.

    The slots were found by ``locate`` for this position.  A slot holding
    another context is taken over; a full slot gives up its least counted
    entry; a count reaching ``limit`` halves the slot's counts.
    """
    ctx_kind, ctx_int, hist, fields, followers = src.ctx_kind, src.ctx_int, src.hist, src.fields, src.followers
    ctx_slot, ctx_found, ctx_tag, ctx_want, grown = src.ctx_slot, src.ctx_found, src.ctx_tag, src.ctx_want, src.grown
    ctx_sym, ctx_cnt, order0, match_stats, match_table = src.ctx_sym, src.ctx_cnt, src.order0, src.match_stats, \
        src.match_table
    S = ctx_kind.shape[0]
    M = ctx_sym.shape[2]
    H = hist.shape[0]
    t = ctx_int[POS]
    for s in range(S):
        kind = ctx_kind[s, 0]
        if kind == NUMBER:
            observe_numbers(hist, t, src.number_int, src.number_digits, src.number_table, src.number_stats, symbol,
                            limit)
            continue
        if kind == MATCH:
            length = ctx_int[MATCH_LEN]
            if length > 0:
                hit = np.int64(hist[ctx_int[MATCH_PTR] % H]) == symbol
                credit(match_stats, _match_bucket(length), hit, limit)
                if hit:
                    ctx_int[MATCH_LEN] = length + 1
                    ctx_int[MATCH_PTR] += 1
                else:
                    ctx_int[MATCH_LEN] = 0
            continue
        slot = ctx_slot[s]
        if ctx_found[s] == 0:
            if grown.shape[0] > 0 and ctx_tag[s, slot] == 0:
                grown[s, TAKEN] += 1
            ctx_tag[s, slot] = ctx_want[s]
            for e in range(M):
                ctx_cnt[s, slot, e] = 0
                ctx_sym[s, slot, e] = 0
        where = -1
        weakest = 0
        for e in range(M):
            c = ctx_cnt[s, slot, e]
            if c > 0 and np.int64(ctx_sym[s, slot, e]) == symbol:
                where = e
                break
            if c < ctx_cnt[s, slot, weakest]:
                weakest = e
        if where < 0:
            where = weakest
            ctx_sym[s, slot, where] = symbol
            ctx_cnt[s, slot, where] = 0
        c = np.int64(ctx_cnt[s, slot, where]) + 1
        ctx_cnt[s, slot, where] = c
        if c >= limit:
            for e in range(M):
                ctx_cnt[s, slot, e] = (np.int64(ctx_cnt[s, slot, e]) + 1) // 2
    order0[symbol] += 1
    ctx_int[ORDER0_TOTAL] += 1
    if followers.shape[0] > 0:  # the indirect source: this symbol followed the last two
        followers[_follower_index(history(hist, ctx_int[POS], 1), history(hist, ctx_int[POS], 2))] = symbol + 1
    if fields.shape[0] > 0 and symbol != fields[0, ABOVE]:
        fields[0, SAME] = 0
    # history and line structure
    hist[t % H] = symbol
    t += 1
    ctx_int[POS] = t
    if symbol == NEWLINE:
        ctx_int[PREV_LINE_START] = ctx_int[LINE_START]
        # the symbols of a line are read line length + 1 steps back: a line of H symbols or more has
        # left the ring, and the next line has nothing above it
        length = t - 1 - ctx_int[LINE_START]
        ctx_int[PREV_LINE_LEN] = length if length < H else 0
        ctx_int[LINE_START] = t
        if fields.shape[0] > 0:  # the line's field starts become the previous line's
            n = min(ctx_int[FIELD], FIELD_SLOTS - 1) + 1
            for f in range(n):
                fields[1, f] = fields[0, f]
            fields[1, n] = t
            fields[1, FIELD_SLOTS + 1] = n
            fields[0, 0] = t
            fields[0, SAME] = 1
        ctx_int[FIELD] = 0
        ctx_int[WORD_HASH] = 0
    elif symbol == 32 or symbol == 9:
        ctx_int[FIELD] += 1
        if fields.shape[0] > 0 and ctx_int[FIELD] < FIELD_SLOTS:
            fields[0, ctx_int[FIELD]] = t
            fields[0, SAME] = 1
        ctx_int[WORD_HASH] = 0
    elif _is_word_symbol(symbol):
        ctx_int[WORD_HASH] = np.int64(absorb(np.uint64(ctx_int[WORD_HASH]), symbol) >> np.uint64(1))
    else:
        ctx_int[WORD_HASH] = 0
    # the match model's table: the position after the last match_min symbols
    if match_min > 0 and t >= match_min:
        h = match_hash(hist, t, match_min)
        growing = grown.shape[0] > 0
        where = match_slot(h, grown[grown.shape[0] - 1, BITS] if growing else log2_ceil(match_table.shape[0]))
        if ctx_int[MATCH_LEN] == 0:
            candidate = match_table[where] - 1  # stored + 1, so 0 means empty
            if candidate >= 0 and candidate < t and t - candidate < H:
                # verify backwards, only over positions still in the ring (t - H and later): what
                # lies before the candidate further back than that has been overwritten
                oldest = t - H if t > H else 0
                length = 0
                while length < MATCH_VERIFY and length < candidate - oldest and \
                        hist[(candidate - 1 - length) % H] == hist[(t - 1 - length) % H]:
                    length += 1
                if length >= match_min:
                    ctx_int[MATCH_LEN] = length
                    ctx_int[MATCH_PTR] = candidate
        if growing and match_table[where] == 0:
            grown[grown.shape[0] - 1, TAKEN] += 1
        match_table[where] = t + 1
