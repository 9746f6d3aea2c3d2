"""A stream's write-ahead log: every accepted batch, on disk before it is acknowledged.

A log is a sequence of segment files ``wal-<start>.log`` in the stream's
directory, ``<start>`` being the stream position (symbols accepted before) of
its first record, in 20 digits so that names sort as numbers.  A segment is a
header (magic, version, bytes per symbol) and records::

    u32 payload length | u64 start position | u32 crc32(payload) | u32 crc32(the 16 bytes before) | payload

The payload is the length of the batch's id (u8, 0 for none), the id (the
publisher's, at most 64 bytes: :mod:`.batch_ids`), then the batch's symbols,
one byte each (alphabets of at most 256 symbols) or two little-endian bytes;
in version 2 it was the symbols alone.  Positions are contiguous across records
and segments; replay checks it.  After a snapshot at position P, a new
segment starts and every segment that ends at or before P is deleted, so the
log holds what the snapshot does not.

Version 3 (seqd 0.18) adds one rule: a segment closed by a rotation ends
with a *seal*, a record of no symbols whose position is where the next segment
starts, written and fsynced once the next segment exists.  So the last
segment of a log is never sealed, and a sealed last segment means the segments
after it are gone.  A stream's folder always holds a segment (its first is
made with the folder, atomically), so a folder without one has lost its log.
Version-2 segments (no seals) are still read.

What a crash can leave at the end of the last segment is a write cut short
(never acknowledged: the acknowledgement waits for the fsync), and replay
drops it (and truncates the file).  A crash cuts a write only in ways the
kernel's page cache allows: the file ends at a page boundary, or pages or
blocks that never reached the disk read as zeros (a sector at least), and no
whole record follows.  Anything else that does not read back (a flipped bit,
a file cut elsewhere, a crafted header, a missing segment) is *damage*: records
an acknowledgement may have covered would be lost, so replay raises
:class:`LogDamage`, and the daemon keeps the stream out of service unless the
operator chooses ``seqd serve --repair``, which cuts the log where its damage
starts.  So is a log that does not reach back to the snapshot's position.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from collections import deque
from pathlib import Path
from typing import Iterator

import numpy as np

# every file and folder the daemon creates is its user's alone, whatever the umask: the logs hold the
# raw published data, the snapshots what was learned from it
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700

MAGIC = b"SEQDWAL\x00"
VERSION = 3
READ_VERSIONS = (2, 3)  # version 2: no seals, no batch ids
MAX_BATCH_ID = 64  # bytes of a batch's id (the protocol's bound)
RECENT_BATCHES = 4096  # the batch ids a stream remembers (:mod:`.batch_ids`), and a replay collects
_HEAD = struct.Struct("<8sBB6x")
_RECORD = struct.Struct("<IQII")  # length, start, crc of the payload, crc of these first 16 bytes
_FIELDS = struct.Struct("<IQI")


class WALError(Exception):
    """The log is damaged where acknowledged data lies; the message names the file and offset."""


def itemsize_for(alphabet_cap: int) -> int:
    return 1 if alphabet_cap <= 256 else 2


def _dtype(itemsize: int):
    return np.dtype(np.uint8) if itemsize == 1 else np.dtype("<u2")


def segment_name(start: int) -> str:
    return f"wal-{start:020d}.log"


def segments(directory: Path) -> list[tuple[int, Path]]:
    """The segments of a log, by start position."""
    out = []
    for path in directory.glob("wal-*.log"):
        stem = path.name[4:-4]
        if stem.isdigit():
            out.append((int(stem), path))
    return sorted(out)


def fsync_path(path: Path) -> None:
    """fsync a file or a directory by its name."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriteAheadLog:
    """The appending side.  One thread appends, rotates and closes (the daemon's I/O loop); :meth:`sync`
    may run in another thread meanwhile (the daemon's group commit).

    Writes go straight to the file descriptor, unbuffered: a record that
    failed to be written is cut off at once and can never reach the disk later.
    """

    def __init__(self, directory: Path, itemsize: int, position: int, *, fsync: bool = True):
        self.directory = Path(directory)
        self.itemsize = itemsize
        self.position = position  # stream length after the last record written
        self.fsync_enabled = fsync
        self._fd = -1
        self._size = 0  # bytes in the current segment
        self._appended = 0  # records written so far
        self._synced = 0  # records an fsync has covered: those written before it began
        self._lock = threading.Lock()  # an fsync never meets a descriptor being closed (and reused)
        self._sync_error: OSError | None = None  # Linux reports a write-back error once: remember it
        existing = segments(self.directory) if fsync else []
        if existing:
            # After a process crash the last segment may end in records that were written but never
            # synced (nor acknowledged). Replay has just counted them as accepted, and a publisher
            # whose retry meets ``conflict`` will take them as landed: make them durable first.
            for _, path in existing:
                fsync_path(path)
            fsync_path(self.directory)
        self._open_segment()
        if existing and existing[-1][0] != self.position:  # a restart: the last segment is closed, sealed
            self._seal(existing[-1][1])

    def _seal(self, path: Path) -> None:
        """Seal a closed version-3 segment (:mod:`.wal`): it ends where the current segment starts."""
        with open(path, "r+b") as f:
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size or _HEAD.unpack(head)[1] != VERSION:
                return  # (version 2: no seals)
            write_all(f.fileno(), seal_record(self.position), os.fstat(f.fileno()).st_size)
            if self.fsync_enabled:
                os.fsync(f.fileno())

    def _detach(self) -> tuple[int, int]:
        """The current segment's descriptor and size, for the caller to close: the log holds none until
        :meth:`_open_segment`."""
        with self._lock:
            fd, self._fd = self._fd, -1
            if self._appended > self._synced:  # (synced above, by checkpoint: nothing is left unsynced)
                self._synced = self._appended
            return fd, self._size

    def _open_segment(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        path = self.directory / segment_name(self.position)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE)
        try:
            size = os.fstat(fd).st_size
            if size < _HEAD.size:  # new (or created by a crash before its header was written)
                os.ftruncate(fd, 0)
                write_all(fd, segment_header(self.itemsize), 0)
                size = _HEAD.size
                if self.fsync_enabled:
                    os.fsync(fd)
                    fsync_path(self.directory)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._size = fd, size

    def append(self, symbols: np.ndarray, batch: bytes = b"") -> int:
        """Write one batch (not yet synced: see :meth:`sync`); returns its start position.

        On failure (disk full, I/O error) the segment is cut back to where it
        was, so the log never holds a partial record that replay would reject.
        """
        payload = bytes((len(batch),)) + batch + np.ascontiguousarray(symbols, dtype=_dtype(self.itemsize)).tobytes()
        start = self.position
        fields = _FIELDS.pack(len(payload), start, zlib.crc32(payload))
        record = fields + struct.pack("<I", zlib.crc32(fields)) + payload
        try:
            write_all(self._fd, record, self._size)
        except OSError:
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                pass
            raise
        self._size += len(record)
        self.position = start + len(symbols)
        self._appended += 1
        return start

    def sync(self) -> None:
        """Make every record appended before this call durable (one fsync for many appends: group commit).

        Records appended while the fsync runs are not counted as synced: the
        next call syncs them.
        """
        if not self.fsync_enabled:
            return
        with self._lock:
            if self._sync_error is not None:  # a later fsync may "succeed" although the data never made it
                raise self._sync_error
            target = self._appended
            if target > self._synced and self._fd >= 0:
                try:
                    os.fsync(self._fd)
                except OSError as exc:
                    self._sync_error = exc
                    raise
                self._synced = target

    def checkpoint(self, snapshot_position: int) -> None:
        """A snapshot now holds the stream up to ``snapshot_position``: start a new segment and
        delete the segments it makes redundant."""
        self.sync()
        if self._size > _HEAD.size:  # the current segment has records: seal it, start another
            old_fd, old_size = self._detach()
            try:
                self._open_segment()  # durable before the seal that names it
                write_all(old_fd, seal_record(self.position), old_size)
                if self.fsync_enabled:
                    os.fsync(old_fd)
            finally:
                os.close(old_fd)
        segs = segments(self.directory)
        for (start, path), (next_start, _) in zip(segs, segs[1:]):
            if next_start <= snapshot_position:
                path.unlink(missing_ok=True)

    def close(self) -> None:
        """Sync what was appended, then close; the descriptor is closed even when the sync fails (and
        that failure is raised)."""
        if self._fd >= 0:
            try:
                self.sync()
            finally:
                with self._lock:
                    os.close(self._fd)
                    self._fd = -1


