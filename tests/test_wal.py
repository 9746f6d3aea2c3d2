"""The write-ahead log against its definition, and the daemon's configuration loader."""

from __future__ import annotations

import os
import struct
import threading
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from seqd.daemon import wal
from seqd.daemon.config import ServeConfig

ROOT = Path(__file__).resolve().parents[1]
R = wal._RECORD.size + 1  # a record's bytes beyond its symbols (version 3: its header, its batch id's length)


def one_segment(directory, sizes) -> Path:
    """A closed log of one segment holding batches of these sizes (bytes 0, 1, 2, ...); its path."""
    log = wal.WriteAheadLog(directory, 1, 0)
    for n in sizes:
        log.append(np.arange(n))
    log.close()
    (_, path), = wal.segments(directory)
    return path


def batches(rng, n, cap):
    return [rng.integers(0, cap, rng.integers(1, 50)) for _ in range(n)]


@pytest.mark.parametrize("cap", [256, 65536])
def test_replay_returns_what_was_appended_from_any_position(tmp_path, cap):
    rng = np.random.default_rng(0)
    items = batches(rng, 20, cap)
    log = wal.WriteAheadLog(tmp_path, wal.itemsize_for(cap), 0)
    for b in items:
        log.append(b)
    log.close()
    whole = np.concatenate(items)
    for start in (0, 1, 17, len(whole) - 1, len(whole)):
        replayed = list(wal.replay(tmp_path, wal.itemsize_for(cap), start))
        got = np.concatenate(replayed) if replayed else np.zeros(0, dtype=np.int64)
        assert np.array_equal(got, whole[start:])
    assert sum(map(len, wal.replay(tmp_path, wal.itemsize_for(cap), 0))) == len(whole)


def test_checkpoint_starts_a_segment_and_removes_what_the_snapshot_holds(tmp_path):
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(10))
    log.append(np.arange(5))
    log.checkpoint(12)  # a snapshot at 12: the records up to 15 are still needed from 12 on
    log.append(np.arange(3))
    assert [s for s, _ in wal.segments(tmp_path)] == [0, 15]
    log.checkpoint(18)
    assert [s for s, _ in wal.segments(tmp_path)] == [18]
    log.append(np.array([7, 7]))
    log.close()
    assert [b.tolist() for b in wal.replay(tmp_path, 1, 18)] == [[7, 7]]


