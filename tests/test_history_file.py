"""A stream's history file (``daemon/history_file.py``): what a snapshot leaves out, append-only, read back exactly;
what a crash leaves is cut off, what damage leaves is refused by name; and a byte stream whose snapshots keep
their history there restores, hibernates and wakes bit for bit."""

from __future__ import annotations

import os

import numpy as np
import pytest

from seqd.core.online import OnlineConfig, OnlineLearner
from seqd.core.arrays_snapshot import ring_views
from seqd.daemon import history_file, stream_meta
from seqd.daemon.history_file import HistoryFile
from seqd.daemon.streams import Stream

SYMBOLS = np.random.default_rng(1).integers(0, 256, 50_000).astype(np.uint8)


def read(history: HistoryFile, first: int, n: int, parts: int = 1) -> np.ndarray:
    """Positions first ... first + n - 1, read into ``parts`` buffers as a ring's one or two parts are."""
    out = np.zeros(n, np.uint8)
    cut = n // 2 if parts == 2 else n
    history(first, [memoryview(out[:cut]), memoryview(out[cut:])] if parts == 2 else [memoryview(out)])
    return out


def test_appends_read_back_from_any_position_into_one_or_two_buffers(tmp_path):
    h = HistoryFile.open(tmp_path, 1)
    assert h.end == 0 and not (tmp_path / history_file.NAME).exists()
    h.append(0, [SYMBOLS[:100]])
    h.append(100, [SYMBOLS[100:3000], SYMBOLS[3000:20000]])
    again = HistoryFile.open(tmp_path, 1)
    assert (again.first, again.end) == (0, 20000) and again.size == h.size
    for first, n, parts in ((0, 20000, 1), (50, 150, 2), (2999, 17001, 2), (19999, 1, 1)):
        assert np.array_equal(read(again, first, n, parts), SYMBOLS[first:first + n])
    with pytest.raises(ValueError, match="holds positions 0 to 20000, the learner needs positions 19000 to 21000"):
        read(again, 19000, 2000)
    with pytest.raises(ValueError, match="appending at position 5, the file ends at 20000"):
        again.append(5, [SYMBOLS[:5]])


def test_a_long_append_is_several_records_and_a_rewrite_keeps_only_what_it_is_given(tmp_path):
    h = HistoryFile.open(tmp_path, 2)
    wide = np.arange(history_file.RECORD_SYMBOLS + 10, dtype=np.uint16)
    h.append(0, [wide])
    assert len(h.records) == 2
    out = np.zeros(20, np.uint16)
    h(history_file.RECORD_SYMBOLS - 10, [memoryview(out).cast("B")])
    assert np.array_equal(out, wide[-20:])
    h.rewrite(1000, [wide[1000:1500]])
    again = HistoryFile.open(tmp_path, 2)
    assert (again.first, again.end) == (1000, 1500) and again.size < 2000
    again(1000, [memoryview(out).cast("B")])
    assert np.array_equal(out, wide[1000:1020])
    with pytest.raises(ValueError, match="holds 2-byte symbols, the stream's are 1-byte"):
        HistoryFile.open(tmp_path, 1)


def test_what_a_crash_leaves_past_the_snapshot_is_cut_off(tmp_path):
    h = HistoryFile.open(tmp_path, 1)
    h.append(0, [SYMBOLS[:1000]])
    h.append(1000, [SYMBOLS[1000:1500]])  # appended for a snapshot at 1500 that never took its place
    path = tmp_path / history_file.NAME
    whole = path.read_bytes()
    path.write_bytes(whole + whole[-300:])  # and a record cut short at the end (the crash came mid-append)
    again = HistoryFile.open(tmp_path, 1)
    assert again.end == 1500 and path.stat().st_size == len(whole)
    again.keep_until(1000)
    assert again.end == 1000 and np.array_equal(read(HistoryFile.open(tmp_path, 1), 0, 1000), SYMBOLS[:1000])
    with pytest.raises(ValueError, match="no record ends at the snapshot's position 500"):
        again.keep_until(500)
    again.append(1000, [SYMBOLS[1000:1200]])
    assert np.array_equal(read(HistoryFile.open(tmp_path, 1), 900, 300), SYMBOLS[900:1200])


def test_damage_is_refused_by_name(tmp_path):
    h = HistoryFile.open(tmp_path, 1)
    h.append(0, [SYMBOLS[:1000]])
    h.append(1000, [SYMBOLS[1000:2000]])
    path = tmp_path / history_file.NAME
    data = bytearray(path.read_bytes())
    data[-10] ^= 0x40
    path.write_bytes(bytes(data))
    damaged = HistoryFile.open(tmp_path, 1)
    assert np.array_equal(read(damaged, 0, 1000), SYMBOLS[:1000])  # the record that is whole still reads
    with pytest.raises(ValueError, match=r"the record at byte \d+ is damaged \(positions 1000 to 2000\)"):
        read(damaged, 500, 1000)
    data[3] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="not a seqd history file, or its header is damaged"):
        HistoryFile.open(tmp_path, 1)
    os.unlink(path)
    with pytest.raises(ValueError, match="is missing, the learner needs positions 0 to 10"):
        read(HistoryFile.open(tmp_path, 1), 0, 10)