def segment_header(itemsize: int) -> bytes:
    """The first bytes of a new segment (a new stream's first segment is written with its folder)."""
    return _HEAD.pack(MAGIC, VERSION, itemsize)


def seal_record(next_start: int) -> bytes:
    """The record that closes a segment: no symbols, the position where the next segment starts."""
    fields = _FIELDS.pack(0, next_start, zlib.crc32(b""))
    return fields + struct.pack("<I", zlib.crc32(fields))


def write_all(fd: int, data, offset: int) -> int:
    """Write the buffer ``data`` at ``offset`` whole (``pwrite`` may write less); returns the offset after it."""
    view = memoryview(data).cast("B")
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
    return offset


PAGE = 4096  # a crash cuts a write at a page of the file (the kernel copies and writes back page by page)
SECTOR = 512  # and a page or a block that never reached the disk reads as zeros, a sector at least


class LogDamage(WALError):
    """Records that an acknowledgement may have covered do not read back: the log is damaged from ``position``
    (its record at byte ``offset`` of ``path``) on, and ``lost_bytes`` of the log lie after that point (the
    record's and every later segment's).  :meth:`Replay.repair` cuts them off."""

    def __init__(self, path: Path, offset: int, position: int, reason: str, lost_bytes: int, reached: int = 0):
        symbols = max(reached - position, 0)
        super().__init__(f"{path}: {reason}, at byte {offset} (stream position {position}); {lost_bytes:,} "
                         f"bytes of log from there on would be lost, with at least {symbols:,} symbols (the whole "
                         "records after the damage)")
        self.path, self.offset, self.position, self.reason, self.lost_bytes = path, offset, position, reason, lost_bytes
        self.lost_symbols = symbols  # at least: what the whole records found after the damage hold