def cut_at(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


@pytest.mark.parametrize("pages", [0, 1])  # whole pages of the last record written before the crash
def test_a_last_record_cut_at_a_page_is_a_torn_write_dropped_and_cut(tmp_path, pages):
    """A crash stops a write between pages of the file: the file ends at a page boundary inside the record."""
    path = one_segment(tmp_path, [10, 5000, 9000])
    full = path.stat().st_size
    first_page = -(-(16 + R + 10 + R + 5000) // wal.PAGE) * wal.PAGE  # the first page boundary in the last record
    cut_at(path, first_page + wal.PAGE * pages)
    replay = wal.Replay(tmp_path, 1, 0)
    assert [len(b) for b in replay] == [10, 5000]
    assert "cut short by a crash" in replay.torn and "position 5010" in replay.torn
    assert path.stat().st_size == full - (R + 9000)  # the torn record is gone
    log = wal.WriteAheadLog(tmp_path, 1, 5010)  # and appending goes on after the good records
    log.append(np.arange(4))
    log.close()
    assert [len(b) for b in wal.replay(tmp_path, 1, 0)] == [10, 5000, 4]


def test_a_last_record_whose_sectors_read_as_zeros_is_a_torn_write(tmp_path):
    """The file's length covers the record, but a block of it never reached the disk: zeros, a sector at least."""
    path = one_segment(tmp_path, [10, 3000])
    data = bytearray(path.read_bytes())
    data[2048:2560] = bytes(512)
    path.write_bytes(bytes(data))
    replay = wal.Replay(tmp_path, 1, 0)
    assert [len(b) for b in replay] == [10] and replay.torn


@pytest.mark.parametrize("cut", [1, 8, 16, 25])  # bytes missing from the last record: header or payload
def test_a_last_record_cut_by_hand_is_damage_not_a_torn_write(tmp_path, cut):
    """A file cut where no crash cuts one (not at a page, no zeros): acknowledged records may be lost."""
    path = one_segment(tmp_path, [10, 20])
    full = path.stat().st_size
    cut_at(path, full - cut)
    with pytest.raises(wal.LogDamage, match="position 10") as caught:
        list(wal.replay(tmp_path, 1, 0))
    assert caught.value.position == 10 and caught.value.lost_bytes == R + 20 - cut
    assert path.stat().st_size == full - cut  # nothing was cut off
    replay = wal.Replay(tmp_path, 1, 0, repair=True)  # `seqd serve --repair`
    assert [len(b) for b in replay] == [10] and replay.repaired.position == 10
    assert path.stat().st_size == full - (R + 20)


def test_a_flipped_bit_in_the_last_record_is_damage(tmp_path):
    path = one_segment(tmp_path, [10, 20])
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(wal.LogDamage, match="do not match their checksum") as caught:
        list(wal.replay(tmp_path, 1, 0))
    assert caught.value.lost_symbols == 0  # no whole record after it: how much was lost, nothing shows


def test_a_huge_length_with_a_valid_checksum_is_damage_when_records_follow(tmp_path):
    path = one_segment(tmp_path, [10, 20, 30])
    data = bytearray(path.read_bytes())
    second = 16 + R + 10
    fields = wal._FIELDS.pack(1 << 31, 10, 0)
    data[second: second + 16] = fields + struct.pack("<I", zlib.crc32(fields))
    path.write_bytes(bytes(data[:4096] if len(data) >= 4096 else data))
    with pytest.raises(wal.LogDamage, match="run past the end"):
        list(wal.replay(tmp_path, 1, 0))


def test_the_end_of_a_deleted_or_short_segment_before_the_last_is_damage_and_repairable(tmp_path):
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(10))
    log.checkpoint(0)
    log.append(np.arange(5))
    log.checkpoint(0)
    log.append(np.arange(7))
    log.close()
    (_, first), (_, second), (_, third) = wal.segments(tmp_path)
    cut_at(second, second.stat().st_size - 20 - 2)  # its seal and the end of its record
    third_size = third.stat().st_size
    with pytest.raises(wal.LogDamage, match="position 10"):
        list(wal.replay(tmp_path, 1, 0))
    replay = wal.Replay(tmp_path, 1, 0, repair=True)
    assert [len(b) for b in replay] == [10] and replay.repaired.lost_bytes == R + 5 - 2 + third_size
    assert not third.exists()


def test_a_deleted_last_segment_is_missed_by_its_seal_and_a_missing_log_by_its_absence(tmp_path):
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(10))
    log.checkpoint(0)  # the first segment is sealed: the next starts at 10
    log.append(np.arange(5))
    log.close()
    (_, first), (_, last) = wal.segments(tmp_path)
    assert [len(b) for b in wal.replay(tmp_path, 1, 0)] == [10, 5]
    last.unlink()
    with pytest.raises(wal.LogDamage, match="sealed, but the segments after it are missing"):
        list(wal.replay(tmp_path, 1, 0))
    first.unlink()
    with pytest.raises(wal.LogDamage, match="the log is missing"):
        list(wal.replay(tmp_path, 1, 0))


def test_a_restart_seals_the_segment_it_leaves(tmp_path):
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(10))
    log.close()
    log = wal.WriteAheadLog(tmp_path, 1, 10)  # replayed to 10: a new segment, the old one sealed
    log.append(np.arange(3))
    log.close()
    (_, first), (_, last) = wal.segments(tmp_path)
    assert first.read_bytes().endswith(wal.seal_record(10))
    assert [len(b) for b in wal.replay(tmp_path, 1, 0)] == [10, 3]


def test_version_2_segments_are_still_read(tmp_path):
    """As seqd 0.17 wrote them: a record's payload is its symbols alone, no batch id, no seals."""
    records = b""
    for start, symbols in ((0, bytes(range(10))), (10, bytes(20))):
        fields = wal._FIELDS.pack(len(symbols), start, zlib.crc32(symbols))
        records += fields + struct.pack("<I", zlib.crc32(fields)) + symbols
    (tmp_path / wal.segment_name(0)).write_bytes(wal._HEAD.pack(wal.MAGIC, 2, 1) + records)
    replay = wal.Replay(tmp_path, 1, 0)
    assert [b.tolist() for b in replay] == [list(range(10)), [0] * 20] and not replay.batches
    log = wal.WriteAheadLog(tmp_path, 1, 30)  # a restart goes on in a version-3 segment
    log.append(np.arange(3), b"id")
    log.close()
    replay = wal.Replay(tmp_path, 1, 0)
    assert [len(b) for b in replay] == [10, 20, 3] and list(replay.batches) == [(b"id", 30, 33)]


def test_batch_ids_are_kept_with_their_records(tmp_path):
    log = wal.WriteAheadLog(tmp_path, 2, 0)
    log.append(np.array([300, 7]), b"first")
    log.append(np.array([1]))
    log.append(np.array([65535, 0, 2]), b"\x00" * 64)
    log.close()
    replay = wal.Replay(tmp_path, 2, 1)
    assert [b.tolist() for b in replay] == [[7], [1], [65535, 0, 2]]
    assert list(replay.batches) == [(b"first", 0, 2), (b"\x00" * 64, 3, 6)]


