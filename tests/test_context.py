"""Context units (``seqd.core.online.sources`` and ``mixer``) against references written from their definitions.

1. every source's activities (order-k chain, column, word, match), position by
   position, against ``naive.ContextReference``, which keys dictionaries by the
   contexts themselves instead of hashing them.  Hashed tables of any size share
   slots between contexts (the birthday bound: a few thousand contexts collide
   in 2^20 slots already), so the test watches which slot the kernels give each
   context -- always the same one, and rarely one held by another context in
   roomy tables -- and has the reference forget a context when another takes
   its slot; cramped tables make that happen all the time.  At every position
   a source finds its context exactly when the reference has it, and the
   activities agree to 1e-12;
2. bounded memory and in-range tables under a long random stream;
3. windows and context weights learn, damaged snapshots are refused (determinism
   and exact snapshots with context units: ``tests/test_contract.py``);
4. context units that say nothing leave the writing update exactly as without them;
5. ``context_writing_update`` against a dense inverse of the discounted metric;
6. configuration checks;
7. defects found while writing these tests, now fixed: regression tests (each docstring says what was wrong).
"""

from __future__ import annotations

import itertools
import json
import math
import struct
import zlib

import numpy as np
import pytest

import naive
from kernel_runs import view
from seqd.core.online import OnlineConfig, OnlineLearner
from seqd.core.online import snapshot
from seqd.core.online.sources import (
    ABOVE,
    EMPTY,
    FIELD,
    FIELD_COLUMN,
    INDIRECT,
    LINE_START,
    MATCH,
    NUMBER,
    MATCH_LEN,
    MATCH_PTR,
    NNZ,
    ORDER0_TOTAL,
    POS,
    PREV_LINE_LEN,
    PREV_LINE_START,
    SAME,
    Sources,
    activities,
    clear_activities,
    locate,
    observe,
)
from seqd.core.model import ACTIVATIONS
from seqd.core.online.selecting import set_rows, unit_centre
from seqd.core.online.alphabet import activate_symbol
from seqd.core.kit.hashing import absorb, finalize
from seqd.core.kit.numbers import AFTER as NUMBER_AFTER
from seqd.core.kit.numbers import LAST as NUMBER_LAST
from seqd.core.kit.numbers import LENGTH as NUMBER_LENGTH
from seqd.core.kit.numbers import N_KEY, N_PREDICTED, N_RUN, NUMBER_CONTEXTS
from seqd.core.kit.numbers import TAG as NUMBER_TAG
from seqd.core.online.numbers import N_BUCKET, N_VOTED
from seqd.core.online.config import SELECTED_STEPS, H
from seqd.core.online.mixer import Mixer, context_writing_update, select, selected_writing_update, vote
from seqd.core.online.steps import writing_step
from seqd.core.online.state import ACTIVE, ETA_W, SYMBOLS, WINDOW_POS, OnlineState, new_state

REL = 1e-12


# -- inputs ----------------------------------------------------------------------------------


def random_text(n=1500, seed=1):
    """Random symbols over a small alphabet that includes the newline and the space."""
    return np.random.default_rng(seed).choice(np.frombuffer(b"abcde \n", np.uint8), size=n).astype(np.int64)


def log_text(n=2500, seed=0):
    """Log-like lines: dates, times, hosts, paths, numbers; many repeats, many small variations."""
    rng = np.random.default_rng(seed)
    hosts = ["alpha", "beta", "gamma7"]
    paths = ["/api/v1/items", "/login", "/static/app.js", "/api/v1/users"]
    out = bytearray()
    while len(out) < n:
        out += (f"2024-03-{rng.integers(1, 29):02d} 12:{rng.integers(0, 60):02d}:{rng.integers(0, 60):02d} "
                f"{hosts[rng.integers(3)]} GET {paths[rng.integers(4)]}?id={rng.integers(0, 500)} "
                f"{[200, 200, 200, 404, 302][rng.integers(5)]} {rng.integers(100, 9999)}\n").encode()
    return np.frombuffer(bytes(out[:n]), np.uint8).astype(np.int64)


