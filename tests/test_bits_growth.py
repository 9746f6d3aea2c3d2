"""The bitwise model's tables that grow (``core/bits/growth.py``, ``core/kit/growth.py``): sets of buckets found,
taken and doubled as a plain reference says, keyed tables and blocks doubled without losing what they hold, and
a learner whose tables grow: memory that follows the stream, snapshots on either side of a doubling that
continue bit for bit, and files that decode."""

from __future__ import annotations

import numpy as np
import pytest

import naive
from contract import log_bytes
from seqd.core.bits import BitsConfig, BitsLearner
from seqd.core.bits.config import BUCKET, GROWN_MAP1, GROWN_MAP2, GROWN_PAIRS, HISTORY_AT, SPLIT_AT, TAG_AT
from seqd.core.bits.growth import first_sizes
from seqd.core.bits.mixing import _in_set
from seqd.core.bits.state import first_resident_nbytes
from seqd.core.container import compress, decompress
from seqd.core.kit.growth import (BITS, GROWTH_START, TAKEN, double_blocks, set_of, split_keyed, split_sets,
                                  split_word)
from seqd.core.kit.numbers import number_slot

GROWING = dict(revision=3, table_growth=True, table_ways=4, table_bits=16, history_bits=16, match_bits=14,
               number_bits=14)


def _tag(z: int) -> int:
    return ((z >> 8) & 0xFFFF) | 1


@pytest.mark.parametrize("way_bits", [0, 1, 2])
def test_sets_of_buckets_find_take_and_double_as_the_reference(way_bits):
    """A stream of contexts (some often, most rarely) through a table of sets: each is found where the reference
    (a dict by set) holds it, or takes the bucket the reference says (an empty one, else the one whose first node
    saw least); at each doubling every context held moves to its set in the larger table, its bucket whole."""
    rng = np.random.default_rng(way_bits)
    keys = [int.from_bytes(rng.bytes(8), "little") | 1 for _ in range(4000)]
    ways, most = 1 << way_bits, 15
    table = np.zeros((2, 1 << most, BUCKET), np.uint16)
    bits, taken, replaced = GROWTH_START, 0, 0
    for n in range(8000):
        z = keys[min(int(rng.zipf(1.2)), len(keys)) - 1]
        first = set_of.py_func(np.uint64(z), bits, way_bits)
        assert first == (z >> (64 - bits + way_bits)) << way_bits
        held = {int(table[1, b, TAG_AT]): b for b in range(first, first + ways) if table[1, b, TAG_AT]}
        got = _in_set(table, 1, np.uint64(z), bits, np.uint16(_tag(z)), way_bits)
        if _tag(z) in held:
            assert got == held[_tag(z)], n
            b = got
        else:
            seen = [0 if not table[1, b, TAG_AT] else naive.bucket_seen(table[1, b, HISTORY_AT])
                    for b in range(first, first + ways)]
            b = first + int(np.argmin(seen))  # an empty one first (0), else the least seen, the first of equals
            assert got == -2 - b, n
            taken += table[1, b, TAG_AT] == 0
            replaced += table[1, b, TAG_AT] != 0
            table[1, b] = 0
            table[1, b, TAG_AT], table[1, b, SPLIT_AT] = _tag(z), split_word.py_func(np.uint64(z))
            table[1, b, 3] = z & 0xFFFF  # something of its own, to follow it through the doublings
        table[1, b, HISTORY_AT] = min((int(table[1, b, HISTORY_AT]) >> 8) + 1, 15) << 8  # its first node sees a bit
        if taken * 4 > 1 << bits and bits < most:
            before = {(int(w[TAG_AT]), int(w[SPLIT_AT])): w.copy() for w in table[1, :1 << bits] if w[TAG_AT]}
            split_sets(table, 1, bits, SPLIT_AT, way_bits)
            bits += 1
            after = {(int(w[TAG_AT]), int(w[SPLIT_AT])): w for w in table[1, :1 << bits] if w[TAG_AT]}
            assert after.keys() == before.keys() and all(np.array_equal(after[k], before[k]) for k in after)
            for b in np.flatnonzero(table[1, :1 << bits, TAG_AT]):
                z_low = int(table[1, b, 3])
                match = [k for k in keys if k & 0xFFFF == z_low and _tag(k) == table[1, b, TAG_AT]]
                assert match and set_of.py_func(np.uint64(match[0]), bits, way_bits) == b >> way_bits << way_bits
    assert bits > GROWTH_START + 1 and replaced > 0 and not table[0].any()


def test_a_keyed_table_doubles_each_entry_to_its_key_s_slot():
    """Number tables keep their keys' top 32 bits as the tag: at each doubling an entry moves, whole, to the slot
    its key names in the larger table."""
    rng = np.random.default_rng(5)
    table = np.zeros((2, 1 << 14, 6), np.int64)
    keys = [int.from_bytes(rng.bytes(8), "little") for _ in range(900)]
    for i, key in enumerate(keys):
        slot, tag = number_slot.py_func(np.uint64(key), 10, True)
        table[0, slot] = (tag, i, 0, 0, 0, 0)
    held = {int(row[1]) for row in table[0, :1 << 10] if row[0]}
    for bits in range(10, 13):
        split_keyed(table, 0, bits, 0)
        for i in held:
            slot, tag = number_slot.py_func(np.uint64(keys[i]), bits + 1, True)
            assert table[0, slot, 0] == tag and table[0, slot, 1] == i
        assert np.count_nonzero(table[0, :, 0]) == len(held)
    assert not table[1].any()