def test_a_zero_filled_tail_of_64_mib_is_known_at_once(tmp_path):
    path = one_segment(tmp_path, [10])
    with open(path, "ab") as f:
        f.truncate(path.stat().st_size + (64 << 20))
    t0 = time.perf_counter()
    replay = wal.Replay(tmp_path, 1, 0)
    assert [len(b) for b in replay] == [10] and replay.torn
    assert time.perf_counter() - t0 < 20  # (seconds, not minutes: the scan is vectorised; not a benchmark)


def test_megabytes_of_garbage_after_a_damaged_header_are_scanned_quickly(tmp_path):
    path = one_segment(tmp_path, [10, 20])
    rng = np.random.default_rng(3)
    data = bytearray(path.read_bytes())
    data[46] ^= 1  # the second header
    path.write_bytes(bytes(data) + rng.integers(1, 256, 8 << 20, dtype=np.uint8).tobytes())
    with pytest.raises(wal.LogDamage):
        list(wal.replay(tmp_path, 1, 0))


def test_damage_before_the_end_is_an_error(tmp_path):
    path = one_segment(tmp_path, [10, 20])
    data = bytearray(path.read_bytes())
    data[16 + 20 + 3] ^= 0xFF  # a payload byte of the first record
    path.write_bytes(bytes(data))
    with pytest.raises(wal.LogDamage, match="do not match their checksum") as caught:
        list(wal.replay(tmp_path, 1, 0))
    assert caught.value.lost_symbols == 30  # the second record, whole, shows the log reached 30


@pytest.mark.parametrize("byte", [0, 1, 3, 5, 12])  # in the length, the position, the payload's checksum
def test_a_damaged_header_in_the_last_segment_is_not_taken_for_a_torn_write(tmp_path, byte):
    path = one_segment(tmp_path, [100, 100, 100, 100])
    data = bytearray(path.read_bytes())
    data[16 + R + 100 + byte] ^= 0x40  # the second record's header
    path.write_bytes(bytes(data))
    with pytest.raises(wal.WALError):
        list(wal.replay(tmp_path, 1, 0))
    assert path.stat().st_size == len(data)  # nothing was cut off


def test_zeros_after_the_last_record_are_a_torn_write(tmp_path):
    path = one_segment(tmp_path, [10])
    path.write_bytes(path.read_bytes() + bytes(64))  # a file extended by a crash before its data was written
    assert [len(b) for b in wal.replay(tmp_path, 1, 0)] == [10]


def test_a_log_that_starts_after_the_snapshot_is_an_error(tmp_path):
    log = wal.WriteAheadLog(tmp_path, 1, 1000)
    log.append(np.arange(10))
    log.close()
    with pytest.raises(wal.WALError, match="after the snapshot's 0"):
        list(wal.replay(tmp_path, 1, 0))
    assert [len(b) for b in wal.replay(tmp_path, 1, 1000)] == [10]


def test_a_gap_between_segments_is_an_error(tmp_path):
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(10))
    log.close()
    log = wal.WriteAheadLog(tmp_path, 1, 12)
    log.append(np.arange(3))
    log.close()
    with pytest.raises(wal.WALError, match="position 10"):
        list(wal.replay(tmp_path, 1, 0))


def test_a_failed_write_leaves_no_partial_record_now_or_later(tmp_path, monkeypatch):
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(5))
    real_pwrite = os.pwrite

    def disk_full(fd, data, offset):
        real_pwrite(fd, bytes(data)[:7], offset)  # part of the record reaches the file, then ENOSPC
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(wal.os, "pwrite", disk_full)
    with pytest.raises(OSError):
        log.append(np.arange(100))
    monkeypatch.setattr(wal.os, "pwrite", real_pwrite)
    assert log.position == 5
    log.append(np.arange(2))
    log.close()  # nothing of the refused batch is left to reach the disk
    assert [len(b) for b in wal.replay(tmp_path, 1, 0)] == [5, 2]


