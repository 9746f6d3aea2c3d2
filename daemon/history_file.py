"""A stream's history file: the symbols its learner remembers, append-only, so that no snapshot rewrites them.

A byte stream's learner keeps the last 2^history_bits symbols it has seen
(64 MiB by default) for its match model and its line and field sources.
Stored in every snapshot, that ring would be rewritten whole each time, and
read whole at each wake.  So a stream's snapshot leaves it out
(``OnlineLearner.snapshot_parts(history=False)``: version 10 of the learner's
format says how much history it needs, from which position), and the stream
keeps it here, in ``history`` beside its snapshot: at each snapshot, the
symbols learned since the one before are appended and made durable *before*
the snapshot that needs them is renamed into place.  A hibernated stream
holds none of it in memory; a wake reads back the symbols its ring held.

Layout, little-endian::

    header   magic "SEQDHIS\\x01" | bytes per symbol (u8) | 7 zero bytes | first position (u64) | crc32 (u32)
    records  n (u32) | crc32 of the symbols (u32) | n symbols (1 or 2 bytes each)

The file holds the stream positions [first, end), end = first plus the
symbols of its records.  Every record ends at a snapshot's position, so a
snapshot's history ends at a record's end.  When the file holds more than
twice the ring, it is written again holding the ring alone (a new file,
renamed over): a rewrite costs the ring's size once per ring's worth of
symbols, and the file is never more than three rings long.

What a crash can leave, and what :meth:`HistoryFile.open` makes of it:

* records past the snapshot's position (appended for a snapshot that was
  never renamed into place): :meth:`HistoryFile.keep_until` cuts them off,
  and the write-ahead log's replay learns those symbols again;
* a record cut short at the end (the crash came mid-append): cut off, for the
  same reason;
* anything else that does not read back (a checksum, a record that runs past
  the end in the middle of the file, a file that does not reach back far
  enough) is damage, and a ``ValueError`` naming the file and the offset:
  the learner cannot be restored bit for bit without it.
"""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import numpy as np

from . import wal

NAME = "history"
MAGIC = b"SEQDHIS\x01"
_HEAD = struct.Struct("<8sB7xQ")
_HEAD_SIZE = _HEAD.size + 4  # and its crc32
_RECORD = struct.Struct("<II")
RECORD_SYMBOLS = 1 << 20  # symbols per record at most: a damaged byte costs a record's checksum, not the file's


