"""Tables that grow (``core/online/growth.py``): the kernels against ``naive.GrowingTable``, the match table's
doubling against a direct computation, and a learner whose tables grow as it learns: memory that follows the
stream, and snapshots on either side of a doubling that continue bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from seqd.core.jit import kernel
from seqd.core.online import OnlineConfig, OnlineLearner
from seqd.core.online.sources import POS
from seqd.core.kit.growth import BITS, GROWTH_START, TAKEN, split_match_table
from seqd.core.online.growth import WAYS, find_slot, split_context_table

ENTRIES = 3


@kernel
def _locate(tag, cnt, s, key, bits, out):
    slot, found, check = find_slot(tag, cnt, s, np.uint64(key), bits)
    out[0], out[1], out[2] = slot, found, check


def locate(tag, cnt, s, key, bits):
    out = np.zeros(3, np.int64)
    _locate(tag, cnt, s, key, bits, out)
    return int(out[0]), bool(out[1]), int(out[2])


def test_finding_counting_and_doubling_match_the_reference():
    """A stream of contexts (some often, most rarely) through the kernel's table and the reference's: the same
    slot, the same verdict and the same tag for each, the same arrays after each doubling, full buckets giving
    up their least counted context, and every context held before a doubling still found after it."""
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 2 ** 62, 3000, dtype=np.int64)
    source, most = 1, 14
    tag = np.zeros((2, 1 << most), np.uint32)
    sym = np.zeros((2, 1 << most, ENTRIES), np.uint16)
    cnt = np.zeros((2, 1 << most, ENTRIES), np.uint16)
    ref = naive.GrowingTable(source, GROWTH_START, WAYS)
    bits = GROWTH_START
    replaced = 0
    for n in range(6000):
        key = int(keys[min(int(rng.zipf(1.3)), len(keys)) - 1])  # a few contexts often, many rarely
        got = locate(tag, cnt, source, key, bits)
        assert got == ref.locate(key), n
        slot, found, check = got
        if not found:
            replaced += tag[source, slot] != 0
            tag[source, slot] = check
            cnt[source, slot] = 0
        cnt[source, slot, 0] += 1
        ref.count(key, cnt[source, slot].tolist())
        if np.count_nonzero(tag[source]) * 4 > 1 << bits and bits < most:
            held = [k for k in set(keys.tolist()) if locate(tag, cnt, source, k, bits)[1]]
            split_context_table(tag, sym, cnt, source, bits)
            ref.double()
            bits += 1
            tags, counts = ref.arrays(1 << bits, ENTRIES)
            assert np.array_equal(tag[source, :1 << bits], tags) and np.array_equal(cnt[source, :1 << bits], counts)
            assert all(locate(tag, cnt, source, k, bits)[1] for k in held)
    assert bits > GROWTH_START + 1 and replaced > 0  # it doubled, and full buckets gave contexts up
    assert not tag[0].any() and not cnt[0].any()  # another source's table is left alone


def test_the_match_table_doubles_and_drops_only_what_has_left_the_history():
    """Every position a match table holds moves to the slot its context hashes to in the larger table, as
    computed here from the history; a position whose context the ring no longer holds is dropped."""
    rng = np.random.default_rng(3)
    H, match_min, t = 1 << 10, 4, 1500  # the ring has wrapped: positions before t - H are gone
    stream = rng.integers(0, 6, t)
    hist = np.zeros(H, np.uint8)
    for p, symbol in enumerate(stream):
        hist[p % H] = symbol
    bits = 10
    table = np.zeros(1 << 12, np.int64)
    for p in range(match_min, t + 1):  # what observe writes: the position after each context, + 1
        table[_direct_slot(stream, p, match_min, bits)] = p + 1
    before = {int(v) - 1 for v in table[table != 0]}
    dropped = split_match_table(table, hist, t, match_min, bits)
    kept = {p for p in before if p - match_min >= t - H}
    assert dropped == len(before - kept) > 0
    assert {int(v) - 1 for v in table[table != 0]} == kept
    for p in kept:
        assert table[_direct_slot(stream, p, match_min, bits + 1)] == p + 1


def _direct_slot(stream, p, match_min, bits):
    """The slot of the context of ``match_min`` symbols before ``p``, hashed from the stream itself."""
    h = 0
    for back in range(1, match_min + 1):
        h = naive.fold(h, int(stream[p - back]))
    return naive.splitmix_finalize(h) >> (64 - bits)


GROWING = OnlineConfig(units=2, degree=1, alphabet_cap=256, window=5, context_orders=(1, 2, 4, 8),
                       column_context=True, word_context=True, match_min=4, selected_weights=True,
                       context_bits=16, history_bits=12, match_bits=14, table_growth=True)


def _log(n: int) -> np.ndarray:
    rng = np.random.default_rng(5)
    lines = b"".join(f"{i:06d} node{rng.integers(20)} GET /item/{rng.integers(3000)} {rng.integers(999)}\n".encode()
                     for i in range(n // 30 + 1))
    return np.frombuffer(lines[:n], np.uint8).astype(np.int64)


def test_tables_grow_with_the_stream_and_snapshots_around_a_doubling_continue_exactly():
    x = _log(12_000)
    learner = OnlineLearner(GROWING)
    first = learner.resident_bytes
    sizes, doublings = [], []
    for t in range(len(x)):
        before = learner.state.grown[:, BITS].copy()
        learner.learn(x[t:t + 1])
        if not np.array_equal(before, learner.state.grown[:, BITS]):
            doublings.append(t)
        sizes.append(learner.resident_bytes)
    st = learner.state
    assert len(doublings) >= 5 and st.grown[:, BITS].max() > GROWTH_START + 2
    assert sizes == sorted(sizes) and sizes[-1] > first and learner.resident_bytes < learner.state_bytes
    for s in range(st.ctx_tag.shape[0]):  # each table counts what it holds, and holds nothing past its size
        size = 1 << int(st.grown[s, BITS])
        assert np.count_nonzero(st.ctx_tag[s, :size]) == st.grown[s, TAKEN] and not st.ctx_tag[s, size:].any()
    assert np.count_nonzero(st.match_table) == st.grown[-1, TAKEN]
    whole = OnlineLearner(GROWING).learn(x)
    for t in (doublings[2], doublings[2] + 1, doublings[-1], doublings[-1] + 1):
        head = OnlineLearner(GROWING)
        bits = list(head.learn(x[:t]))
        restored = OnlineLearner.from_bytes(head.to_bytes())
        bits += list(restored.learn(x[t:]))
        assert np.array_equal(bits, whole), t


def test_a_snapshot_of_a_growing_learner_holds_its_tables_as_far_as_they_have_grown():
    learner = OnlineLearner(GROWING)
    learner.learn(_log(3000))
    small = len(learner.to_bytes())
    learner.learn(_log(30_000))
    assert small < len(learner.to_bytes()) < learner.state_bytes


@pytest.mark.parametrize("field, value, message", [
    ("bits", 9, "size is out of range"), ("bits", 17, "size is out of range"),
    ("taken", 1, "not as many as it counts"), ("match-taken", 1, "does not hold as many positions")])
def test_a_snapshot_whose_table_sizes_do_not_add_up_is_refused(field, value, message):
    learner = OnlineLearner(GROWING)
    learner.learn(_log(4000))
    st = learner.state
    if field == "bits":
        st.grown[0, BITS] = value
    elif field == "taken":
        st.grown[1, TAKEN] += value
    else:
        st.grown[-1, TAKEN] += value
    with pytest.raises(ValueError, match=message):
        OnlineLearner.from_bytes(learner.to_bytes())


def test_the_position_decides_the_history_a_snapshot_holds():
    """A snapshot holds the min(t, H) symbols of history, oldest first, whatever the ring's rotation."""
    x = _log(9000)
    learner = OnlineLearner(GROWING)
    for n in (10, 4096, 5000, 9000):
        learner = OnlineLearner(GROWING)
        learner.learn(x[:n])
        restored = OnlineLearner.from_bytes(learner.to_bytes())
        H = learner.state.hist.shape[0]
        t = int(learner.state.ctx_int[POS])
        held = [learner.state.hist[p % H] for p in range(max(0, t - H), t)]
        assert [restored.state.hist[p % H] for p in range(max(0, t - H), t)] == held == list(x[max(0, t - H):t])
