"""A learner's bytes as their non-zero words, deflated: how a stream snapshot (version 4) holds its learner.

A byte stream's learner is 58 MB whatever its stream has seen, because its
context tables are sized for any stream; hashing scatters what they hold,
so most 64 KiB blocks have something in them, but most 8-byte words are
zero: 2.6 % of them are not after 4 KB of log, 11 % after 300 KB, 22 %
after 2 MB (the logs of ``../shared/data/logs``).  Deflating the learner
whole (version 3) spent most of a hibernation and of a wake on those zeros,
some 80 ms each way for any stream.  Here only the non-zero words are
stored, with their places, and deflated: writing looks at every word once
(``numpy.flatnonzero``), reading scatters the stored words into zeroed
pieces.

Layout, little-endian: the learner's length in bytes ``n`` (u64), then one
zlib stream of records, one per :data:`PIECE` bytes of the learner (the
last one shorter)::

    count (u32) | count gaps (u16) | count words (u64)

A word is the 8 bytes at ``8 * place`` from the piece's start, its place
the sum of the gaps up to its own (the first gap is its place; each later
one is at least 1, the places increase); the learner's last word may run
past ``n``, the bytes beyond it zero.  Every
count and place is checked against the piece before it is used, and the
records inflate to at most what ``n`` allows, so a damaged or hostile file
is refused (ValueError) without taking more memory than its learner would.
"""

from __future__ import annotations

import struct
import zlib
from typing import Iterator

import numpy as np

DEFLATE_LEVEL = 1  # zlib's fastest: the places and words left are what there is to store
# The learner is read and written this many bytes at a time: below the size from which the C library maps a
# buffer of its own (``budget.MMAP_THRESHOLD``), so that the pieces reuse the heap's memory.
PIECE = 128 << 10
_WORDS = PIECE // 8  # a place fits a u16
_LENGTH = struct.Struct("<Q")
_COUNT = struct.Struct("<I")


def encoded(parts) -> Iterator[bytes]:
    """The bytes of ``parts`` (buffers, ``OnlineLearner.snapshot_parts``, written in turn) in this layout, in
    pieces to be written as they come: at most a piece of the learner is held beside it."""
    parts = [memoryview(p).cast("B") for p in parts]
    yield _LENGTH.pack(sum(len(p) for p in parts))
    deflate = zlib.compressobj(DEFLATE_LEVEL)
    piece = np.zeros(PIECE, np.uint8)
    filled = 0
    for part in parts:
        at = 0
        while at < len(part):
            take = min(PIECE - filled, len(part) - at)
            piece[filled:filled + take] = np.frombuffer(part[at:at + take], np.uint8)
            filled, at = filled + take, at + take
            if filled == PIECE:
                yield from _record(deflate, piece, filled)
                filled = 0
    if filled:
        yield from _record(deflate, piece, filled)
    tail = deflate.flush()
    if tail:
        yield tail


