"""A stream's write-ahead log: every accepted batch, on disk before it is acknowledged.

A log is a sequence of segment files ``wal-<start>.log`` in the stream's
directory, ``<start>`` being the stream position (symbols accepted before) of
its first record, in 20 digits so that names sort as numbers.  A segment is a
header (magic, version, bytes per symbol) and records::

    u32 payload length | u64 start position | u32 crc32(payload) | u32 crc32(the 16 bytes before) | payload

The payload is the batch's symbols, one byte each (alphabets of at most 256
symbols) or two little-endian bytes.  Positions are contiguous across records
and segments; replay checks it.  After a snapshot at position P, a new
segment starts and every segment that ends at or before P is deleted, so the
log holds what the snapshot does not.

A record cut short at the end of the last segment is a write the crash
interrupted, which was therefore never acknowledged: replay drops it (and
truncates the file).  "Cut short" is told from "damaged" by the header's own
checksum: a record whose intact header says it runs past the end of the file,
a header that is itself incomplete, or zeros to the end of the file.  Any
other damage is an error: acknowledged data would be lost, and the operator
must know.  So is a log that does not reach back to the snapshot's position.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

# every file and folder the daemon creates is its user's alone, whatever the umask: the logs hold the
# raw published data, the snapshots what was learned from it
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700

MAGIC = b"SEQDWAL\x00"
VERSION = 2
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
                write_all(fd, _HEAD.pack(MAGIC, VERSION, self.itemsize), 0)
                size = _HEAD.size
                if self.fsync_enabled:
                    os.fsync(fd)
                    fsync_path(self.directory)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._size = fd, size

    def append(self, symbols: np.ndarray) -> int:
        """Write one batch (not yet synced: see :meth:`sync`); returns its start position.

        On failure (disk full, I/O error) the segment is cut back to where it
        was, so the log never holds a partial record that replay would reject.
        """
        payload = np.ascontiguousarray(symbols, dtype=_dtype(self.itemsize)).tobytes()
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
        if self._size > _HEAD.size:  # the current segment has records: close it, start another
            self._open_segment()
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


def write_all(fd: int, data, offset: int) -> int:
    """Write the buffer ``data`` at ``offset`` whole (``pwrite`` may write less); returns the offset after it."""
    view = memoryview(data).cast("B")
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written
    return offset


def replay(directory: Path, itemsize: int, start: int) -> Iterator[np.ndarray]:
    """The batches of the log from position ``start`` on, in order (a batch straddling ``start``
    yields its tail).  Truncates a torn last record; raises :class:`WALError` on other damage."""
    segs = segments(Path(directory))
    expected = None
    for index, (seg_start, path) in enumerate(segs):
        last = index == len(segs) - 1
        with open(path, "rb") as f:
            data = f.read()
        if len(data) < _HEAD.size:
            if last:
                continue  # created, crash before its header was written
            raise WALError(f"{path}: shorter than a segment header")
        magic, version, size = _HEAD.unpack_from(data)
        if magic != MAGIC or version != VERSION or size != itemsize:
            raise WALError(f"{path}: not a version-{VERSION} write-ahead log of {itemsize}-byte symbols")
        if expected is None and seg_start > start:
            raise WALError(f"{path}: the log starts at position {seg_start}, after the snapshot's {start} "
                           "(a snapshot or a segment is missing)")
        if expected is not None and seg_start != expected:
            raise WALError(f"{path}: starts at position {seg_start}, but the previous segment ends at {expected}")
        expected = seg_start
        offset = _HEAD.size
        while offset < len(data):
            torn = _torn(data, offset)
            if torn is None:
                length, pos, crc, _ = _RECORD.unpack_from(data, offset)
                body = data[offset + _RECORD.size: offset + _RECORD.size + length]
                if length % itemsize or pos != expected:
                    raise WALError(f"{path}: record at byte {offset} does not continue the stream "
                                   f"(position {pos}, expected {expected})")
                if zlib.crc32(body) != crc:
                    if not (last and offset + _RECORD.size + length == len(data)):
                        raise WALError(f"{path}: record at byte {offset} is damaged (payload checksum)")
                    torn = "its last bytes did not reach the disk"
            if torn is not None:
                if not last:
                    raise WALError(f"{path}: record at byte {offset} is cut short or damaged ({torn})")
                if torn == "damaged":
                    raise WALError(f"{path}: record at byte {offset} is damaged (header checksum)")
                with open(path, "r+b") as f:
                    f.truncate(offset)
                break
            symbols = np.frombuffer(body, dtype=_dtype(itemsize)).astype(np.int64)
            end = pos + len(symbols)
            if end > start:
                yield symbols[max(0, start - pos):]
            expected = end
            offset += _RECORD.size + length
    if expected is not None and expected < start:
        raise WALError(f"{directory}: the log ends at position {expected}, before the snapshot's {start}")


def _torn(data: bytes, offset: int) -> str | None:
    """Why the record at ``offset`` is an interrupted write, "damaged" if its header is, or None if whole."""
    rest = len(data) - offset
    if rest < _RECORD.size:
        return "incomplete header"
    if not _valid_header(data, offset):
        # a crash may keep the first part of the last write and lose the rest: torn, unless a whole record
        # further on shows that the log went on after this one (then acknowledged data would be lost)
        later = any(_valid_header(data, p) for p in range(offset + 1, len(data) - _RECORD.size + 1))
        return "damaged" if later else "the last write did not all reach the disk"
    (length,) = struct.unpack_from("<I", data, offset)
    if _RECORD.size + length > rest:
        return "the record runs past the end of the file"
    return None


def _valid_header(data: bytes, offset: int) -> bool:
    (hcrc,) = struct.unpack_from("<I", data, offset + _FIELDS.size)
    return zlib.crc32(data[offset: offset + _FIELDS.size]) == hcrc