def test_config_layers_and_errors(tmp_path):
    cfg = ServeConfig.load(text="[server]\nworkers = 3\n[metrics]\nstream_labels = ['a']", overrides={"workers": 1})
    assert cfg.workers == 1 and cfg.stream_labels == ("a",)
    with pytest.raises(ValueError, match="unknown key 'wrokers'"):
        ServeConfig.load(text="[server]\nwrokers = 3")
    with pytest.raises(ValueError, match=r"unknown section \[serve\]"):
        ServeConfig.load(text="[serve]\nworkers = 3")
    with pytest.raises(ValueError, match="max_queue_symbols"):
        ServeConfig.load(overrides={"max_queue_symbols": 10, "max_batch_symbols": 100})
    with pytest.raises(ValueError, match="max_labelled_streams must be in"):
        ServeConfig.load(overrides={"max_labelled_streams": 1000})
    labels = ServeConfig.load(text="[metrics]\nstream_labels = ['web-*', 'db']\nmax_labelled_streams = 2")
    assert labels.labelled(["web-b", "x", "db", "web-a"]) == ["db", "web-a"]
    assert ServeConfig().labelled([f"s{i:03d}" for i in range(100)]) == [f"s{i:03d}" for i in range(32)]
    with pytest.raises(ValueError, match="line 1"):
        ServeConfig.load(text="[server\n")


def test_the_shipped_configurations_load():
    ServeConfig.load(ROOT / "deploy" / "seqd.toml")
    manifest = (ROOT / "deploy" / "kubernetes" / "configmap.yaml").read_text()
    body = manifest[manifest.index("seqd.toml: |") + len("seqd.toml: |"):]
    ServeConfig.load(text="\n".join(line[4:] for line in body.splitlines()))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to count descriptors")
@pytest.mark.parametrize("fsync", [True, False])
def test_rotations_leak_no_descriptor(tmp_path, fsync):
    before = len(os.listdir("/proc/self/fd"))
    log = wal.WriteAheadLog(tmp_path, 1, 0, fsync=fsync)
    for k in range(20):
        log.append(np.arange(3))
        log.checkpoint(3 * k)
        if k % 5 == 0:
            log.sync()
    log.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_syncs_beside_appends_and_rotations_lose_nothing(tmp_path):
    """The group commit in its thread, the I/O loop appending and rotating in another."""
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    stop, errors = threading.Event(), []

    def commit():
        while not stop.is_set():
            try:
                log.sync()
            except BaseException as exc:  # reported below
                errors.append(exc)
                return
    t = threading.Thread(target=commit)
    t.start()
    rng = np.random.default_rng(5)
    items = batches(rng, 400, 256)
    for k, b in enumerate(items):
        log.append(b)
        if k % 7 == 0:
            log.checkpoint(0)  # rotate; a snapshot at 0 makes nothing redundant
    stop.set()
    t.join()
    log.close()
    assert errors == []
    assert np.array_equal(np.concatenate(list(wal.replay(tmp_path, 1, 0))), np.concatenate(items))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to name descriptors")
def test_reopening_a_log_makes_what_replay_counted_durable(tmp_path, monkeypatch):
    """A process crash can leave records written but not synced.  Replay counts them as accepted
    (and a publisher's retry, meeting ``conflict``, takes them as landed): opening the log again
    fsyncs them before anything else."""
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(7))  # never synced: the process "crashes" here
    (_, segment), = wal.segments(tmp_path)
    end = sum(len(b) for b in wal.replay(tmp_path, 1, 0))
    synced, real = [], os.fsync
    monkeypatch.setattr(wal.os, "fsync", lambda fd: (synced.append(os.path.realpath(f"/proc/self/fd/{fd}")),
                                                     real(fd)))
    reopened = wal.WriteAheadLog(tmp_path, 1, end)
    assert str(segment.resolve()) in synced and str(tmp_path.resolve()) in synced
    reopened.close()
    log.close()


def test_a_failed_fsync_is_remembered(tmp_path, monkeypatch):
    """Linux reports a write-back error once; a later fsync that 'succeeds' proves nothing."""
    log = wal.WriteAheadLog(tmp_path, 1, 0)
    log.append(np.arange(5))
    real_fsync = os.fsync
    monkeypatch.setattr(wal.os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "Input/output error")))
    with pytest.raises(OSError):
        log.sync()
    monkeypatch.setattr(wal.os, "fsync", real_fsync)
    log.append(np.arange(3))
    with pytest.raises(OSError, match="Input/output"):
        log.sync()


def test_a_last_header_cut_by_a_lost_page_is_a_torn_write(tmp_path):
    path = one_segment(tmp_path, [4040, 5000])
    second = 16 + R + 4040  # 4077: the second header straddles the first page boundary
    data = bytearray(path.read_bytes())
    data[wal.PAGE:] = bytes(len(data) - wal.PAGE)  # the page after the boundary never reached the disk
    path.write_bytes(bytes(data))
    assert [len(b) for b in wal.replay(tmp_path, 1, 0)] == [4040]
    assert path.stat().st_size == second