CONFIG = OnlineConfig.bytes_default(context_bits=12, history_bits=12, match_bits=12)  # a ring of 4096 symbols


def _text(n: int) -> np.ndarray:
    rng = np.random.default_rng(2)
    lines = b"".join(f"{i:05d} worker-{rng.integers(9)} took {rng.integers(999)} ms\n".encode() for i in range(n))
    return np.frombuffer(lines, np.uint8)[:n].astype(np.int64)


def test_a_byte_stream_keeps_its_history_beside_its_snapshots_and_restores_bit_for_bit(tmp_path):
    """Snapshots leave the history to the file (they stay small as it fills), the file is written again
    holding the ring alone once it holds more than two rings, hibernation and wake continue exactly, and a
    restart cuts off what was appended for a snapshot that never took its place."""
    x = _text(20_000)
    reference = OnlineLearner(CONFIG)
    stream = Stream.create("s", tmp_path, CONFIG, fsync=False)
    stream.go_live()
    sizes, spans = [], []
    for start in range(0, 20_000, 2_500):
        batch = x[start:start + 2_500]
        stream.log.append(batch.astype(np.uint8))  # as the daemon does: logged, then learned
        stream.log.sync()
        stream._learn(batch)
        reference.learn(batch)
        stream._write_snapshot()
        sizes.append((tmp_path / "s" / "snapshot").stat().st_size)
        spans.append((stream.store.history.first, stream.store.history.end))
    assert spans[-1][1] == 20_000 and all(end - first <= 3 * 4096 for first, end in spans)
    assert any(first > 0 for first, _ in spans)  # it was written again, holding the ring alone
    assert max(sizes) < 4 * min(sizes)  # no snapshot holds the ring: they do not grow with it
    # hibernate, wake: the learner read back from its snapshot and its history file
    with stream.lock:
        stream._let_go()
    stream._wake()
    assert np.array_equal(stream.learner.learn(x[:3000]), reference.learn(x[:3000]))
    # a crash after an append for a snapshot that never took its place: cut off at the restart, and the log
    # replays what was learned after the snapshot
    stream.log.append(x[:3000].astype(np.uint8))
    stream.log.sync()
    stream.store.history.append(stream.store.history.end, [x[:3000].astype(np.uint8)])
    stream.log.close()
    restored = Stream.open(tmp_path / "s", stream_meta.read(tmp_path / "s"), fsync=False)
    assert restored.store.history.end == 20_000 and restored.view.position == 23_000
    assert np.array_equal(restored.learner.learn(x[3000:6000]), reference.learn(x[3000:6000]))


def test_a_stream_restored_from_a_snapshot_that_held_its_history_starts_a_file_of_its_own(tmp_path):
    """A stream of seqd 0.16 has no history file: its snapshot held the ring.  The first snapshot this seqd
    writes starts the file with the ring the learner holds."""
    x = _text(9_000)
    stream = Stream.create("s", tmp_path, CONFIG, fsync=False)
    stream._learn(x)
    ring = stream.learner.state.hist
    whole = OnlineLearner.from_bytes(stream.learner.to_bytes())  # as a snapshot that holds its history restores
    stream.learner = whole
    stream._write_snapshot()
    assert (stream.store.history.first, stream.store.history.end) == (9_000 - 4096, 9_000)
    held = read(stream.store.history, 9_000 - 4096, 4096, parts=2)
    assert np.array_equal(held, np.concatenate(ring_views(ring, 9_000 - 4096, 4096)))


def test_the_budget_counts_a_byte_streams_memory_as_it_grows(tmp_path):
    """A byte stream starts with a few megabytes in memory and counts more as its history fills and its tables
    grow; hibernation gives back all of it, and a wake takes what the learner held when it slept."""
    from seqd.daemon.budget import STREAM_BYTES, MemoryBudget
    from seqd.daemon.learner_store import RECENT_BYTES, most_bytes, resident_bytes

    config = OnlineConfig.bytes_default()
    budget = MemoryBudget(None)
    stream = Stream.create("s", tmp_path, config, fsync=False)
    stream.go_live()
    stream.count_in(budget)
    first = budget.held
    assert first == STREAM_BYTES + resident_bytes(config) < STREAM_BYTES + most_bytes(config) // 20
    x = _text(300_000)
    stream.log.append(x.astype(np.uint8))
    stream._learn(x)
    assert stream.learner_bytes == stream.learner.resident_bytes + RECENT_BYTES
    assert budget.held == STREAM_BYTES + stream.learner_bytes > first
    grown = stream.learner_bytes
    with stream.lock:
        stream._write_snapshot()
        stream._let_go()
    assert budget.held == STREAM_BYTES and stream.learner_bytes == grown
