"""Decoding a ``.sqd`` stream: one container or several back to back, chains of blocks on ``-T`` threads.

A stream may hold several containers one after another (``cat a.sqd b.sqd``,
or ``seqd compress -c a b``), as a gzip file may hold several members: they
decode in turn to the concatenation of their originals.  Anything else after
an end record is an error.  :func:`decode_stream` serves ``seqd decompress``
(the bytes go to the output) and ``seqd decompress -t`` (they go nowhere).
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from seqd.core import container
from seqd.core.container import Block, BlockDecoder, End, FormatError, Header

from ._parallel import ordered_map

PROGRESS_STEP = 1 << 14  # bytes a block's decoder codes between two progress reports (~0.3 s at 60 kB/s)


class Reader:
    """A binary reader that counts the bytes taken from it and can be given some back (a look ahead)."""

    def __init__(self, raw):
        self.raw, self.count, self._back = raw, 0, b""

    def read(self, n: int = -1) -> bytes:
        if self._back:
            data, self._back = (self._back, b"") if n < 0 or n >= len(self._back) else \
                (self._back[:n], self._back[n:])
            if n < 0 or len(data) < n:
                data += self.raw.read(-1 if n < 0 else n - len(data))
        else:
            data = self.raw.read(n)
        self.count += len(data)
        return data

    def unread(self, data: bytes) -> None:
        self._back = data + self._back
        self.count -= len(data)


@dataclass
class Decoded:
    """What a stream held: original bytes, blocks, containers, and the first container's header."""

    length: int = 0
    blocks: int = 0
    containers: int = 0
    header: Header | None = None


def decode_stream(reader: Reader, target, threads: int, salvage: bool, warnings: list[str], progress,
                  size: int | None = None, check: Callable[[Header], None] | None = None) -> Decoded:
    """Decode every container of ``reader`` into ``target.write``; damage is a FormatError unless ``salvage``.

    ``size``: the stream's length in bytes when known, for the progress line's share done.  ``check`` is
    given each container's header before its model is built (and may refuse it, e.g. over a memory limit).
    """
    result = Decoded()
    for start, header in containers(reader):
        if check is not None:
            check(header)
        result.header = result.header or header
        result.containers += 1
        n_out, blocks, lost = decode_records(reader, header, target, threads, salvage, warnings, progress,
                                             offset=start, done=result.length, size=size)
        result.length += n_out
        result.blocks += blocks
        if lost:
            break
    return result


def containers(reader: Reader) -> Iterator[tuple[int, Header]]:
    """Each container of the stream in turn: where it starts, and its header.

    The caller reads a container's records before asking for the next one.
    The stream ends after an end record, or another container begins there;
    anything else is a FormatError.
    """
    first = True
    while True:
        start = reader.count
        if not first:
            ahead = reader.read(len(container.MAGIC))
            if not ahead:
                return
            if ahead != container.MAGIC:
                raise FormatError(f"unexpected data after the end record (at byte {start})")
            reader.unread(ahead)
        first = False
        yield start, container.read_header(reader)


def decode_records(reader, header: Header, target, threads: int, salvage: bool, warnings: list[str], progress,
                   offset: int = 0, done: int = 0, size: int | None = None) -> tuple[int, int, bool]:
    """Decode one container's blocks after its header, chains of CONTINUES blocks on one learner.

    ``offset``: where the container starts in the stream (error messages give
    stream offsets); ``done``: original bytes decoded before it (progress).
    Returns (bytes written, blocks, whether the framing was lost).
    """
    n_out = crc = 0
    blocks = 0
    warned = len(warnings)  # warnings about earlier containers
    inflight: dict[int, int] = {}  # block index -> bytes decoded so far, for the progress line
    lock = threading.Lock()

    def report(key: int) -> Callable[[int], None]:
        def show(k: int) -> None:
            with lock:
                inflight[key] = k
                decoding = sum(inflight.values())
            progress.show(done + n_out + decoding, fraction=reader.count / size if size else None)
        return show

    def emit(part: bytes):
        nonlocal n_out, crc
        target.write(part)
        n_out += len(part)
        crc = zlib.crc32(part, crc)

    def decode_chain(chain: list[Block]) -> list[bytes | FormatError]:
        decoder = BlockDecoder(header.config, header.build)
        out: list[bytes | FormatError] = []
        for block in chain:
            try:
                out.append(decoder.decode(block, progress=report(block.index), step=PROGRESS_STEP))
            except FormatError as exc:
                out.append(exc)
            finally:
                with lock:
                    inflight.pop(block.index, None)
        return out

    def collect(results) -> None:
        for part in results:
            if isinstance(part, FormatError):
                if not salvage:
                    raise part
                warnings.append(f"{part}; skipped")
            else:
                emit(part)

    end: End | None = None
    lost: FormatError | None = None

    def chains() -> Iterator[list[Block]]:
        """The blocks up to the end record, as chains: a FRESH block and the CONTINUES blocks after it."""
        nonlocal end, lost, blocks
        chain: list[Block] = []
        try:
            for record in container.read_records(reader, header, offset + header.size):
                if isinstance(record, End):
                    end = record
                    break
                blocks += 1
                if record.kind == container.FRESH and chain:
                    yield chain
                    chain = []
                chain.append(record)
        except FormatError as exc:
            if not salvage or "truncated" not in str(exc) and "damaged: its record" not in str(exc):
                raise
            lost = exc  # the framing is lost: keep what decodes before it
        if chain:
            yield chain

    for results in ordered_map(decode_chain, chains(), threads):
        collect(results)
    if lost is not None:
        warnings.append(f"{lost}; the rest of the file is lost")
        return n_out, blocks, True
    if len(warnings) == warned and (end.total_length != n_out or end.crc != crc):
        raise FormatError("the end record does not match the decoded data (damaged end record)")
    return n_out, blocks, False


class Sink:
    """A target that keeps nothing (``seqd decompress -t``)."""

    def write(self, data: bytes) -> None:
        pass