def _record(deflate, piece: np.ndarray, size: int) -> Iterator[bytes]:
    end = -(-size // 8) * 8
    piece[size:end] = 0  # the last word's bytes past the learner's end
    words = piece[:end].view("<u8")
    places = np.flatnonzero(words)
    gaps = np.diff(places, prepend=0)
    for buffer in (_COUNT.pack(len(places)), gaps.astype("<u2").tobytes(), words[places].tobytes()):
        out = deflate.compress(buffer)  # zlib releases the GIL while it works
        if out:
            yield out


class SparseReader:
    """The learner stored by :func:`encoded`, read from ``file`` (after the snapshot's statistics) for
    :func:`~seqd.core.online.snapshot.from_stream`: ``read(n)`` and ``read_into(buffer)`` give its bytes in
    turn, each piece scattered from its record.  ``bound``: the most bytes the learner may have."""

    def __init__(self, file, bound: int | None):
        head = file.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            raise ValueError("its learner is cut short")
        (self.size,) = _LENGTH.unpack(head)
        if bound is not None and self.size > bound:
            raise ValueError("its learner inflates past what its configuration holds")
        pieces = -(-self.size // PIECE)
        # the records' bytes at most (and one to find their end)
        self._records = Inflater(file, _COUNT.size * pieces + 10 * -(-self.size // 8) + 1)
        self._piece = np.zeros(_WORDS, "<u8")
        self._bytes = memoryview(self._piece.view(np.uint8))
        self._start = 0  # where the piece held starts in the learner
        self._end = 0  # and where it ends (nothing held yet)
        self._at = 0  # the next byte to give

    def read_into(self, buffer: memoryview) -> int:
        got = 0
        while got < len(buffer) and self._next():
            n = min(len(buffer) - got, self._end - self._at)
            offset = self._at - self._start
            buffer[got:got + n] = self._bytes[offset:offset + n]
            got += n
            self._at += n
        return got

    def read(self, n: int) -> bytes:
        out = bytearray(n)
        return bytes(out[:self.read_into(memoryview(out))])

    def _next(self) -> bool:
        """A byte to give is held (the next piece scattered if need be); False at the learner's end."""
        if self._at < self._end:
            return True
        if self._at >= self.size:
            return False
        size = min(PIECE, self.size - self._at)
        words = -(-size // 8)
        head = self._records.read(_COUNT.size)
        if len(head) < _COUNT.size:
            raise ValueError("its learner is cut short")
        (count,) = _COUNT.unpack(head)
        if count > words:
            raise ValueError("its learner is damaged (a piece holds more words than it has)")
        gaps = np.frombuffer(self._exactly(2 * count), "<u2")
        values = np.frombuffer(self._exactly(8 * count), "<u8")
        places = np.cumsum(gaps, dtype=np.int64)
        if count and (places[-1] >= words or (count > 1 and not gaps[1:].all())):
            raise ValueError("its learner is damaged (a word's place is out of order or outside its piece)")
        self._piece[:] = 0
        self._piece[places] = values
        if size % 8 and count and places[-1] == words - 1 and self._bytes[size:8 * words].tobytes().strip(b"\0"):
            raise ValueError("its learner is damaged (bytes past its end)")
        self._start, self._end = self._at, self._at + size
        return True

    def _exactly(self, n: int) -> bytes:
        data = self._records.read(n)
        if len(data) < n:
            raise ValueError("its learner is cut short")
        return data

    @property
    def finished(self) -> bool:
        """Every byte was given, the records end there, and nothing follows them."""
        return self._at >= self.size and not self._records.read(1) and self._records.finished


class Inflater:
    """A zlib stream read from a file in pieces, at most ``bound`` bytes out (a damaged or hostile file cannot
    make it take more)."""

    STEP = PIECE  # bytes out per call
    IN_STEP = 1 << 16  # bytes in per call: zlib hands back the input it did not use as a copy

    def __init__(self, file, bound: int | None):
        self._inflate = zlib.decompressobj()
        self._file = file
        self._ended = False  # the file has nothing more
        self._tail = b""
        self._left = bound if bound is not None else 1 << 62

    def read_into(self, buffer: memoryview) -> int:
        got = 0
        while got < len(buffer):
            chunk = self.read(min(self.STEP, len(buffer) - got))
            if not chunk:
                break
            buffer[got:got + len(chunk)] = chunk
            got += len(chunk)
        return got

    def read(self, n: int) -> bytes:
        if n > self._left:
            raise ValueError("its learner inflates past what its configuration holds")
        pieces = []
        while n > 0 and not self._inflate.eof:
            if not self._tail:
                self._tail = self._file.read(self.IN_STEP)
                if not self._tail:
                    self._ended = True
                    break  # the input ends before the stream does: cut short
            chunk = self._inflate.decompress(self._tail, n)  # zlib releases the GIL while it works
            self._tail = self._inflate.unconsumed_tail
            if chunk:
                pieces.append(chunk)
                n -= len(chunk)
                self._left -= len(chunk)
        return b"".join(pieces)

    @property
    def finished(self) -> bool:
        """The stream ended, and nothing follows it."""
        return (self._inflate.eof and not self._tail and not self._inflate.unused_data
                and (self._ended or not self._file.read(1)))
