"""The cluster's pure parts: partitions, rendezvous ownership, subjects, and the log's chained records."""

from __future__ import annotations

import hashlib
import random

import pytest

from seqd.clients.protocol import STREAM_NAME
from seqd.daemon.cluster import placement, records
from seqd.daemon.cluster.records import BATCH, CREATE, DROP, NO_DIGEST, Chain, Record, RecordError


def test_a_stream_s_partition_is_the_documented_hash():
    for name in ("a", "web-01", "x.y.z", "Z" * 128):
        expected = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big") % 16
        assert placement.partition_of(name, 16) == expected
    counts = [0] * 16
    for i in range(16000):
        counts[placement.partition_of(f"s{i}", 16)] += 1
    assert min(counts) > 800 and max(counts) < 1200  # spread evenly


def test_rendezvous_moves_only_the_partitions_of_the_member_that_joins_or_leaves():
    members = [f"r{i}" for i in range(5)]
    before = placement.assignment(256, members)
    after = placement.assignment(256, members[:-1])  # r4 leaves
    moved = [p for p in before if before[p] != after[p]]
    assert moved and all(before[p] == "r4" for p in moved)
    joined = placement.assignment(256, members + ["r5"])
    moved = [p for p in before if before[p] != joined[p]]
    assert moved and all(joined[p] == "r5" for p in moved)
    assert placement.owner_of(3, []) is None
    assert placement.owner_of(3, ["b", "a"]) == placement.owner_of(3, ["a", "b"])  # order does not matter


def test_subjects_are_one_token_per_name_and_map_back():
    rng = random.Random(7)
    alphabet = "abcXYZ019._-"
    for _ in range(500):
        name = rng.choice("abZ09_-") + "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 20)))
        assert STREAM_NAME.fullmatch(name)
        subject = placement.subject_of(name, 16)
        assert subject.count(".") == 3 and "~" not in name
        assert placement.name_of(subject) == name
        assert subject.startswith(f"seqd.log.{placement.partition_of(name, 16)}.")
    with pytest.raises(ValueError):
        placement.name_of("other.subject")
    with pytest.raises(ValueError):
        placement.check_member_id("has space")


def _chain_of(n: int) -> list[bytes]:
    encoded, previous, position = [], NO_DIGEST, 0
    first = Record(CREATE, 0, body=b'{"model": "bitwise"}')
    for i in range(n):
        record = first if i == 0 else Record(BATCH, position, 3, 1, f"b{i}".encode(), previous, bytes([i, i, i]))
        data = record.encode()
        encoded.append(data)
        previous, position = records.digest(data), record.end
    return encoded


def test_a_chain_reads_back_and_finds_a_missing_or_altered_record():
    encoded = _chain_of(6)
    chain = Chain()
    got = [chain.check(data, seq) for seq, data in enumerate(encoded, 1)]
    assert [r.kind for r in got] == [CREATE] + [BATCH] * 5 and chain.position == 15
    with pytest.raises(RecordError, match="does not follow"):
        chain = Chain()
        for seq, data in enumerate(encoded[:2] + encoded[3:], 1):
            chain.check(data, seq)
    # from a snapshot's kept record: the chain goes on from its digest and position
    chain = Chain((records.digest(encoded[2]), records.decode(encoded[2]).end))
    assert [chain.check(d, s).position for s, d in enumerate(encoded[3:], 4)] == [6, 9, 12]
    altered = bytearray(encoded[3])
    altered[-1] ^= 1
    chain = Chain((records.digest(encoded[2]), 6))
    chain.check(bytes(altered), 4)
    with pytest.raises(RecordError, match="does not follow"):
        chain.check(encoded[4], 5)
    with pytest.raises(RecordError, match="starts with its creation"):
        Chain().check(Record(BATCH, 0, 1, 1, body=b"x").encode(), 1)


def test_a_drop_ends_the_chain_and_positions_must_be_contiguous():
    encoded = _chain_of(2)
    drop = Record(DROP, 3, previous=records.digest(encoded[1])).encode()
    chain = Chain()
    chain.check(encoded[0], 1), chain.check(encoded[1], 2), chain.check(drop, 3)
    with pytest.raises(RecordError, match="follows the stream's drop"):
        chain.check(Record(BATCH, 3, 1, 1, b"", records.digest(drop), b"x").encode(), 4)
    skipped = Record(BATCH, 7, 1, 1, b"", records.digest(encoded[1]), b"x").encode()
    chain = Chain()
    chain.check(encoded[0], 1), chain.check(encoded[1], 2)
    with pytest.raises(RecordError, match="position 7"):
        chain.check(skipped, 3)


@pytest.mark.parametrize("data, message", [
    (b"", "not a msgpack record"),
    (b"\x93\x01\x02\x03", "8 fields"),
    (Record(BATCH, 0, 2, 1, body=b"x").encode(), "holds 1 bytes"),
    (Record(CREATE, 0, 1, 1, body=b"x").encode(), "only a batch"),
    (Record(9, 0).encode(), "unknown record kind"),
    (Record(BATCH, -1, 0).encode(), "non-negative"),
    (Record(BATCH, 0, 0, 3).encode(), "1 or 2 bytes"),
    (Record(BATCH, 0, 0, 1, b"i" * 65).encode(), "at most 64"),
    (Record(BATCH, 0, 0, 1, b"", b"short").encode(), "16 bytes"),
])
def test_a_message_that_is_not_a_record_gets_a_clear_error(data, message):
    with pytest.raises(RecordError, match=message):
        records.decode(data)


def test_random_bytes_never_decode_to_anything_but_a_record_error():
    rng = random.Random(1)
    good = _chain_of(2)[1]
    for _ in range(2000):
        data = bytearray(good)
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            records.decode(bytes(data[:rng.randrange(len(data) + 1)]))
        except RecordError:
            pass
