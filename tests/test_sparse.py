"""A learner's bytes as their non-zero words (``daemon/sparse.py``, stream snapshots of version 4): what is
written reads back byte for byte whatever the lengths and the reads, and a damaged or hostile file is refused
with a reason, before it takes more memory than its learner would."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
import pytest

from seqd.daemon.sparse import PIECE, SparseReader, encoded


def stored(*parts: bytes) -> bytes:
    return b"".join(encoded(parts))


def sparse_bytes(n: int, density: float, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    data = np.zeros(n, np.uint8)
    hit = rng.random(n) < density
    data[hit] = rng.integers(1, 256, hit.sum())
    return data.tobytes()


def read_all(data: bytes, sizes, bound=None) -> bytes:
    """The learner of ``data`` read as ``from_stream`` reads: ``read`` and ``read_into`` of the given sizes in
    turn, to the end, which must be the records' end."""
    reader = SparseReader(io.BytesIO(data), bound)
    out, turn = [], 0
    while True:
        n = sizes[turn % len(sizes)]
        if turn % 2:
            buffer = bytearray(n)
            got = reader.read_into(memoryview(buffer))
            out.append(bytes(buffer[:got]))
        else:
            got = len(chunk := reader.read(n))
            out.append(chunk)
        turn += 1
        if got < n:
            break
    if not reader.finished:  # as snapshot_file.read says it
        raise ValueError("its learner is cut short, or followed by other bytes")
    return b"".join(out)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, PIECE - 1, PIECE, PIECE + 5, 3 * PIECE + 13])
@pytest.mark.parametrize("density", [0.0, 0.01, 1.0])
def test_what_is_written_reads_back_byte_for_byte(n, density):
    learner = sparse_bytes(n, density, seed=n)
    split = n // 3  # the parts' boundaries fall anywhere in a piece or a word
    data = stored(learner[:split], learner[split:split + 5], learner[split + 5:])
    assert read_all(data, [5, 4096, 1, PIECE + 3]) == learner


def test_a_learners_zeros_take_next_to_nothing():
    learner = sparse_bytes(8 * PIECE, 0.001, seed=1)
    assert len(stored(learner)) < len(zlib.compress(learner, 1))


def records(size: int, pieces: list[tuple[np.ndarray, np.ndarray]], tail: bytes = b"") -> bytes:
    """A learner of ``size`` bytes in this layout, its records written by hand: (places, words) per piece."""
    body = b"".join(struct.pack("<I", len(p)) + np.diff(np.asarray(p), prepend=0).astype("<u2").tobytes()
                    + np.asarray(w, "<u8").tobytes() for p, w in pieces)
    return struct.pack("<Q", size) + zlib.compress(body) + tail


def refusal(data: bytes, bound=None) -> str:
    with pytest.raises((ValueError, zlib.error)) as caught:
        read_all(data, [PIECE], bound)
    return str(caught.value)


def test_hand_written_records_read_as_the_words_they_place():
    data = records(20, [([0, 2], [1, 0x0102])])
    assert read_all(data, [3]) == struct.pack("<Q", 1) + bytes(8) + struct.pack("<I", 0x0102)


def test_damaged_or_hostile_records_are_refused():
    assert "more words than it has" in refusal(records(16, [([0, 1, 2], [1, 2, 3])]))
    assert "out of order" in refusal(records(24, [([2, 1], [1, 2])]))
    assert "out of order" in refusal(records(24, [([1, 1], [1, 2])]))
    assert "outside its piece" in refusal(records(24, [([3], [1])]))
    assert "past its end" in refusal(records(12, [([1], [0xFF_0000_0000])]))  # the last word's byte 12, of 12
    assert "cut short" in refusal(records(2 * PIECE, [([0], [1])]))  # the second piece's record is missing
    assert "cut short" in refusal(struct.pack("<Q", 16)[:5])
    whole = records(16, [([0], [1])])
    assert "cut short" in refusal(whole[:-3])
    for after in (b"x", zlib.compress(b"more")):  # bytes after the records: the reading is not finished
        reader = SparseReader(io.BytesIO(whole + after), None)
        assert reader.read(16) == struct.pack("<Q", 1) + bytes(8) and not reader.finished


def test_a_learner_longer_than_its_bound_is_refused_before_anything_is_read():
    data = struct.pack("<Q", 1 << 40)  # a terabyte announced, nothing behind it
    assert "past what its configuration holds" in refusal(data, bound=1 << 20)