class HistoryFile:
    """The history file of a stream whose learner keeps its symbols in a ring (:mod:`history_file`)."""

    def __init__(self, path: Path, itemsize: int, first: int = 0, records: list | None = None,
                 fsync: bool = True):
        self.path = path
        self.itemsize = itemsize
        self.first = first
        self.records = records or []  # (offset of the record's symbols, its first position, its length)
        self.fsync = fsync

    @property
    def end(self) -> int:
        """The position after the last symbol held."""
        return self.records[-1][1] + self.records[-1][2] if self.records else self.first

    @property
    def size(self) -> int:
        """Bytes on disk."""
        return self.records[-1][0] + self.records[-1][2] * self.itemsize if self.records else _HEAD_SIZE

    # -- reading -------------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: Path, itemsize: int, fsync: bool = True) -> "HistoryFile":
        """The file in ``directory``, its records listed (their symbols are read when asked for); an empty
        one, held nowhere yet, if there is none.  A record cut short at the end is cut off."""
        path = directory / NAME
        if not path.exists():
            return cls(path, itemsize, fsync=fsync)
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(_HEAD_SIZE)
            if len(head) < _HEAD_SIZE or head[:8] != MAGIC or zlib.crc32(head[:-4]) != struct.unpack("<I", head[-4:])[0]:
                raise ValueError(f"{path}: not a seqd history file, or its header is damaged")
            _, width, first = _HEAD.unpack(head[:-4])
            if width != itemsize:
                raise ValueError(f"{path}: holds {width}-byte symbols, the stream's are {itemsize}-byte")
            records, offset, position = [], _HEAD_SIZE, first
            while offset < size:
                raw = f.read(_RECORD.size)
                n = struct.unpack("<I", raw[:4])[0] if len(raw) == _RECORD.size else 0
                if len(raw) < _RECORD.size or n == 0 or offset + _RECORD.size + n * itemsize > size:
                    break  # cut short by a crash mid-append: what follows was never a snapshot's
                records.append((offset + _RECORD.size, position, n))
                offset += _RECORD.size + n * itemsize
                position += n
                f.seek(offset)
        history = cls(path, itemsize, first, records, fsync)
        if offset < size:
            history._cut(offset)
        return history

    def __call__(self, first: int, views: list[memoryview]) -> None:
        """Fill the byte buffers ``views`` in turn with the symbols from position ``first`` on (the learner's
        ``HistoryReader``: its ring's one or two parts), each record they touch checked against its
        checksum."""
        need = sum(len(v) for v in views) // self.itemsize
        if need == 0:
            return
        if first < self.first or first + need > self.end or not self.path.exists():
            held = f"holds positions {self.first} to {self.end}" if self.path.exists() else "is missing"
            raise ValueError(f"{self.path}: {held}, the learner needs positions {first} to {first + need}")
        fill = _Filler(views)
        with open(self.path, "rb") as f:
            for offset, start, n in self.records:
                if start + n <= first or start >= first + need:
                    continue
                f.seek(offset - _RECORD.size)
                raw = f.read(_RECORD.size + n * self.itemsize)
                symbols = memoryview(raw)[_RECORD.size:]
                if len(symbols) < n * self.itemsize or zlib.crc32(symbols) != _RECORD.unpack_from(raw)[1]:
                    raise ValueError(f"{self.path}: the record at byte {offset - _RECORD.size} is damaged "
                                     f"(positions {start} to {start + n})")
                lo, hi = max(first, start), min(first + need, start + n)
                fill(symbols[(lo - start) * self.itemsize:(hi - start) * self.itemsize])

    # -- writing -------------------------------------------------------------------------------
    def append(self, first: int, pieces: list[np.ndarray]) -> None:
        """Add the symbols ``pieces`` hold, from stream position ``first`` (= :attr:`end`), durably."""
        if first != self.end:
            raise ValueError(f"{self.path}: appending at position {first}, the file ends at {self.end}")
        if not sum(len(p) for p in pieces):
            return
        symbols = np.concatenate(pieces) if len(pieces) != 1 else pieces[0]
        if not self.path.exists():
            self._write_new(first, [])
        fd = os.open(self.path, os.O_WRONLY)
        try:
            offset = self.size
            for at in range(0, len(symbols), RECORD_SYMBOLS):
                chunk = np.ascontiguousarray(symbols[at:at + RECORD_SYMBOLS].astype(_dtype(self.itemsize),
                                                                                   copy=False))
                data = memoryview(chunk.view(np.uint8))
                wal.write_all(fd, _RECORD.pack(len(chunk), zlib.crc32(data)), offset)
                wal.write_all(fd, data, offset + _RECORD.size)
                self.records.append((offset + _RECORD.size, first + at, len(chunk)))
                offset += _RECORD.size + len(data)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def rewrite(self, first: int, pieces: list[np.ndarray]) -> None:
        """Replace the file by one holding the symbols ``pieces`` hold from position ``first`` (a new file,
        fsynced, renamed over the old one)."""
        tmp = self.path.with_name(NAME + ".tmp")
        self._write_new(first, [], path=tmp)
        replacement = HistoryFile(tmp, self.itemsize, first, [], self.fsync)
        replacement.append(first, pieces)
        os.replace(tmp, self.path)
        if self.fsync:
            wal.fsync_path(self.path.parent)
        self.first, self.records = first, replacement.records

    def keep_until(self, position: int) -> None:
        """Drop what the file holds past ``position`` (a snapshot's, where a record ends: the records after it
        were appended for a snapshot that never took its place)."""
        if position >= self.end:
            return
        kept = [r for r in self.records if r[1] + r[2] <= position]
        if (kept[-1][1] + kept[-1][2] if kept else self.first) != position:
            raise ValueError(f"{self.path}: no record ends at the snapshot's position {position}")
        self.records = kept
        self._cut(self.size)

    def _cut(self, size: int) -> None:
        with open(self.path, "r+b") as f:
            f.truncate(size)
            if self.fsync:
                os.fsync(f.fileno())

    def _write_new(self, first: int, records: list, path: Path | None = None) -> None:
        head = _HEAD.pack(MAGIC, self.itemsize, first)
        path = path or self.path
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, wal.PRIVATE_FILE)
        try:
            wal.write_all(fd, head + struct.pack("<I", zlib.crc32(head)), 0)
            if self.fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if path == self.path:
            self.first, self.records = first, records


def _dtype(itemsize: int) -> np.dtype:
    return np.dtype(np.uint8) if itemsize == 1 else np.dtype("<u2")


class _Filler:
    """Writes bytes into a list of buffers, one after the other."""

    def __init__(self, views: list[memoryview]):
        self.views = [v for v in views if len(v)]
        self.k = self.at = 0

    def __call__(self, data: memoryview) -> None:
        while len(data):
            view = self.views[self.k]
            n = min(len(view) - self.at, len(data))
            view[self.at:self.at + n] = data[:n]
            data, self.at = data[n:], self.at + n
            if self.at == len(view):
                self.k, self.at = self.k + 1, 0