class Replay:
    """The batches of the log from position ``start`` on, in order, by iterating (a batch straddling ``start``
    yields its tail), checking every record (:mod:`.wal`'s rules).

    A torn last record is cut off, and :attr:`torn` says where and why
    (nothing an acknowledgement covered is lost: an INFO line for the
    operator).  Damage raises :class:`LogDamage` once the batches before it
    are yielded; with ``repair`` it is cut off instead (the record and all
    that follows it), :attr:`repaired` holds what was lost, and the batches
    before it stand.  Other faults (a log that does not reach back to the
    snapshot, a segment of another format) raise :class:`WALError`.
    """

    def __init__(self, directory: Path, itemsize: int, start: int, *, repair: bool = False):
        self.directory, self.itemsize, self.start, self.repair = Path(directory), itemsize, start, repair
        self.torn: str | None = None
        self.repaired: LogDamage | None = None
        # the batch ids of the records read, with their [start, end) positions: the most recent ones
        self.batches: deque[tuple[bytes, int, int]] = deque(maxlen=RECENT_BATCHES)

    def __iter__(self) -> Iterator[np.ndarray]:
        itemsize, start = self.itemsize, self.start
        segs = segments(self.directory)
        if not segs:  # a folder is made with its first segment, and a checkpoint never deletes the last
            damage = LogDamage(self.directory / segment_name(start), 0, start, "the log is missing (no segment)", 0)
            if not self.repair:
                raise damage
            self.repaired = damage  # (the log starts again at the snapshot's position)
        expected = None
        for index, (seg_start, path) in enumerate(segs):
            last = index == len(segs) - 1
            with open(path, "rb") as f:
                data = f.read()
            if len(data) < _HEAD.size:
                if last and index > 0 and segment_header(itemsize).startswith(data.rstrip(b"\0")):
                    continue  # a rotation a crash interrupted: its header never reached the disk
                # (a folder is made with its first segment, whole, and a rotation writes the new segment's
                # header before it seals the one before: a lone segment without a header has lost its records)
                self._damaged(segs, index, 0, expected if expected is not None else seg_start,
                              "shorter than a segment header")
                break
            magic, version, size = _HEAD.unpack_from(data)  # (version: of this segment)
            if magic != MAGIC or version not in READ_VERSIONS or size != itemsize:
                raise WALError(f"{path}: not a write-ahead log of {itemsize}-byte symbols of versions "
                               f"{' or '.join(map(str, READ_VERSIONS))}")
            if expected is None and seg_start > start:
                raise WALError(f"{path}: the log starts at position {seg_start}, after the snapshot's {start} "
                               "(a snapshot or a segment is missing)")
            if expected is not None and seg_start != expected:
                raise WALError(f"{path}: starts at position {seg_start}, but the previous segment ends at "
                               f"{expected} (a segment is missing)")
            expected = seg_start
            offset = _HEAD.size
            while offset < len(data):
                if _is_seal(data, offset, expected):
                    if offset + _RECORD.size == len(data) and not last:
                        break  # closed by a rotation; the next segment starts where it ends
                    why = ("sealed, but the segments after it are missing" if last else
                           "records follow its seal")
                    self._damaged(segs, index, offset, expected, why)
                    return
                problem, body, batch = _check_record(data, offset, expected, itemsize, version)
                if problem is not None:
                    if last and _crash_shaped(data, offset) and _later_record(data, offset) is None:
                        self.torn = (f"{path}: the record at byte {offset} (stream position {expected}) was cut "
                                     f"short by a crash ({problem}); it was never acknowledged, and is dropped")
                        _cut(path, offset)
                    else:
                        self._damaged(segs, index, offset, expected, problem)
                    return
                symbols = np.frombuffer(body, dtype=_dtype(itemsize), offset=_prefix(version, len(batch)))
                end = expected + len(symbols)
                if batch:
                    self.batches.append((batch, expected, end))
                if end > start:
                    yield symbols[max(0, start - expected):].astype(np.int64)
                expected = end
                offset += _RECORD.size + len(body)
        if expected is not None and expected < start:
            raise WALError(f"{self.directory}: the log ends at position {expected}, before the snapshot's {start} "
                           "(records or segments are missing)")

    def _damaged(self, segs, index: int, offset: int, position: int, reason: str) -> None:
        """Damage in segment ``index`` at ``offset``: raised, or cut off with ``repair``."""
        path = segs[index][1]
        lost = sum(p.stat().st_size for _, p in segs[index:]) - offset  # that segment's rest, and all later
        damage = LogDamage(path, offset, position, reason, lost, _reached(segs, index, offset, self.itemsize))
        if position < self.start:  # the snapshot needs the log from its position: nothing to repair to
            raise WALError(f"{damage}; the snapshot needs the log from position {self.start}")
        if not self.repair:
            raise damage
        _cut(path, offset) if offset >= _HEAD.size else path.unlink()
        for _, later in segs[index + 1:]:
            later.unlink()
        fsync_path(self.directory)
        self.repaired = damage