def test_blocks_double_into_both_halves():
    rng = np.random.default_rng(2)
    table = np.zeros((3 + 8 * 4, 5), np.float32)
    table[:3 + 2 * 4] = rng.random((3 + 2 * 4, 5))
    before = table.copy()
    double_blocks(table, 3, 4, 1)
    assert np.array_equal(table[:3], before[:3])
    for i in range(2):
        for half in range(2):
            assert np.array_equal(table[3 + (2 * i + half) * 4:3 + (2 * i + half + 1) * 4], before[3 + i * 4:3 + (i + 1) * 4])


def test_a_learner_s_memory_follows_its_stream():
    """A new learner holds a couple of MiB; its tables grow as it learns, each doubling when a quarter full
    (the maps and the fourth mixer's sets by the stream's position), and what it says it holds is what its
    tables in use and history take."""
    config = BitsConfig(**GROWING)
    assert first_resident_nbytes(config) <= 8 << 20
    assert first_resident_nbytes(BitsConfig(revision=3, table_growth=True, history_bits=26, match_bits=22,
                                            table_bits=22)) <= 8 << 20
    learner = BitsLearner(config)
    assert learner.resident_bytes == first_resident_nbytes(config)
    assert np.array_equal(learner.state.grown, first_sizes(config))
    sizes = []
    data = log_bytes(60000, 3)
    for start in range(0, len(data), 10000):
        learner.learn(data[start:start + 10000])
        sizes.append(learner.resident_bytes)
    grown = learner.state.grown
    assert sizes == sorted(sizes) and sizes[-1] > sizes[0] > first_resident_nbytes(config)
    assert grown[GROWN_MAP1, BITS] > first_sizes(config)[GROWN_MAP1, BITS]
    assert grown[GROWN_PAIRS, BITS] > first_sizes(config)[GROWN_PAIRS, BITS]
    for j in range(12):  # each table's count is what it holds, and it is at most a quarter full
        size = 1 << int(grown[j, BITS])
        taken = np.count_nonzero(learner.state.buckets[j, :size, TAG_AT])
        assert taken == grown[j, TAKEN] and (taken <= size // 4 or size == 1 << config.table_bits)
        assert not learner.state.buckets[j, size:].any()


def test_snapshots_around_doublings_continue_bit_for_bit():
    """Snapshots taken as the tables grow (every few kilobytes, the maps doubling between some) restore to a
    learner that goes on exactly as the original, and hold the tables only as far as they have grown."""
    config = BitsConfig(**GROWING)
    data = log_bytes(40000, 8)
    learner = BitsLearner(config)
    full = len(BitsLearner(BitsConfig(revision=3, table_growth=False, table_ways=1, table_bits=16, history_bits=16,
                                      match_bits=14, number_bits=14)).to_bytes())
    for cut in (1000, 5000, 9000, 17000, 33000):
        learner.learn(data[:cut] if cut == 1000 else data[prev:cut])
        prev = cut
        snapshot = learner.to_bytes()
        assert len(snapshot) < full
        again = BitsLearner.from_bytes(snapshot)
        assert np.array_equal(again.state.grown, learner.state.grown)
        assert np.array_equal(again.predict_proba(), learner.predict_proba())
        nxt = data[cut:cut + 3000]
        assert np.array_equal(again.learn(nxt), BitsLearner.from_bytes(snapshot).learn(nxt))
    assert learner.state.grown[GROWN_MAP2, BITS] > first_sizes(config)[GROWN_MAP2, BITS]


def test_a_snapshot_without_its_history_takes_it_back():
    config = BitsConfig(**GROWING)
    learner = BitsLearner(config)
    data = log_bytes(30000, 4)
    learner.learn(data[:20000])
    ring, t = learner.history
    kept = ring.copy()
    parts = b"".join(learner.snapshot_parts(history=False))
    assert len(parts) < len(learner.to_bytes()) - 15000
    with pytest.raises(ValueError, match="history is kept elsewhere"):
        BitsLearner.from_bytes(parts)

    def reader(first, views):
        at = first
        for v in views:
            n = len(v)
            v[:] = kept[at % len(kept):at % len(kept) + n].tobytes()
            at += n

    again = BitsLearner.from_bytes(parts, reader)
    assert np.array_equal(again.learn(data[20000:]), learner.learn(data[20000:]))


def test_a_file_of_a_growing_model_decodes():
    data = log_bytes(50000, 6)
    packed = compress(data, BitsConfig(**GROWING))
    assert decompress(packed) == data and len(packed) < len(data) // 4


def test_a_hostile_snapshot_s_table_sizes_are_refused():
    learner = BitsLearner(BitsConfig(**GROWING))
    learner.learn(log_bytes(8000, 1))
    learner.state.grown[0, BITS] = 30  # beyond what the configuration holds
    with pytest.raises(ValueError, match="table size outside"):
        BitsLearner.from_bytes(learner.to_bytes())
    learner.state.grown[0, BITS] = GROWTH_START
    learner.state.grown[0, TAKEN] += 1
    with pytest.raises(ValueError, match="context table does not hold"):
        BitsLearner.from_bytes(learner.to_bytes())