def repeats(seed=2):
    """A, then A with one symbol changed, then A again, then noise: long matches, a broken one, and one
    re-found right after the break, whose context agrees with the first copy far back (verified to 32)."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"abcd\n", np.uint8)
    a = rng.choice(alphabet, size=300)
    b = a.copy()
    b[200] = ord("e")
    return np.concatenate([a, b, a, rng.choice(alphabet, size=200)]).astype(np.int64)


STREAMS = {"random": random_text, "log": log_text, "repeats": repeats}

# Hashed tables: 2^16 slots per source hold these inputs' contexts with a few collisions (the birthday
# bound: at 2^20 slots a few thousand contexts still collide), 2^10 slots make them collide all the time.
ROOMY = dict(units=0, alphabet_cap=256, context_bits=16, match_bits=16)
CRAMPED = dict(units=0, alphabet_cap=256, context_bits=10, match_bits=10)
KINDS = {
    "order": dict(context_orders=(1, 2, 3, 5), context_entries=3, count_limit=5),
    "column": dict(column_context=True, context_entries=4, count_limit=7),
    "word": dict(word_context=True, context_entries=4, count_limit=9),
    "field": dict(field_column_context=True, context_entries=4, count_limit=9),
    "indirect": dict(indirect_context=True, context_entries=4, count_limit=9),
    "match": dict(match_min=4, count_limit=6),
    "all": dict(context_orders=(1, 3, 6), column_context=True, field_column_context=True, word_context=True,
                indirect_context=True, match_min=5, context_entries=5, count_limit=12),
}
KINDS["selected"] = dict(KINDS["all"], selected_weights=True)  # every source, the mixer of preset bytes-4
KINDS["mixed"] = dict(KINDS["selected"], field_selected_weights=True)  # every source, the mixer of preset bytes-6
KINDS["order2"] = dict(KINDS["selected"], order2_selected_weights=True)  # the order-2-selected set alone
KINDS["mixed-order2"] = dict(KINDS["mixed"], order2_selected_weights=True)  # the mixer of preset bytes-7
KINDS["mixed-fields"] = dict(KINDS["mixed-order2"], field_selecting_fields=3, field_selecting_positions=5)  # the whole
KINDS["mixed-units"] = dict(KINDS["mixed-fields"], units=3, degree=1, unit_selected_weights=True)  # and the unit set
NUMBER_KINDS = {  # the number source alone, and beside every other source and the whole mixer
    "number": dict(number_context=True, count_limit=9),
    "number-mixed": dict(KINDS["mixed"], number_context=True),
}


# -- 1. every source against the dictionary reference ------------------------------------------


def reference_for(cfg, **kwargs):
    kwargs.setdefault("history", 1 << cfg.history_bits)
    return naive.ContextReference(cfg.sources, cfg.alphabet_cap, cfg.context_entries, cfg.count_limit,
                                  cfg.match_min, **kwargs)


def kernel_activities(st):
    """{(source, code): x} for the entries ``activities`` listed (a match's vote may be exactly 0)."""
    listed = {}
    for q in range(int(st.ctx_int[NNZ])):
        key = (int(st.feat_nz[q, 0]), int(st.feat_nz[q, 1]))
        assert key not in listed, f"entry {key} listed twice"
        listed[key] = float(st.feat[key])
    rest = st.feat.copy()
    for key in listed:
        rest[key] = 0.0
    assert not rest.any(), "a feature is set but not listed"
    return listed


class Storage:
    """Which context holds each slot of the kernels' hashed tables, as seen from the kernels' choices.

    The kernels hash a context to a slot; a slot holding another context is
    taken over.  Seen from outside, with the reference's contexts: a context
    must always get the same slot, and when a context arrives at a slot held by
    another, the reference forgets the other (the only way the bounded tables
    lose what they counted, besides the entries' own replacement policy).
    """

    def __init__(self, ref):
        self.ref = ref
        S = len(ref.sources)
        self.slot_of = [dict() for _ in range(S)]
        self.holder = [dict() for _ in range(S)]
        self.match_holder = {}
        self.match_keys = set()
        self.number_holder = {}  # number table -> slot -> the context it holds
        self.number_collisions = 0
        self.number_contexts = {}  # number table -> every context it stored a number under
        self.collisions = 0  # arrivals at a slot held by another context
        self.shared = set()  # slots that held more than one context
        self.consistent = True

    def arrive(self, s, slot):
        context = self.ref.context(s)
        if self.slot_of[s].setdefault(context, slot) != slot:
            self.consistent = False  # one context, two slots: the hash is not a function of the context
        held = self.holder[s].get(slot)
        if held is not None and held != context:
            self.ref.forget(s, held)
            self.collisions += 1
            self.shared.add((s, slot))
        self.holder[s][slot] = context

    def store_match(self, key, slot):
        self.match_keys.add(key)
        held = self.match_holder.get(slot)
        if held is not None and held != key:
            self.ref.forget_match(held)
            self.collisions += 1
            self.shared.add((-1, slot))
        self.match_holder[slot] = key

    def store_number(self, st, symbol):
        """Before ``observe``: the slot each number table is about to store the ending number in.

        The kernels keep the key of the current number's context (``N_KEY``),
        and its slot is the key's top bits: a context arriving at a slot held by
        another takes it over, and the reference forgets the other.
        """
        start, run = self.ref._run()
        if 48 <= symbol <= 57 or not run or start == 0 or len(run) > naive.NUMBER_DIGITS:
            return
        for j in range(len(NUMBER_CONTEXTS)):
            bits = int(st.number_table.shape[1]).bit_length() - 1
            slot = int(np.int64(st.number_int[j, N_KEY]).astype(np.uint64) >> np.uint64(64 - bits))
            context = self.ref._number_context(j, start)
            self.number_contexts.setdefault(j, set()).add(context)
            held = self.number_holder.setdefault(j, {}).get(slot)
            if held is not None and held != context:
                self.ref.numbers[j].pop(held, None)
                self.number_collisions += 1
            self.number_holder[j][slot] = context

    def expected_shared(self, slots, match_slots):
        """The birthday bound: n contexts hashed at random into T slots share about n^2 / 2T of them."""
        counts = [len(d) for d in self.slot_of if d]
        return sum(n * n / (2 * slots) for n in counts) + len(self.match_keys) ** 2 / (2 * match_slots)


def compare_with_reference(cfg, x, references, check_all=True):
    """Drive the sources and the mixer's vote (as ``steps.predict_step`` does) and ``observe`` symbol by symbol
    beside each reference of ``references``.

    Returns (state, storages, first position where each reference disagreed or None).  With
    ``check_all`` (one reference) every position is asserted instead.
    """
    st = new_state(cfg)
    st.sel_w[...] = np.random.default_rng(7).normal(0.0, 0.5, st.sel_w.shape)  # the mixer's weights, if any
    st.fsel_w[...] = np.random.default_rng(8).normal(0.0, 0.5, st.fsel_w.shape)
    hyper, flags = cfg.hyper(), cfg.flags()
    cap, m = cfg.alphabet_cap, cfg.match_min
    hashed = [s for s, (kind, _) in enumerate(cfg.sources) if kind not in (MATCH, NUMBER)]
    storages = [Storage(ref) for ref in references]
    offset = np.zeros(cap + 1)
    units = np.random.default_rng(9)
    first_disagreement = [None] * len(references)
    for t, symbol in enumerate(int(v) for v in x):
        width = int(st.counts[ACTIVE]) + 1
        assert not st.feat.any() and int(st.ctx_int[NNZ]) == 0  # cleared between symbols
        a_t = st.a[int(st.counts[WINDOW_POS])]
        a_t[1:] = units.normal(0.0, 1.0, cfg.units)  # the units' activities (this harness does not evolve them)
        src, mix = view(Sources, st), view(Mixer, st)
        set_rows(src, a_t, st.fsel_row, cfg.field_set_fields, cfg.field_selecting_positions,
                 cfg.order2_selected_weights, cfg.unit_set_units, 0.0)
        locate(src, cfg.context_bits)
        activities(src, st.code_of, st.numerics, cap, st.feat, st.feat_nz, st.sel_row)
        select(mix)
        vote(mix, int(st.ctx_int[NNZ]), offset, width)
        got = kernel_activities(st)
        for r, (ref, storage) in enumerate(zip(references, storages)):
            for s in hashed:
                storage.arrive(s, int(st.ctx_slot[s]))
            codes = ref.codes()
            want = {(s, codes[y]): v for s, votes in enumerate(ref.activities()) for y, v in votes.items()}
            found = [int(st.ctx_found[s]) for s in hashed]
            ref_found = [int(ref.found(s)) for s in hashed]
            if check_all:
                assert storage.consistent, f"position {t}: a context got two different slots"
                assert found == ref_found, f"position {t}: contexts found {found} != {ref_found}"
                assert set(got) == set(want), f"position {t}: voters {sorted(got)} != {sorted(want)}"
                for k, v in want.items():
                    assert math.isclose(got[k], v, rel_tol=REL, abs_tol=1e-300), \
                        f"position {t}, (source, code) {k}: {got[k]!r} != {v!r}"
                assert int(st.ctx_int[MATCH_LEN]) == ref.match_length, f"position {t}: match length"
                if ref.match_length:
                    assert int(st.ctx_int[MATCH_PTR]) == ref.match_at, f"position {t}: match position"
                # the votes: offset[y] = sum_s x_s(y) (c_sy + u[r_s, s]), and exactly 0 for codes nobody voted for
                mixed = np.zeros(len(cfg.sources))  # each source's weight shared by all symbols: u[r_s, s] + v[q, s]
                size = np.zeros(len(cfg.sources))  # and the sum of its parts' magnitudes, for rounding
                if cfg.selected_weights:
                    rows, k = ref.selecting_rows()
                    assert st.sel_row.tolist() == rows + [k], f"position {t}: the mixer's rows"
                    mixed += st.sel_w[rows, np.arange(len(cfg.sources))]
                    size += np.abs(st.sel_w[rows, np.arange(len(cfg.sources))])
                rows = []  # the shared sets' rows, stacked in fsel_w: the field set's, the order-2 set's, the unit set's
                if cfg.field_selected_weights:
                    rows.append(ref.field_selecting_row(cfg.field_selecting_fields, cfg.field_selecting_positions))
                field_rows = cfg.field_set_fields * 2 * cfg.field_selecting_positions * 4
                if cfg.order2_selected_weights:
                    rows.append(field_rows + ref.order2_selecting_row())
                if cfg.unit_selected_weights:  # the signs of the units' activities, unit i as bit i - 1
                    signs = sum(1 << i for i in range(min(cfg.units, 8)) if a_t[i + 1] > 0.0)
                    rows.append(field_rows + 4096 * cfg.order2_selected_weights + signs)
                assert st.fsel_row.tolist() == rows, f"position {t}: the shared sets' rows"
                for q in rows:
                    mixed += st.fsel_w[q]
                    size += np.abs(st.fsel_w[q])
                votes, scale = np.zeros(width), np.zeros(width)  # scale: the sum of |terms|, for rounding
                for (s, code), v in want.items():
                    votes[code] += v * (cfg.context_weight + mixed[s])
                    scale[code] += abs(v) * (abs(cfg.context_weight) + size[s])
                assert np.all(np.abs(offset[:width] - votes) <= REL * scale), f"position {t}: offset"
            elif first_disagreement[r] is None:
                agree = storage.consistent and found == ref_found and set(got) == set(want) and \
                    all(math.isclose(got[k], v, rel_tol=REL, abs_tol=1e-300) for k, v in want.items()) and \
                    int(st.ctx_int[MATCH_LEN]) == ref.match_length
                if not agree:
                    first_disagreement[r] = t
        clear_activities(st.ctx_int, st.feat, st.feat_nz)
        if st.code_of[symbol] == 0:
            activate_symbol(st, hyper, flags, symbol)
        if cfg.number_context:
            for storage in storages:
                storage.store_number(st, symbol)
        observe(view(Sources, st), symbol, cfg.count_limit, cfg.match_min)
        if m and t + 1 >= m:  # the match table's slot is the one that now holds this position, the latest
            slot = int(st.match_table.argmax())
            assert st.match_table[slot] == t + 2
            for storage in storages:
                storage.store_match(tuple(int(v) for v in x[t + 1 - m:t + 1]), int(slot))
        for ref in references:
            ref.observe(symbol)
    return st, storages, first_disagreement


CASES = [("roomy", kind, stream) for kind in KINDS for stream in STREAMS] + \
    [("cramped", "all", stream) for stream in STREAMS]


@pytest.mark.parametrize("size,kind,stream", CASES, ids=["-".join(c) for c in CASES])
def test_activities_match_the_dictionary_reference(size, kind, stream):
    cfg = OnlineConfig(**{**(ROOMY if size == "roomy" else CRAMPED), **KINDS[kind]})
    x = STREAMS[stream]()
    ref = reference_for(cfg)
    st, (storage,), _ = compare_with_reference(cfg, x, [ref])
    # internal codes: in order of first appearance, 0 being the escape
    codes = ref.codes()
    assert int(st.counts[ACTIVE]) == len(codes)
    assert {int(y): int(st.code_of[y]) for y in np.flatnonzero(st.code_of)} == codes
    assert all(int(st.symbol_of[c]) == y for y, c in codes.items())
    assert int(st.ctx_int[POS]) == int(st.ctx_int[ORDER0_TOTAL]) == len(x)
    # roomy tables: the hash spreads the contexts; cramped ones: takeovers all the time
    expected = storage.expected_shared(1 << cfg.context_bits, 1 << cfg.match_bits)
    if size == "roomy":
        assert len(storage.shared) <= 2 * expected + 5, (len(storage.shared), expected)
    else:
        assert storage.collisions > 100, storage.collisions
    # the inputs went through the paths that matter
    if kind != "match":
        assert ref.events["evicted"] > 0 and ref.events["halved"] > 0, ref.events
    if kind in ("match", "all", "mixed") and stream != "random":
        assert ref.events["match hit"] > 0 and ref.events["match miss"] > 0 and ref.events["match halved"] > 0
    if kind in ("match", "all", "mixed") and stream == "repeats":
        assert ref.longest_match >= 72  # the last length bucket
        assert ref.events["match verified to the limit"] > 0, ref.events


def counters(n=4000, seed=4):
    """Lines of a few templates whose numbers mostly count up: by one, by a fixed step, or not at all (a port),
    with now and then a jump, a number that gains a digit, and a zero-padded one."""
    rng = np.random.default_rng(seed)
    task, block, port, sent = 7, 990, 8080, 4096
    out = bytearray()
    while len(out) < n:
        kind = int(rng.integers(3))
        if kind == 0:
            task += 1 if rng.random() < 0.9 else int(rng.integers(2, 50))
            out += f"Finished task {task}.0 in stage 3.0 (TID {task + 100}) {sent} bytes\n".encode()
        elif kind == 1:
            block += 5
            out += f"blk_{block:06d} stored on port {port}\n".encode()
        else:
            sent += 512 if rng.random() < 0.8 else int(rng.integers(1, 9999))
            out += f"sent {sent} bytes to 10.0.0.{task % 250}:{port}\n".encode()
    return np.frombuffer(bytes(out[:n]), np.uint8).astype(np.int64)


@pytest.mark.parametrize("kind", NUMBER_KINDS)
@pytest.mark.parametrize("stream", ["counters", "log", "random"])
def test_the_number_source_matches_the_dictionary_reference(kind, stream):
    cfg = OnlineConfig(**ROOMY, **NUMBER_KINDS[kind])
    x = {"counters": counters, "log": log_text, "random": random_text}[stream]()
    ref = reference_for(cfg)
    st, (storage,), _ = compare_with_reference(cfg, x, [ref])  # asserts every position
    # the kernels' tables hold the reference's contexts, less those a colliding context took the slot of
    slots = st.number_table.shape[1]  # the birthday bound, as for the context tables
    expected = sum(len(seen) ** 2 / (2 * slots) for seen in storage.number_contexts.values())
    assert storage.number_collisions <= 2 * expected + 5, (storage.number_collisions, expected)
    held = [int(np.count_nonzero(st.number_table[j, :, NUMBER_TAG])) for j in range(len(NUMBER_CONTEXTS))]
    assert held == [len(table) for table in ref.numbers]
    assert (st.number_stats == np.array([[ref.number_hits[j], ref.number_tries[j]]
                                         for j in range(len(NUMBER_CONTEXTS))])).all()
    if stream == "counters":  # the paths that matter: stored, predicted right and wrong, votes hit and missed
        for event in ("number stored", "number predicted", "number changed", "number hit", "number miss"):
            assert ref.events[event] > 0, (event, ref.events)


def test_a_snapshot_with_the_number_source_out_of_range_is_refused():
    cfg = OnlineConfig(**ROOMY, **NUMBER_KINDS["number"])
    learner = OnlineLearner(cfg)
    learner.learn(counters(1500))
    OnlineLearner.from_bytes(learner.to_bytes())  # intact
    slot = int(np.flatnonzero(learner.state.number_table[0, :, NUMBER_TAG])[0])
    damages = [("number_digits", (0, 3), cfg.alphabet_cap), ("number_digits", (1, 0), -1),
               ("number_table", (0, slot, NUMBER_AFTER), cfg.alphabet_cap),
               ("number_table", (0, slot, NUMBER_LENGTH), 19), ("number_table", (1, slot, NUMBER_LAST), -1),
               ("number_int", (0, N_BUCKET), 68), ("number_int", (1, N_PREDICTED), 19),
               ("number_int", (0, N_VOTED), cfg.alphabet_cap), ("number_int", (0, N_RUN), -1),
               ("number_stats", (0, 0, 5), 200)]
    for name, where, value in damages:
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        getattr(damaged.state, name)[where] = value
        with pytest.raises(ValueError, match="number source"):
            OnlineLearner.from_bytes(damaged.to_bytes())


def test_the_field_column_past_its_64th_field_and_beyond_the_history():
    """Lines of 70 fields (the 64th runs to the end of the line), some longer than the 1024 symbols kept."""
    cfg = OnlineConfig(**ROOMY, field_column_context=True, history_bits=10, context_entries=4, count_limit=9)
    rng = np.random.default_rng(5)
    lines = []
    for i in range(40):
        digits = (10, 19) if i % 7 in (3, 4) else (1, 3)  # two long lines in seven: about the history's length
        fields = [str(int(rng.integers(10 ** (digits[0] - 1), 10 ** int(rng.integers(*digits))))) for _ in range(70)]
        lines.append((" " if i % 2 else "\t").join(fields))
    x = np.frombuffer(("\n".join(lines) + "\n").encode(), dtype=np.uint8).astype(np.int64)
    ref = reference_for(cfg)
    compare_with_reference(cfg, x, [ref])  # asserts every position
    longest = max(len(line) for line in lines)
    assert (1 << cfg.history_bits) - 100 < longest < (1 << cfg.history_bits) + 300, longest  # the bound binds


def test_a_snapshot_with_field_positions_out_of_range_is_refused():
    cfg = OnlineConfig(**ROOMY, field_column_context=True, context_entries=4, count_limit=9)
    learner = OnlineLearner(cfg)
    learner.learn(log_text(60, seed=3))
    OnlineLearner.from_bytes(learner.to_bytes())  # intact
    for where, value in [((1, 65), 65), ((0, 3), -1), ((1, 2), int(learner.state.ctx_int[POS]) + 1),
                         ((0, ABOVE), cfg.alphabet_cap), ((0, ABOVE), EMPTY - 1), ((0, SAME), 2), ((0, SAME), -1)]:
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        damaged.state.fields[where] = value
        with pytest.raises(ValueError, match="field column"):
            OnlineLearner.from_bytes(damaged.to_bytes())
    for value in (-1, -1000):  # a field number below 0 would index before the field starts
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        damaged.state.ctx_int[FIELD] = value
        with pytest.raises(ValueError, match="field number"):
            OnlineLearner.from_bytes(damaged.to_bytes())
    for value in (EMPTY, 0):  # "nothing above" and an ordinary symbol above restore
        intact = OnlineLearner.from_bytes(learner.to_bytes())
        intact.state.fields[0, ABOVE] = value
        OnlineLearner.from_bytes(intact.to_bytes())


def test_a_snapshot_whose_indirect_table_names_unseen_symbols_is_refused():
    cfg = OnlineConfig(**ROOMY, indirect_context=True, context_entries=4, count_limit=9)
    learner = OnlineLearner(cfg)
    learner.learn(log_text(60, seed=3))
    OnlineLearner.from_bytes(learner.to_bytes())  # intact
    assert learner.state.followers.any()
    unseen = int(np.flatnonzero(learner.state.code_of == 0)[0])
    for value in (unseen + 1, cfg.alphabet_cap + 1, -1):
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        damaged.state.followers[7] = value
        with pytest.raises(ValueError, match="indirect"):
            OnlineLearner.from_bytes(damaged.to_bytes())


def test_the_log_stream_reaches_both_values_of_the_field_columns_same_so_far():
    """The stream the kernels are compared on ("field", "all", "mixed" with "log") goes through fields that
    repeat the line above and fields that leave it, so both values of "same so far" are checked there."""
    cfg = OnlineConfig(**ROOMY, **KINDS["field"])
    ref = reference_for(cfg)
    seen = set()
    for symbol in STREAMS["log"]():
        _, pos, _, same = ref.context(0)
        seen.add((pos > 0, same))
        ref.observe(int(symbol))
    assert seen == {(False, True), (True, True), (True, False)}


def test_a_full_chain_votes_as_the_interpolated_estimate():
    """With every weight at 1 the chain's votes add up to log p_K(y) - log p_0(y) + sum_k log((n_k+u_k)/u_k)."""
    cfg = OnlineConfig(**ROOMY, context_orders=(1, 2, 4), context_entries=8, count_limit=1000)
    x = log_text(1500, seed=4)
    ref = reference_for(cfg)
    for symbol in x[:-1]:
        ref.observe(int(symbol))
    votes = ref.activities()
    known = [ref.tables[s][ref.context(s)] for s in range(3) if ref.found(s)]
    assert len(known) == 3  # every order knows the last context
    lam = sum(math.log((sum(c for _, c in t if c) + sum(1 for _, c in t if c)) / sum(1 for _, c in t if c))
              for t in known)
    # p_K by the explicit Witten-Bell recursion over the whole alphabet
    p = np.array([ref.order0_probability(y) for y in range(cfg.alphabet_cap)])
    p0 = p.copy()
    for t in known:
        n_y = np.zeros(cfg.alphabet_cap)
        for y, c in t:
            n_y[y] += c
        n, u = n_y.sum(), np.count_nonzero(n_y)
        p = (n_y + u * p) / (n + u)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    for y in range(cfg.alphabet_cap):
        total = sum(v.get(y, 0.0) for v in votes)
        assert total == pytest.approx(math.log(p[y]) - math.log(p0[y]) + lam, rel=1e-12, abs=1e-12)


def test_learn_counts_what_activities_and_observe_count():
    """``learn`` runs the sources as driven here, with the settings of the configuration."""
    cfg = OnlineConfig(units=3, degree=2, alphabet_cap=128, window=7, context_orders=(1, 2, 4), column_context=True,
                       word_context=True, match_min=5, context_bits=12, history_bits=11, match_bits=11,
                       context_entries=4, count_limit=20)
    x = log_text(2500, seed=3)
    driven, _, _ = compare_with_reference(cfg, x, [], check_all=False)
    learner = OnlineLearner(cfg)
    learner.learn(x)
    for name in ("ctx_tag", "ctx_sym", "ctx_cnt", "ctx_slot", "ctx_found", "ctx_want", "ctx_int", "order0", "hist",
                 "match_table", "match_stats", "code_of", "symbol_of"):
        assert np.array_equal(getattr(learner.state, name), getattr(driven, name)), name
    assert np.count_nonzero(driven.ctx_tag) > 100 and driven.match_stats[1].sum() > 0


# -- 2. bounded memory ---------------------------------------------------------------------------


def check_context_invariants(cfg, st):
    """Everything a context table or pointer holds is in range and consistent."""
    T, H = 1 << cfg.context_bits, 1 << cfg.history_bits
    t = int(st.ctx_int[POS])
    assert st.ctx_cnt.max() < cfg.count_limit  # a count reaching the limit is halved at once
    hits, tries = st.match_stats
    assert np.all(tries < cfg.count_limit) and np.all(0 <= hits) and np.all(hits <= tries)
    used = st.ctx_tag != 0
    assert np.all(st.ctx_tag[used] & 1 == 1)  # check words are odd: 0 means empty
    assert not st.ctx_cnt[~used].any() and not st.ctx_sym[~used].any()
    assert np.all((st.ctx_cnt[used] > 0).any(axis=-1))  # a slot is only taken to count a symbol
    counted = st.ctx_cnt > 0
    assert np.all(st.ctx_sym[counted] < cfg.alphabet_cap) and np.all(st.code_of[st.ctx_sym[counted]] > 0)
    for s, slot in itertools.product(range(st.ctx_cnt.shape[0]), np.flatnonzero(used.any(axis=0))[:200]):
        symbols = st.ctx_sym[s, slot][st.ctx_cnt[s, slot] > 0]
        assert len(set(symbols.tolist())) == len(symbols)  # a symbol holds one entry per slot
    assert np.all((0 <= st.ctx_slot) & (st.ctx_slot < T)) and set(st.ctx_found.tolist()) <= {0, 1}
    assert np.all(st.hist < cfg.alphabet_cap) and np.all(st.code_of[st.hist[:min(t, H)]] > 0)
    assert np.all((0 <= st.match_table) & (st.match_table <= t + 1))
    assert t == int(st.ctx_int[ORDER0_TOTAL]) == int(st.order0.sum()) == int(st.counts[SYMBOLS])
    length, ptr = int(st.ctx_int[MATCH_LEN]), int(st.ctx_int[MATCH_PTR])
    assert length >= 0 and (length == 0 or (0 <= ptr < t and t - ptr < H))
    assert 0 <= int(st.ctx_int[PREV_LINE_START]) <= int(st.ctx_int[LINE_START]) <= t
    assert 0 <= int(st.ctx_int[PREV_LINE_LEN]) <= H and int(st.ctx_int[FIELD]) >= 0
    # work arrays are clean between symbols
    assert int(st.ctx_int[NNZ]) == 0 and not st.feat.any() and not st.acc.any() and not st.acc_mark.any()
    assert np.all(np.isfinite(st.ctx_w)) and np.all(np.isfinite(st.ctx_P))
    assert np.array_equal(st.ctx_P, np.swapaxes(st.ctx_P, 1, 2))


def test_memory_is_bounded_under_a_long_random_stream():
    cfg = OnlineConfig(units=0, alphabet_cap=256, context_orders=(1, 2, 3), column_context=True, word_context=True,
                       match_min=3, context_bits=10, history_bits=10, match_bits=10, context_entries=4, count_limit=9)
    rng = np.random.default_rng(11)
    # every byte value first, then a small alphabet with lines and fields: repeats, halvings, matches
    x = np.concatenate([rng.integers(0, 256, 80_000), rng.choice(np.frombuffer(b"abc1 \n", np.uint8), 80_000)])
    learner = OnlineLearner(cfg)
    nbytes, size = learner.state_bytes, None
    for chunk in np.array_split(x.astype(np.uint8), 8):
        bits = learner.learn(chunk)
        assert np.all(np.isfinite(bits))
        check_context_invariants(cfg, learner.state)
        assert learner.state_bytes == nbytes
        size = size or len(learner.to_bytes())  # once the history ring is full, a snapshot's size stays
    assert len(learner.to_bytes()) == size
    st = learner.state
    assert int(st.ctx_int[POS]) == len(x) and np.all(st.ctx_tag[1:] != 0)  # orders 2, 3, column and word: full
    assert st.match_stats[1].sum() > 0
    # the learner still learns the small alphabet's entropy (log2 6 = 2.58 bits) or so
    assert learner.learn(rng.choice(np.frombuffer(b"abc1 \n", np.uint8), 2000)).mean() < 3.0


# -- 3. windows, weights and snapshots ----------------------------------------------------------------

SNAP = dict(degree=2, alphabet_cap=128, window=5, context_orders=(1, 2, 4), column_context=True, word_context=True,
            match_min=4, context_bits=11, history_bits=10, match_bits=10, context_entries=4, count_limit=30)
UNITS = [4, 0]


@pytest.mark.parametrize("units", UNITS)
def test_context_learner_runs_its_windows_and_learns_its_context_weights(units):
    """(Determinism, exact snapshots and read-only prediction with context units: tests/test_contract.py.)"""
    cfg = OnlineConfig(units=units, **SNAP)
    x = log_text(3000, seed=5)
    learner = OnlineLearner(cfg)
    bits = learner.learn(x)
    assert np.all(np.isfinite(bits)) and bits[-500:].mean() < bits[:500].mean()
    assert learner.stats["windows"] == ((len(x) - 1) // cfg.window if units else 0)
    assert learner.state.ctx_updates.sum() > 0  # the context weights learned


def _with_crc(payload: bytes) -> bytes:
    return payload + struct.pack("<I", zlib.crc32(payload))


def _array_offset(data: bytes, name: str) -> int:
    """Where array ``name`` starts in a snapshot (``state.to_bytes``'s layout)."""
    header = snapshot._HEADER
    _, _, hlen = header.unpack_from(data)
    offset = header.size + hlen
    for array, dtype, shape in json.loads(data[header.size:header.size + hlen])["arrays"]:
        if array == name:
            return offset
        offset += int(np.prod(shape)) * np.dtype(dtype).itemsize
    raise KeyError(name)


def test_damaged_context_snapshot_is_rejected():
    cfg = OnlineConfig(units=2, **SNAP)
    learner = OnlineLearner(cfg)
    learner.learn(log_text(600, seed=9))
    data = learner.to_bytes()
    OnlineLearner.from_bytes(data)
    # a flipped bit inside each context table, or in the stream's position
    for name, index in (("ctx_cnt", 777), ("ctx_tag", 5), ("hist", 100), ("match_table", 3), ("ctx_int", 0)):
        damaged = bytearray(data)
        damaged[_array_offset(data, name) + index] ^= 0x10
        # (a damaged position no longer matches the history's length, which is read before the checksum)
        with pytest.raises(ValueError, match="checksum|damaged"):
            OnlineLearner.from_bytes(bytes(damaged))
    with pytest.raises(ValueError, match="truncated"):
        OnlineLearner.from_bytes(_with_crc(data[:-4][:-3000]))
    with pytest.raises(ValueError, match="truncated|checksum"):
        OnlineLearner.from_bytes(data[:-3000])
    # context arrays of the wrong shape or type, under a valid checksum
    for name, arr in (("ctx_cnt", np.zeros((2, 3, 4), dtype=np.uint16)), ("ctx_sym", learner.state.ctx_sym.astype(np.int64)),
                      ("hist", np.zeros(7, dtype=np.uint16)), ("ctx_P", np.zeros((3, 3)))):
        st = learner.state._replace(**{name: arr})
        with pytest.raises(ValueError, match=f"'{name}'"):
            OnlineLearner.from_bytes(snapshot.to_bytes(cfg, st))
    # a snapshot whose configuration has other context units
    other = OnlineConfig(units=2, **{**SNAP, "context_orders": (1, 2)})
    with pytest.raises(ValueError, match="expected"):
        OnlineLearner.from_bytes(snapshot.to_bytes(other, learner.state))


# -- 4. silent context units change nothing ---------------------------------------------------------


def _warm_network_state(cfg, rng, width):
    """A state whose network arrays hold arbitrary values, as after some learning."""
    st = new_state(cfg)
    st.counts[ACTIVE] = width - 1
    st.w[:, :width] = rng.normal(size=(cfg.units + 1, width))
    st.h0[:, :width] = rng.normal(size=(cfg.units + 1, width))
    st.hd[:, :width] = rng.uniform(1.0, 3.0, size=(cfg.units + 1, width))
    st.reals[ETA_W] = 0.8
    st.counts[SYMBOLS] = 57
    return st


@pytest.mark.parametrize("first", [0, 1])
def test_writing_update_with_silent_context_units_is_the_plain_one(first):
    """The network's step uses the error the context weights leave; with all-zero activities that is the error.

    Both states are the same network; the second also has context units whose
    listed activities are all exactly zero (as a match vote is when its length
    bucket holds as many hits as misses), so its context blocks do take their
    step -- the prior pulls their weights back to the centre -- but the
    network's w, h0, hd come out bit for bit as without context units.
    """
    plain_cfg = OnlineConfig(units=6, degree=2, alphabet_cap=16, window=4)
    ctx_cfg = OnlineConfig(units=6, degree=2, alphabet_cap=16, window=4, context_orders=(1, 2), word_context=True,
                           match_min=3, context_bits=10, history_bits=10, match_bits=10)
    width = 9
    plain = _warm_network_state(plain_cfg, np.random.default_rng(1), width)
    ctx = _warm_network_state(ctx_cfg, np.random.default_rng(1), width)
    rng = np.random.default_rng(2)
    S = len(ctx_cfg.sources)
    ctx.ctx_w[:, :width] = rng.normal(size=(S, width))  # away from the prior's centre
    listed = [(0, 3), (1, 3), (3, 5), (2, 7), (0, 1)]
    for q, (s, code) in enumerate(listed):
        ctx.feat_nz[q] = (s, code)
    ctx.ctx_int[NNZ] = len(listed)
    a_t = np.concatenate([[1.0], rng.uniform(-1, 1, plain_cfg.units)])
    logits = rng.normal(size=width)
    pi_t = np.zeros(plain_cfg.alphabet_cap + 1)
    pi_t[first:width] = np.exp(logits[first:]) / np.exp(logits[first:]).sum()
    w_before = ctx.ctx_w.copy()
    for st, cfg in ((plain, plain_cfg), (ctx, ctx_cfg)):
        k = int(st.counts[WINDOW_POS])
        st.a[k], st.pi[k] = a_t, pi_t
        writing_step(st, cfg.hyper(), cfg.flags(), k, 3, first, width)
    for name in ("w", "h0", "hd"):
        assert np.array_equal(getattr(plain, name), getattr(ctx, name)), name
    # the context blocks of the listed codes did step (towards the prior's centre), the others did not
    moved = np.flatnonzero((ctx.ctx_w != w_before).any(axis=0))
    assert moved.tolist() == [1, 3, 5, 7]
    assert np.array_equal(np.flatnonzero(ctx.ctx_updates), moved)
    assert np.all(np.abs(ctx.ctx_w - ctx_cfg.context_weight)[:, moved] <= np.abs(w_before - ctx_cfg.context_weight)[:, moved])


@pytest.mark.parametrize("case", ["match-never-fires", "contexts-never-recur"])
def test_learner_with_silent_context_units_equals_the_plain_learner(case):
    """Context units that never vote leave every prediction and every network weight bit-identical."""
    common = dict(units=6, degree=3, alphabet_cap=256, window=8, context_bits=10, history_bits=10, match_bits=12)
    rng = np.random.default_rng(12)
    if case == "match-never-fires":  # random bytes: no 8 symbols ever repeat
        extra, x = dict(match_min=8), rng.integers(0, 256, 3000)
    else:  # every symbol once: no context of order >= 1 is ever seen twice, no 3 symbols repeat
        extra, x = dict(context_orders=(1, 2, 3), match_min=3), rng.permutation(256)
    plain, ctx = OnlineLearner(OnlineConfig(**common)), OnlineLearner(OnlineConfig(**common, **extra))
    assert np.array_equal(plain.learn(x), ctx.learn(x))
    for name in ("w", "h0", "hd", "tau", "metric", "V", "a", "pi", "reals", "counts"):
        assert np.array_equal(getattr(plain.state, name), getattr(ctx.state, name)), name
    assert not ctx.state.ctx_updates.any() and not ctx.state.match_stats.any() and not ctx.state.offset.any()
    assert np.all(ctx.state.ctx_w == ctx.config.context_weight)


# -- 5. the context weights' Newton step against a dense metric -------------------------------------


def _random_votes(st, rng, listed, width):
    """Activities for the (source, code) pairs ``listed``, as ``activities`` leaves them; random curvatures and
    errors."""
    for q, (s, y) in enumerate(listed):
        st.feat[s, y] = rng.normal(0.0, 2.0)
        st.feat_nz[q] = (s, y)
    st.ctx_int[NNZ] = len(listed)
    return rng.uniform(0.01, 0.25, width), rng.uniform(-1.0, 1.0, width)


@pytest.mark.parametrize("floor", [0.0, 0.1], ids=["every-voted-symbol", "context_step_floor"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_context_writing_update_matches_a_dense_inverse(seed, floor):
    """Every voted symbol's block against a dense inverse; with ``context_step_floor``, a voted symbol other than
    the target whose curvature is below it is left untouched, and the target steps however small its curvature."""
    cfg = OnlineConfig(units=2, degree=1, alphabet_cap=12, context_orders=(1, 2), word_context=True, match_min=3,
                       context_bits=10, history_bits=10, match_bits=10, writing_discount=1 / 64,
                       context_prior=3.0, context_weight=0.25, context_step_floor=floor)
    hyper = cfg.hyper()
    S, width = len(cfg.sources), 10
    rng = np.random.default_rng(seed)
    st = new_state(cfg)
    st.counts[ACTIVE] = width - 1
    st.counts[SYMBOLS] = 1234
    st.reals[ETA_W] = 0.7
    for y in range(width):
        A = rng.normal(size=(S, S))
        st.ctx_P[y] = np.linalg.inv(A @ A.T + 0.5 * np.eye(S))
        st.ctx_P[y] = 0.5 * (st.ctx_P[y] + st.ctx_P[y].T)
    st.ctx_w[:, :width] = rng.normal(0.3, 0.5, size=(S, width))
    st.ctx_updates[:width] = rng.integers(0, 100, width)
    # codes 2, 5, 6 get votes from several sources (listed in any order), code 8 from the match alone
    listed = [(0, 5), (2, 2), (1, 5), (3, 8), (0, 2), (2, 6), (1, 6), (0, 6), (3, 5)]
    curv, err = _random_votes(st, rng, listed, width)
    target = 6
    curv[target], curv[2] = 0.05, 0.05  # below the floor: the target steps, code 2 does not (with the floor)
    before = {name: np.array(getattr(st, name), copy=True) for name in ("ctx_P", "ctx_w", "ctx_updates")}
    err_after, curv_after = err.copy(), curv.copy()
    context_writing_update(view(Mixer, st), int(st.ctx_int[NNZ]), int(st.counts[SYMBOLS]), st.reals[ETA_W], hyper,
                           curv_after, err_after, target)
    voted = sorted({y for _, y in listed})
    stepped = [y for y in voted if y == target or curv[y] >= floor]
    assert (floor == 0.0) == (stepped == voted) and target in stepped
    for y in range(width):
        if y not in stepped:  # untouched
            assert np.array_equal(st.ctx_P[y], before["ctx_P"][y]) and np.array_equal(st.ctx_w[:, y], before["ctx_w"][:, y])
            assert err_after[y] == err[y] and st.ctx_updates[y] == before["ctx_updates"][y]
            continue
        P, step, w, e = naive.context_block_update(
            before["ctx_P"][y], st.feat[:, y], curv[y], err[y], before["ctx_w"][:, y], hyper[H.writing_discount], hyper[H.context_prior],
            hyper[H.context_weight], st.reals[ETA_W], before["ctx_updates"][y])
        np.testing.assert_allclose(st.ctx_P[y], P, rtol=1e-10, atol=1e-10 * np.abs(P).max())
        assert np.array_equal(st.ctx_P[y], st.ctx_P[y].T)
        # the step is P grad with the P after the update
        grad = err[y] * st.feat[:, y] - hyper[H.writing_discount] * hyper[H.context_prior] * (before["ctx_w"][:, y] - hyper[H.context_weight])
        np.testing.assert_allclose((st.ctx_w[:, y] - before["ctx_w"][:, y]) / st.reals[ETA_W], st.ctx_P[y] @ grad,
                                   rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(st.ctx_w[:, y], w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose((st.ctx_w[:, y] - before["ctx_w"][:, y]) / st.reals[ETA_W], step, rtol=1e-9, atol=1e-12)
        assert err_after[y] == pytest.approx(e, rel=1e-10, abs=1e-12)
        assert st.ctx_updates[y] == before["ctx_updates"][y] + 1 and st.ctx_updated[y] == st.counts[SYMBOLS] + 1
    assert np.array_equal(curv_after, curv)


@pytest.mark.parametrize("field,order2", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["selected", "and-field-selected", "and-order2-selected", "and-both"])
@pytest.mark.parametrize("step", SELECTED_STEPS)
@pytest.mark.parametrize("seed", [0, 1])
def test_the_mixers_step_matches_a_dense_reference(seed, step, field, order2):
    cfg = OnlineConfig(units=2, degree=1, alphabet_cap=12, context_orders=(1, 2), word_context=True, match_min=3,
                       context_bits=10, history_bits=10, match_bits=10, selected_discount=1 / 64,
                       selected_weights=True, selected_prior=7.0, selected_step=step, selected_rate=0.6,
                       field_column_context=field, field_selected_weights=field, order2_selected_weights=order2)
    assert cfg.field_selected_weights == field and cfg.order2_selected_weights == order2
    hyper, flags = cfg.hyper(), cfg.flags()
    S, width = len(cfg.sources), 10
    rng = np.random.default_rng(seed)
    st = new_state(cfg)
    st.counts[ACTIVE] = width - 1
    for k in range(S + 1):
        A = rng.normal(size=(S, S))
        P = np.linalg.inv(A @ A.T + 0.5 * np.eye(S))
        st.sel_P[k] = 0.5 * (P + P.T)
    st.sel_w[...] = rng.normal(0.0, 0.5, st.sel_w.shape)
    st.sel_h[...] = rng.uniform(0.5, 20.0, st.sel_h.shape)
    st.sel_updates[...] = rng.integers(0, 100, S + 1)
    st.fsel_w[...] = rng.normal(0.0, 0.5, st.fsel_w.shape)
    st.fsel_h[...] = rng.uniform(0.5, 20.0, st.fsel_h.shape)
    chosen = [21] * field + [32 * field + 3001] * order2  # a row of each set
    st.fsel_row[...] = chosen
    k = 2
    rows = [int(r) for r in rng.integers(0, st.sel_w.shape[0], S)]
    st.sel_row[:S] = rows
    st.sel_row[S] = k
    match = S - 1
    listed = [(0, 5), (2, 2), (1, 5), (match, 8), (0, 2), (2, 6), (1, 6), (0, 6)]  # the match votes for 8
    curv, err = _random_votes(st, rng, listed, width)
    before = {name: np.array(getattr(st, name), copy=True)
              for name in ("sel_P", "sel_h", "sel_w", "sel_updates", "fsel_w", "fsel_h")}
    active = (rows, list(range(S)))
    out = naive.selected_weights_step(
        step, before["sel_P"][k], before["sel_h"][active], before["sel_w"][active], st.feat[:, :width], curv, err,
        cfg.selected_discount, cfg.selected_prior, cfg.selected_rate, int(before["sel_updates"][k]),
        sets=[(before["fsel_h"][q], before["fsel_w"][q]) for q in chosen])
    P, h, u_after, err_want = out[:4]
    err_after = err.copy()
    selected_writing_update(view(Mixer, st), int(st.ctx_int[NNZ]), hyper, flags, curv, err_after)
    np.testing.assert_allclose(st.sel_P[k], P, rtol=1e-10, atol=1e-10 * np.abs(P).max())
    assert np.array_equal(st.sel_P[k], st.sel_P[k].T)
    np.testing.assert_allclose(st.sel_h[active], h, rtol=1e-12)
    np.testing.assert_allclose(st.sel_w[active], u_after, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(err_after, err_want, rtol=1e-10, atol=1e-12)
    # nothing else moved: the other blocks and counters, the weights and terms of the rows not selected
    others = [j for j in range(S + 1) if j != k]
    assert np.array_equal(st.sel_P[others], before["sel_P"][others])
    assert int(st.sel_updates[k]) == before["sel_updates"][k] + (step == "block")
    assert np.array_equal(st.sel_updates[others], before["sel_updates"][others])
    moved = np.zeros(st.sel_w.shape, dtype=bool)
    moved[active] = True
    assert np.array_equal(st.sel_w[~moved], before["sel_w"][~moved])
    assert np.array_equal(st.sel_h[~moved], before["sel_h"][~moved])
    for j, q in enumerate(chosen):  # each set's row moved as the reference says
        h2, v = out[4 + 2 * j:6 + 2 * j]
        np.testing.assert_allclose(st.fsel_h[q], h2, rtol=1e-12)
        np.testing.assert_allclose(st.fsel_w[q], v, rtol=1e-10, atol=1e-12)
        assert not np.allclose(st.fsel_w[q], before["fsel_w"][q])
    others = [r for r in range(st.fsel_w.shape[0]) if r not in chosen]  # and no other
    assert np.array_equal(st.fsel_w[others], before["fsel_w"][others])
    assert np.array_equal(st.fsel_h[others], before["fsel_h"][others])


def test_the_mixer_learns_and_restores_bit_for_bit():
    """A mixed learner moves its selected weights where the votes were, and a snapshot continues it exactly."""
    cfg = OnlineConfig(units=2, degree=1, context_orders=(1, 2, 4), column_context=True, word_context=True,
                       match_min=4, context_bits=12, history_bits=12, match_bits=12, selected_weights=True)
    x = log_text(600, seed=11)
    learner = OnlineLearner(cfg)
    learner.learn(x[:len(x) // 2])
    restored = OnlineLearner.from_bytes(learner.to_bytes())
    assert np.array_equal(learner.learn(x[len(x) // 2:]), restored.learn(x[len(x) // 2:]))
    for name in ("sel_w", "sel_h", "sel_P", "sel_updates"):
        assert np.array_equal(getattr(learner.state, name), getattr(restored.state, name)), name
    S = len(cfg.sources)
    assert np.count_nonzero(learner.state.sel_h > cfg.selected_prior * (1 + 1e-9)) > 4 * S  # many rows met, not one
    assert np.count_nonzero(np.abs(learner.state.sel_w) > 1e-3) > 4 * S  # and learned
    # a snapshot whose mixer rows or metric could send a kernel out of bounds, or divide by zero, is refused
    for name, where, value in [("sel_row", 0, learner.state.sel_w.shape[0]), ("sel_row", S, S + 1),
                               ("sel_row", 1, -1), ("sel_h", (3, 2), 0.0), ("sel_updates", 0, -1)]:
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        getattr(damaged.state, name)[where] = value
        with pytest.raises(ValueError, match="selected weights"):
            OnlineLearner.from_bytes(damaged.to_bytes())


def test_the_field_selected_weights_learn_restore_and_refuse_damage():
    """Many of their rows are met and learned on log lines; a snapshot continues them exactly; a row or metric
    term out of range is refused."""
    cfg = OnlineConfig(units=2, degree=1, context_orders=(1, 2, 4), column_context=True, field_column_context=True,
                       word_context=True, match_min=4, context_bits=12, history_bits=12, match_bits=12,
                       selected_weights=True, field_selected_weights=True)
    x = log_text(900, seed=12)
    learner = OnlineLearner(cfg)
    learner.learn(x[:len(x) // 2])
    restored = OnlineLearner.from_bytes(learner.to_bytes())
    assert np.array_equal(learner.learn(x[len(x) // 2:]), restored.learn(x[len(x) // 2:]))
    for name in ("fsel_w", "fsel_h", "fsel_row"):
        assert np.array_equal(getattr(learner.state, name), getattr(restored.state, name)), name
    met = np.flatnonzero((learner.state.fsel_h > cfg.selected_prior * (1 + 1e-9)).any(axis=1))
    assert len(met) >= 12 and {r // 16 for r in met} == {0, 1}  # rows of both kinds of field were met
    for name, where, value in [("fsel_row", 0, 32), ("fsel_row", 0, -1), ("fsel_h", (3, 1), 0.0),
                               ("fsel_w", (2, 0), np.inf)]:
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        getattr(damaged.state, name)[where] = value
        with pytest.raises(ValueError, match="order-2-selected weights|non-finite"):
            OnlineLearner.from_bytes(damaged.to_bytes())


def test_the_field_selected_weights_read_as_off_without_the_mixer_or_the_field_column():
    for kwargs in (dict(selected_weights=False), dict(field_column_context=False)):
        cfg = OnlineConfig.bytes_default(**kwargs, context_bits=10, history_bits=10, match_bits=10)
        assert cfg.field_selected_weights is False
        # the order-2 set's rows and the unit set's alone
        assert new_state(cfg).fsel_w.shape[0] == 4096 * cfg.order2_selected_weights + 16 * cfg.unit_selected_weights
    assert OnlineConfig.bytes_default().field_selected_weights is True


def test_the_order2_selected_weights_learn_restore_and_refuse_damage():
    """Beside the field set, the rows of the pairs of last symbols met on log lines learn; a snapshot continues
    them exactly; a row out of the stacked sets' range is refused."""
    cfg = OnlineConfig(units=2, degree=1, context_orders=(1, 2, 4), column_context=True, field_column_context=True,
                       word_context=True, match_min=4, context_bits=12, history_bits=12, match_bits=12,
                       selected_weights=True, field_selected_weights=True, order2_selected_weights=True)
    x = log_text(900, seed=13)
    learner = OnlineLearner(cfg)
    assert learner.state.fsel_w.shape[0] == 32 + 4096 and learner.state.fsel_row.shape == (2,)
    learner.learn(x[:len(x) // 2])
    restored = OnlineLearner.from_bytes(learner.to_bytes())
    assert np.array_equal(learner.learn(x[len(x) // 2:]), restored.learn(x[len(x) // 2:]))
    for name in ("fsel_w", "fsel_h", "fsel_row"):
        assert np.array_equal(getattr(learner.state, name), getattr(restored.state, name)), name
    met = np.flatnonzero((learner.state.fsel_h[32:] > cfg.selected_prior * (1 + 1e-9)).any(axis=1))
    pairs = {(a, b) for a, b in zip(x[1:].tolist(), x[:-1].tolist())}  # (last, the one before) in the stream
    assert len(met) >= 0.5 * len(pairs)  # most pairs' rows were met (a few share a row)
    assert set(met) <= {(257 * a + b) % 4093 for a, b in pairs} | {(257 * x[0] + 256) % 4093, 256 * 258 % 4093}
    for name, where, value in [("fsel_row", 1, 32 + 4096), ("fsel_row", 1, -1)]:
        damaged = OnlineLearner.from_bytes(learner.to_bytes())
        getattr(damaged.state, name)[where] = value
        with pytest.raises(ValueError, match="order-2-selected weights"):
            OnlineLearner.from_bytes(damaged.to_bytes())


def test_the_order2_selected_weights_read_as_off_without_the_mixer():
    cfg = OnlineConfig.bytes_default(selected_weights=False, context_bits=10, history_bits=10, match_bits=10)
    assert cfg.order2_selected_weights is False and new_state(cfg).fsel_w.shape[0] == 0
    alone = OnlineConfig.bytes_default(field_column_context=False, context_bits=10, history_bits=10, match_bits=10)
    assert alone.order2_selected_weights is True and new_state(alone).fsel_w.shape[0] == 4096 + 16  # and the units'
    assert OnlineConfig.bytes_default().order2_selected_weights is True


def test_the_unit_selected_weights_read_as_off_without_the_mixer_or_the_units_and_use_eight_at_most():
    small = dict(context_bits=10, history_bits=10, match_bits=10)
    for kwargs in (dict(selected_weights=False), dict(units=0)):
        cfg = OnlineConfig.bytes_default(**kwargs, **small)
        assert cfg.unit_selected_weights is False and cfg.unit_set_units == 0
    default = OnlineConfig.bytes_default(**small)
    assert default.unit_selected_weights is True and default.unit_set_units == 4
    assert new_state(default).fsel_row.shape == (3,)
    many = OnlineConfig.bytes_default(units=12, **small)
    assert many.unit_set_units == 8 and new_state(many).fsel_w.shape[0] == 1024 + 4096 + 256


@pytest.mark.parametrize("activation, centre", [("tanh", 0.0), ("logistic", 0.5)])
def test_the_unit_set_splits_each_units_range_in_the_middle(activation, centre):
    """tanh units are split at 0 and logistic ones (all positive) at 1/2, so each pattern of signs can occur;
    units beyond the eighth are not read."""
    units = 10
    fsel_row = np.zeros(1, dtype=np.int64)
    src = view(Sources, new_state(OnlineConfig(units=units, alphabet_cap=16, context_orders=(1,), context_bits=10,
                                               history_bits=10)))
    rng = np.random.default_rng(4)
    for _ in range(50):
        a_t = np.concatenate([[1.0], centre + rng.uniform(-0.4, 0.4, units)])
        set_rows(src, a_t, fsel_row, 0, 4, 0, 8, unit_centre(ACTIVATIONS.index(activation)))
        assert fsel_row[0] == sum(1 << i for i in range(8) if a_t[i + 1] > centre)


# -- 6. configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,message", [
    (dict(context_orders=(2, 1)), "context_orders"),
    (dict(context_orders=(1, 1)), "context_orders"),
    (dict(context_orders=(1, 2, 2, 3)), "context_orders"),
    (dict(context_orders=(0, 1)), "context_orders"),
    (dict(context_orders=(-1,)), "context_orders"),
    (dict(context_orders=(1, 1025), history_bits=10), "context_orders"),  # longer than the history
    (dict(units=0), "units=0"),
    (dict(units=0, context_bits=12), "units=0"),
    (dict(units=-1, match_min=4), "units"),
    (dict(context_bits=9), "context_bits"),
    (dict(context_bits=27), "context_bits"),
    (dict(history_bits=9), "history_bits"),
    (dict(history_bits=31), "history_bits"),
    (dict(match_bits=9), "match_bits"),
    (dict(match_bits=27), "match_bits"),
    (dict(context_entries=0), "context_entries"),
    (dict(context_entries=65), "context_entries"),
    (dict(count_limit=1), "count_limit"),
    (dict(count_limit=65536), "count_limit"),
    (dict(field_selecting_fields=0), "field_selecting_fields"),
    (dict(field_selecting_fields=65), "field_selecting_fields"),
    (dict(field_selecting_positions=0), "field_selecting_positions"),
    (dict(field_selecting_positions=65), "field_selecting_positions"),
    (dict(match_min=-1), "match_min"),
    (dict(match_min=65), "match_min"),
    (dict(context_prior=0.0), "context_prior"),
    (dict(context_prior=float("inf")), "context_prior"),
    (dict(context_weight=float("nan")), "context_weight"),
])
def test_config_rejects_bad_context_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        OnlineConfig(**kwargs)


def test_config_accepts_context_units_alone():
    for kwargs in (dict(units=0, match_min=4), dict(units=0, context_orders=(3,)), dict(units=0, column_context=True),
                   dict(units=0, word_context=True), dict(units=0, field_column_context=True),
                   dict(units=0, indirect_context=True)):
        cfg = OnlineConfig(**kwargs, context_bits=10, history_bits=10, match_bits=10)
        bits = OnlineLearner(cfg).learn(b"abcabcabc\n" * 30)
        assert np.all(np.isfinite(bits))
    cfg = OnlineConfig(context_orders=[1, 2, 3], context_weight=1, context_prior=2)  # a list; ints for floats
    assert cfg.context_orders == (1, 2, 3) and isinstance(cfg.context_weight, float)
    assert cfg.sources == [(0, 1), (0, 2), (0, 3)]
    default = OnlineConfig.bytes_default()
    assert [k for k, _ in default.sources] == [0] * 7 + [1, FIELD_COLUMN, 2, INDIRECT, NUMBER, MATCH] and default.units == 4
    assert OnlineConfig.bytes_default(units=0, match_min=0, number_context=False).sources[-1] == (INDIRECT, 0)


# -- 7. defects found by these tests, fixed (they were strict xfails): regression tests ---------------


def test_an_order_longer_than_the_history_is_refused_or_honoured():
    """Orders longer than the history (2**history_bits) read recent symbols instead of the ones k steps back."""
    try:
        cfg = OnlineConfig(units=0, alphabet_cap=256, context_orders=(1100,), history_bits=10, context_bits=16)
    except ValueError:
        return  # refused: fine
    rng = np.random.default_rng(0)
    c = rng.integers(0, 256, 1024)
    x = np.concatenate([rng.integers(0, 256, 76), c, [7], rng.integers(0, 256, 76), c, [9]])
    _, _, (first,) = compare_with_reference(cfg, x, [reference_for(cfg)], check_all=False)
    assert first is None, f"first disagreement at position {first} of {len(x)}"


def test_the_column_source_after_a_line_longer_than_the_history():
    """After a line of >= 2**history_bits symbols, the symbol above was read from overwritten history."""
    cfg = OnlineConfig(units=0, alphabet_cap=256, column_context=True, history_bits=10, context_bits=16,
                       context_entries=4)
    rng = np.random.default_rng(0)
    lines = [rng.choice(np.frombuffer(b"ab", np.uint8), n) for n in (1100, 200, 200, 200)]
    x = np.concatenate([np.append(line, 10) for line in lines]).astype(np.int64)
    exact = reference_for(cfg)  # the true symbol above
    forgetful = reference_for(cfg, above_limit=(1 << cfg.history_bits) - 1)  # nothing above a line the history lost
    _, _, first = compare_with_reference(cfg, x, [exact, forgetful], check_all=False)
    assert None in first, f"first disagreements: with the true symbol above {first[0]}, with nothing above {first[1]}"


def match_slot(symbols, bits):
    """``observe``'s match-table slot for the last symbols ``symbols`` (the kernel's own hash)."""
    h = np.uint64(0)
    for v in reversed(symbols):
        h = np.uint64(absorb(h, int(v)))
    return int(np.uint64(finalize(h)) >> np.uint64(64 - bits))


def false_repeat_at_the_history_boundary():
    """K1 = (a, b, c, k) hashing to the slot of (k, k, k, k), then z, then filler, then j k k k k, H - 1 after K1.

    (k, k, k, k) never occurred: the lookup finds K1's position (a hash collision), and verifying it
    compares positions H + 1 and more back -- overwritten by the current run of k's -- with the run itself.
    """
    bits, H, m = 10, 1 << 10, 4
    k, j, z = 200, 201, 202
    target = match_slot([k] * m, bits)
    k1 = next(list(abc) + [k] for abc in itertools.product(range(60), repeat=3) if match_slot(list(abc) + [k], bits) == target)
    rng = np.random.default_rng(0)
    while True:  # filler whose contexts leave K1's slot alone
        prefix = list(rng.integers(60, 190, 20))
        filler = list(rng.integers(60, 190, H - 7))
        x = prefix + k1 + [z] + filler + [j, k, k, k, k]
        if all(match_slot(x[i - m:i], bits) != target for i in range(len(prefix) + 5, len(x))):
            return OnlineConfig(units=0, alphabet_cap=256, match_min=m, history_bits=10, match_bits=bits), np.array(x)


@pytest.mark.parametrize("case", ["false-repeat", "overstated-length"])
def test_the_match_model_follows_only_true_repeats(case):
    """Match candidates near the end of the ring were verified against positions it had overwritten."""
    if case == "false-repeat":
        cfg, x = false_repeat_at_the_history_boundary()
    else:
        cfg = OnlineConfig(units=0, alphabet_cap=8, match_min=12, history_bits=10, match_bits=10, context_bits=10)
        x = np.random.default_rng(11).integers(0, 2, 3300)
    learner = OnlineLearner(cfg)
    for n in range(1, len(x) + 1):
        learner.learn(x[n - 1:n])
        length, ptr = int(learner.state.ctx_int[MATCH_LEN]), int(learner.state.ctx_int[MATCH_PTR])
        true = 0
        while true < min(length, 40) and true < ptr and x[ptr - 1 - true] == x[n - 1 - true]:
            true += 1
        assert true >= min(length, 40), f"after {n} symbols: match of length {length} at {ptr}, true repeat {true}"


def test_the_last_symbol_of_a_full_alphabet_is_not_the_time_before_the_stream():
    """With alphabet_cap=65536, symbol 65535 hashed as context.EMPTY ('before the stream', 'nothing above')."""
    cfg = OnlineConfig(units=0, alphabet_cap=65536, context_orders=(1, 2), column_context=True, context_bits=12,
                       history_bits=10)
    x = np.array([1, 65535, 1, 7, 65535, 3, 10, 65535, 2, 10, 4, 4], dtype=np.int64)
    _, _, (first,) = compare_with_reference(cfg, x, [reference_for(cfg)], check_all=False)
    assert first is None, f"first disagreement at position {first}"


@pytest.mark.parametrize("corrupt", ["counted-symbol", "history-symbol", "source-kind", "source-order"])
def test_from_bytes_validates_the_context_units(corrupt):
    """from_bytes restored context tables, history and sources the kernels cannot use (out of bounds, endless)."""
    cfg = OnlineConfig(units=2, **SNAP)
    learner = OnlineLearner(cfg)
    learner.learn(log_text(600, seed=9))
    st = OnlineState(*(np.array(a, copy=True) for a in learner.state))
    if corrupt == "counted-symbol":
        st.ctx_sym[st.ctx_cnt > 0] = 60000
    elif corrupt == "history-symbol":
        st.hist[5] = 200  # a byte, outside the alphabet of 128
    elif corrupt == "source-kind":
        st.ctx_kind[0, 0] = MATCH
    else:
        st.ctx_kind[2, 1] = 10**12
    with pytest.raises(ValueError, match="inconsistent"):
        OnlineLearner.from_bytes(snapshot.to_bytes(cfg, st))