def _reached(segs, index: int, offset: int, itemsize: int) -> int:
    """The furthest stream position that a whole record after ``offset`` of segment ``index`` (or in a later
    segment) shows the log reached: how far the damage reaches, at least (0: no such record)."""
    reached = 0
    for k, (_, path) in enumerate(segs[index:]):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if len(data) < _HEAD.size:
            continue
        version = _HEAD.unpack_from(data)[1]
        at = offset if k == 0 else _HEAD.size - 1
        while (at := _later_record(data, at)) is not None:
            length, start, _ = _FIELDS.unpack_from(data, at)
            symbols = (length - _prefix(version, data[at + _RECORD.size])) // itemsize
            reached = max(reached, start + max(symbols, 0))
            at += _RECORD.size + length - 1
    return reached


def replay(directory: Path, itemsize: int, start: int) -> Iterator[np.ndarray]:
    """The batches of the log from position ``start`` on (:class:`Replay`, without repair)."""
    return iter(Replay(directory, itemsize, start))


def _prefix(version: int, id_length: int) -> int:
    """The bytes of a record's payload before its symbols: the batch id's length and the id (version 3); none in
    version 2."""
    return 1 + id_length if version >= 3 else 0


def _is_seal(data: bytes, offset: int, expected: int) -> bool:
    """Whether a seal (:func:`seal_record`) for position ``expected`` stands at ``offset``."""
    return len(data) - offset >= _RECORD.size and data[offset: offset + _RECORD.size] == seal_record(expected)


