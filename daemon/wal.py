"""A stream's write-ahead log: every accepted batch, on disk before it is acknowledged.

A log is a sequence of segment files ``wal-<start>.log`` in the stream's
directory, ``<start>`` being the stream position (symbols accepted before) of
its first record, in 20 digits so that names sort as numbers.  A segment is a
header (magic, version, bytes per symbol) and records::

    u32 payload length | u32 crc32(start position, payload) | u64 start position | payload

The payload is the batch's symbols, one byte each (alphabets of at most 256
symbols) or two little-endian bytes.  Positions are contiguous across records
and segments; replay checks it.  After a snapshot at position P, a new
segment starts and every segment that ends at or before P is deleted, so the
log holds what the snapshot does not.

A record cut short at the end of the last segment is a write the crash
interrupted, which was therefore never acknowledged: replay drops it (and
truncates the file).  Damage anywhere else is an error: acknowledged data
would be lost, and the operator must know.
"""

from __future__ import annotations

import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Iterator

import numpy as np

MAGIC = b"SEQDWAL\x00"
VERSION = 1
_HEAD = struct.Struct("<8sBB6x")
_RECORD = struct.Struct("<IIQ")
_POS = struct.Struct("<Q")


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


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriteAheadLog:
    """The appending side.  One thread appends, rotates and closes (the daemon's I/O loop); :meth:`sync`
    may run in another thread meanwhile (the daemon's group commit)."""

    def __init__(self, directory: Path, itemsize: int, position: int, *, fsync: bool = True):
        self.directory = Path(directory)
        self.itemsize = itemsize
        self.position = position  # stream length after the last record written
        self.fsync_enabled = fsync
        self._file = None
        self._appended = 0  # records written so far
        self._synced = 0  # records an fsync has covered: those written before it began
        self._lock = threading.Lock()  # an fsync never meets a file being closed (its descriptor reused)
        self._open_segment()

    def _open_segment(self) -> None:
        if self._file is not None:
            with self._lock:
                self._file.close()
        path = self.directory / segment_name(self.position)
        fresh = not path.exists() or path.stat().st_size < _HEAD.size
        self._file = open(path, "ab")
        if fresh:
            self._file.truncate(0)
            self._file.write(_HEAD.pack(MAGIC, VERSION, self.itemsize))
            self._file.flush()
            if self.fsync_enabled:
                os.fsync(self._file.fileno())
                fsync_dir(self.directory)

    def append(self, symbols: np.ndarray) -> int:
        """Write one batch (not yet synced: see :meth:`sync`); returns its start position.

        On failure (disk full, I/O error) the segment is cut back to where it
        was, so the log never holds a partial record that replay would reject.
        """
        payload = np.ascontiguousarray(symbols, dtype=_dtype(self.itemsize)).tobytes()
        start = self.position
        crc = zlib.crc32(payload, zlib.crc32(_POS.pack(start)))
        offset = self._file.tell()
        try:
            self._file.write(_RECORD.pack(len(payload), crc, start))
            self._file.write(payload)
            self._file.flush()
        except OSError:
            try:
                self._file.truncate(offset)
                self._file.seek(offset)
            except OSError:
                pass
            raise
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
            target = self._appended
            if target > self._synced and self._file is not None:
                os.fsync(self._file.fileno())
                self._synced = target

    def checkpoint(self, snapshot_position: int) -> None:
        """A snapshot now holds the stream up to ``snapshot_position``: start a new segment and
        delete the segments it makes redundant."""
        self.sync()
        if self._file.tell() > _HEAD.size:  # the current segment has records: close it, start another
            self._open_segment()
        segs = segments(self.directory)
        for (start, path), (next_start, _) in zip(segs, segs[1:]):
            if next_start <= snapshot_position:
                path.unlink(missing_ok=True)

    def close(self) -> None:
        if self._file is not None:
            self.sync()
            with self._lock:
                self._file.close()
                self._file = None


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
        if expected is not None and seg_start != expected:
            raise WALError(f"{path}: starts at position {seg_start}, but the previous segment ends at {expected}")
        expected = seg_start
        offset = _HEAD.size
        while offset < len(data):
            if offset + _RECORD.size > len(data):
                torn = True
            else:
                length, crc, pos = _RECORD.unpack_from(data, offset)
                body = data[offset + _RECORD.size: offset + _RECORD.size + length]
                torn = len(body) < length or length % itemsize != 0
                if not torn and (crc != zlib.crc32(body, zlib.crc32(_POS.pack(pos))) or pos != expected):
                    if last and offset + _RECORD.size + length == len(data):
                        torn = True  # a last record whose bytes did not all reach the disk
                    else:
                        raise WALError(f"{path}: record at byte {offset} is damaged (checksum or position)")
            if torn:
                if not last:
                    raise WALError(f"{path}: record at byte {offset} is cut short")
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


def log_end(directory: Path, itemsize: int, start: int) -> int:
    """The stream length the log records (``start`` if it records nothing after it)."""
    end = start
    for batch in replay(directory, itemsize, start):
        end += len(batch)
    return end