def _check_record(data: bytes, offset: int, expected: int, itemsize: int,
                  version: int) -> tuple[str | None, bytes, bytes]:
    """(None, the payload, the batch id) when the record at ``offset`` is whole and continues the stream at
    ``expected``; else (what is wrong, b"", b"")."""
    rest = len(data) - offset
    if rest < _RECORD.size:
        return "its header is incomplete", b"", b""
    if not _valid_header(data, offset):
        return "its header does not match its checksum", b"", b""
    length, pos, crc, _ = _RECORD.unpack_from(data, offset)
    if _RECORD.size + length > rest:
        return f"its {length:,} bytes run past the end of the file", b"", b""
    body = data[offset + _RECORD.size: offset + _RECORD.size + length]
    id_length = body[0] if version >= 3 and body else 0
    symbols = length - _prefix(version, id_length)
    if symbols <= 0 or symbols % itemsize or id_length > MAX_BATCH_ID or pos != expected:
        return f"it does not continue the stream (position {pos}, expected {expected}; {length} bytes)", b"", b""
    if zlib.crc32(body) != crc:
        return "its symbols do not match their checksum", b"", b""
    return None, body, body[1:1 + id_length] if version >= 3 else b""


def _crash_shaped(data: bytes, offset: int) -> bool:
    """Whether the bytes from ``offset`` to the end of the file can be a write that a crash cut short: the file
    ends at a page boundary (a write stops between pages), or a sector from a sector boundary on reads as zeros
    (a page or a block that never reached the disk), or everything left does.  A cut anywhere else (a file
    truncated by hand), or a flipped bit in a record otherwise whole, is damage."""
    if len(data) % PAGE == 0:
        return True
    tail = np.frombuffer(data, dtype=np.uint8, offset=offset)
    if not tail.any():
        return True
    first = -(-offset // SECTOR) * SECTOR
    for s in range(first, len(data), SECTOR):
        if not np.frombuffer(data, dtype=np.uint8, offset=s, count=min(SECTOR, len(data) - s)).any():
            return True
    return False


def _later_record(data: bytes, offset: int) -> int | None:
    """The offset of a whole record (its header's checksum right, its payload within the file and matching its
    own) after ``offset``, or None: a torn write is the last one, so the log cannot go on after it.  Headers
    are looked for where a plausible payload length stands (vectorised: megabytes of garbage in milliseconds),
    then checked."""
    buf = np.frombuffer(data, dtype=np.uint8)
    n, step = len(data), 1 << 20
    for lo in range(offset + 1, n - _RECORD.size + 1, step):
        hi = min(lo + step, n - _RECORD.size + 1)
        if not buf[lo:hi + _RECORD.size - 1].any():  # (a zero-filled tail: no header there)
            continue
        length = (buf[lo:hi].astype(np.uint64) | buf[lo + 1:hi + 1].astype(np.uint64) << 8
                  | buf[lo + 2:hi + 2].astype(np.uint64) << 16 | buf[lo + 3:hi + 3].astype(np.uint64) << 24)
        where = np.arange(lo, hi, dtype=np.uint64)
        fits = (length > 0) & (where + _RECORD.size + length <= n)
        for p in np.flatnonzero(fits) + lo:
            p = int(p)
            if _valid_header(data, p):
                (length, _, crc) = _FIELDS.unpack_from(data, p)
                if zlib.crc32(data[p + _RECORD.size: p + _RECORD.size + length]) == crc:
                    return p
    return None


def _cut(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)
        f.flush()
        os.fsync(f.fileno())


def _valid_header(data: bytes, offset: int) -> bool:
    (hcrc,) = struct.unpack_from("<I", data, offset + _FIELDS.size)
    return zlib.crc32(data[offset: offset + _FIELDS.size]) == hcrc
