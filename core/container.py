"""The ``.sqd`` container: a header, independently decodable blocks, an end record (``docs/format.md``).

Sans-I/O: the functions here turn bytes into bytes and parse records from a
binary reader; files, pipes, progress and threads are the caller's business
(``seqd compress`` / ``seqd decompress``).

    >>> from seqd.core.container import compress, decompress
    >>> data = b"2026-11-22 08:00:01 INFO started\\n" * 20
    >>> packed = compress(data)
    >>> decompress(packed) == data, len(packed) < len(data)
    (True, True)
"""

from __future__ import annotations

import dataclasses
import io
import json
import struct
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Iterator

import numpy as np

from .faces import DEFAULT, face_named
from .kit.face import Unbuildable
from .limits import (DEFAULT_MEMORY_LIMIT, byte_face, check_config, check_memory, check_settings, encoded_bound,
                     parse_meta)

MAGIC = b"\x89SQD\r\n\x1a\n"  # non-ASCII first byte and CR LF / ^Z / LF catch text-mode mangling, as PNG's does
# 1: exp/log/tanh from the C library; 2: seqd's own; 3: chains of any length; 4: the bitwise model (docs/format.md).
# Each byte model's face says which it writes and reads (the GLNN byte model's files are still format 3).
FORMAT_VERSION = 4
OLDEST_FORMAT = 1  # every version from here to FORMAT_VERSION decodes (tests/corpus)
DEFAULT_BLOCK_SIZE = 4 << 20
MAX_BLOCK_SIZE = 1 << 30
MAX_HEADER_JSON = 1 << 20  # bytes of the header's JSON text
READ_PIECE = 1 << 20  # a record's payload is read in pieces of this size: a length field is not trusted
FRESH, CONTINUES = 0, 1  # a block starts a new learner, or continues the previous block's

_HEAD = struct.Struct("<8sHHI")  # magic, version, reserved, header length
_BLOCK = struct.Struct("<BIIII")  # kind, original length, payload length, crc32 original, crc32 payload
_END = struct.Struct("<QI")  # total original length, crc32 of the whole original
END_KIND = 0xFF


class FormatError(ValueError):
    """The input is not a valid ``.sqd`` stream; the message says what is wrong and where."""


def format_of(config) -> int:
    """The format a file of ``config``'s model is written in (its face's)."""
    return byte_face(config).writes


@dataclass
class Header:
    config: object  # a byte model's configuration (core/faces.py)
    block_size: int
    build: str  # what produced the file: seqd, numba and numpy versions, the CPU target (informative)
    size: int = 0  # bytes the header took in the file it was read from
    preset: str | None = None  # the preset a file read names (None: one to write, which names its model's newest,
    # and the settings that differ from it)
    version: int | None = None  # the format version a file read has (None: one to write, format_of(config))
    # the most original bytes a chain (a FRESH block and the CONTINUES blocks after it) holds; None: any number
    # (the whole file may be one chain, learned by one model).  Before format 3, the block size.
    chain_size: int | None = None

    def __post_init__(self):
        face = byte_face(self.config)
        self.preset = self.preset or face.versions.preset
        self.version = self.version or face.writes

    def to_bytes(self) -> bytes:
        check_config(self.config)
        face = byte_face(self.config)
        settings = json.loads(json.dumps(dataclasses.asdict(self.config)))  # tuples as lists, like the presets
        newest = face.versions.presets[face.versions.preset]
        changed = {k: v for k, v in settings.items() if newest.get(k, object()) != v}
        meta = {"preset": face.versions.preset, "config": changed, "block_size": self.block_size,
                "chain_size": self.chain_size or 0, "build": self.build}
        if face.writes >= 4:  # a format 4 header names its learner (formats 1-3 were the GLNN byte model's alone)
            meta["learner"] = face.header_name
        body = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
        head = _HEAD.pack(MAGIC, face.writes, 0, len(body)) + body
        return head + struct.pack("<I", zlib.crc32(head))


def build_info() -> str:
    """What wrote the file: seqd, Numba and NumPy versions and the CPU target (for error messages only)."""
    from importlib.metadata import PackageNotFoundError, version

    import llvmlite.binding as llvm
    import numba

    try:
        seqd_version = version("seqd")
    except PackageNotFoundError:  # a checkout that is not installed
        seqd_version = "unknown"
    cpu = numba.config.CPU_NAME or llvm.get_host_cpu_name()
    return f"seqd {seqd_version}, numba {numba.__version__}, numpy {np.__version__}, cpu {cpu}"


# Compression levels (seqd compress -1 ... -9): the default byte model's newest preset with the changes its face
# gives for each (bits/face.py).  A file stores its model's settings (its header names a preset and the settings
# that differ from it), so the levels may be chosen anew in any release without touching the format.
DEFAULT_LEVEL = 6


def default_config():
    """The model ``seqd compress`` writes with by default: the default byte model's newest preset."""
    return DEFAULT.preset()


def level_config(level: int):
    """The model of compression level ``level`` (1 fastest and smallest in memory, 6 the default, 9 the most
    compression)."""
    if level not in DEFAULT.level_names:
        raise ValueError(f"compression level must be 1 to 9, got {level}")
    return DEFAULT.preset(**DEFAULT.levels[DEFAULT.level_names[level]])


# -- writing ----------------------------------------------------------------------------------------

class BlockEncoder:
    """Codes blocks of bytes; a learner is kept between calls only for CONTINUES blocks."""

    def __init__(self, config):
        check_config(config)  # alphabet_cap 256, and every setting a reader accepts (core/limits.py)
        self.face = byte_face(config)
        self.face.check_header(self.face.writes, self.face.versions.preset, config)  # what its format refuses
        self.config = config
        self.learner = None

    def encode(self, data: bytes, continues: bool = False, progress=None, step: int = 1 << 16) -> bytes:
        """One block record: a fresh learner unless ``continues`` (and a previous block exists).

        ``progress(bytes coded, bytes of payload written so far)`` is called every ``step`` bytes.
        """
        if not continues or self.learner is None:
            self.learner = self.face.solo(self.config)
            continues = False
        x = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
        out = np.zeros(encoded_bound(self.config, len(x)), dtype=np.uint8)
        coder = self.face.coder(self.config)
        for start in range(0, len(x), step):
            coder.encode(self.learner, x[start:start + step], out)
            if progress is not None:
                progress(min(start + step, len(x)), coder.written())
        payload = out[:coder.finish(out)].tobytes()
        return _BLOCK.pack(CONTINUES if continues else FRESH, len(data), len(payload), zlib.crc32(data),
                           zlib.crc32(payload)) + payload


def end_record(total_length: int, crc: int) -> bytes:
    return struct.pack("<B", END_KIND) + _END.pack(total_length, crc)


def compress(data: bytes, config=None, block_size: int = DEFAULT_BLOCK_SIZE,
             chain_size: int | None = None) -> bytes:
    """The whole ``.sqd`` file for ``data``, in memory (for files, ``seqd compress`` streams).

    Every block continues the learner of the block before it, so the whole input is learned as one stream,
    unless ``chain_size`` bounds a chain: a fresh learner then starts once a chain holds that many bytes
    (:func:`continues`)."""
    config = config or default_config()
    check_block_size(block_size)
    check_chain_size(chain_size, block_size)
    encoder = BlockEncoder(config)  # refuses a model the container cannot code, before anything is written
    parts = [Header(config, block_size, build_info(), chain_size=chain_size).to_bytes()]
    chain = 0
    for start in range(0, len(data), block_size):
        block = data[start:start + block_size]
        go_on = continues(chain, len(block), chain_size)
        parts.append(encoder.encode(block, continues=go_on))
        chain = chain + len(block) if go_on else len(block)
    parts.append(end_record(len(data), zlib.crc32(data)))
    return b"".join(parts)


def check_block_size(block_size: int) -> None:
    if not 1 <= block_size <= MAX_BLOCK_SIZE:
        raise ValueError(f"block size must be in [1, {MAX_BLOCK_SIZE}] bytes, got {block_size}")


def check_chain_size(chain_size: int | None, block_size: int) -> None:
    if chain_size is not None and not block_size <= chain_size < 1 << 62:
        raise ValueError(f"a chain holds whole blocks: chain size {chain_size} is below the block size {block_size}"
                         if chain_size < block_size else f"chain size {chain_size} is out of range")


def continues(chain: int, length: int, chain_size: int | None) -> bool:
    """Whether a block of ``length`` bytes continues the chain that holds ``chain`` bytes so far (its learner
    goes on learning) rather than starting a fresh one: always, unless a chain may hold no more than
    ``chain_size`` bytes (``None``: any number), and never for the first block."""
    return chain > 0 and (chain_size is None or chain + length <= chain_size)


# -- reading ----------------------------------------------------------------------------------------

@dataclass
class Block:
    index: int
    offset: int  # of the block record in the file
    kind: int
    length: int
    crc: int
    payload: bytes
    payload_ok: bool


@dataclass
class End:
    total_length: int
    crc: int


def _read_exact(reader: BinaryIO, n: int, what: str, offset: int) -> bytes:
    """``n`` bytes, read in pieces: memory follows what the file holds, not what a length field claims."""
    pieces, got = [], 0
    while got < n:
        piece = reader.read(min(n - got, READ_PIECE))
        if not piece:
            raise FormatError(f"truncated file: {what} at byte {offset} is cut short ({got} of {n} bytes)")
        pieces.append(piece)
        got += len(piece)
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def read_header(reader: BinaryIO) -> Header:
    head = reader.read(_HEAD.size)
    if len(head) < len(MAGIC) or head[:len(MAGIC)] != MAGIC:
        raise FormatError("not a seqd compressed file (wrong magic)")
    if len(head) < _HEAD.size:
        raise FormatError("truncated file: the header is cut short")
    _, version, _, hlen = _HEAD.unpack(head)
    if version > FORMAT_VERSION:
        raise FormatError(f"format version {version} is newer than this seqd reads ({FORMAT_VERSION}): upgrade seqd")
    if version < OLDEST_FORMAT:
        raise FormatError(f"damaged header (format version {version} does not exist)")
    if hlen > MAX_HEADER_JSON:
        raise FormatError(f"damaged header (implausible length: {hlen} bytes of settings)")
    body = _read_exact(reader, hlen, "the header", _HEAD.size)
    (crc,) = struct.unpack("<I", _read_exact(reader, 4, "the header checksum", _HEAD.size + hlen))
    if zlib.crc32(head + body) != crc:
        raise FormatError("damaged header (checksum mismatch)")
    try:  # nothing in the header is trusted (core/limits.py): every key and setting is checked
        meta = parse_meta(body)
        try:
            face = face_named(meta.get("learner", "online"))  # formats 1-3: the GLNN byte model's
        except ValueError as exc:
            raise FormatError(str(exc)) from None
        if version not in face.reads:
            raise ValueError(f"format {version} files are not coded by the {face.header_name} learner")
        presets = face.versions.presets
        if meta["preset"] not in presets:
            raise FormatError(f"model preset {meta['preset'][:40]!r} is newer than this seqd knows: upgrade seqd")
        config = check_settings({**presets[meta["preset"]], **meta["config"]}, face.header_name)
        try:
            face.check_header(version, meta["preset"], config)
        except Unbuildable as exc:
            raise FormatError(str(exc)) from None
        block_size = meta["block_size"]
        check_block_size(block_size)
        if version < 3:  # every chain a writer of formats 1 and 2 made held a block size at most
            if "chain_size" in meta:
                raise ValueError(f"format {version} has no chain_size")
            chain_size = block_size
        else:
            if "chain_size" not in meta:
                raise ValueError("missing key 'chain_size'")
            chain_size = meta["chain_size"] or None
            check_chain_size(chain_size, block_size)
    except FormatError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise FormatError(f"damaged header: {exc}") from None
    return Header(config, block_size, meta.get("build", ""), _HEAD.size + hlen + 4, meta["preset"], version,
                  chain_size)


def read_records(reader: BinaryIO, header: Header, offset: int) -> Iterator[Block | End]:
    """Block records, then the End record; a record that cannot be framed is a FormatError.

    A record is refused before its payload is read when its lengths exceed
    what the header allows: n above the block size, p above the coder's bound
    for n, or a chain (a FRESH block and the CONTINUES blocks after it) of more
    original bytes than the header's chain size, which no writer makes.
    """
    index = 0
    chain = 0  # original bytes since the last FRESH block
    while True:
        kind_byte = reader.read(1)
        if not kind_byte:
            raise FormatError(f"truncated file: it ends after block {index} without its end record "
                              "(the writer did not finish)")
        kind = kind_byte[0]
        if kind == END_KIND:
            total, crc = _END.unpack(_read_exact(reader, _END.size, "the end record", offset))
            yield End(total, crc)
            return
        rest = _read_exact(reader, _BLOCK.size - 1, f"block {index}'s record", offset)
        kind, length, plen, crc, pcrc = _BLOCK.unpack(kind_byte + rest)
        chain = length + (chain if kind == CONTINUES else 0)
        if kind not in (FRESH, CONTINUES) or (header.chain_size is not None and chain > header.chain_size) \
                or length > header.block_size or plen > encoded_bound(header.config, length):
            raise FormatError(f"block {index} (at byte {offset}) is damaged: its record is not valid "
                              f"(kind {kind}, {length} bytes of {header.block_size} at most, a payload of {plen})")
        payload = _read_exact(reader, plen, f"block {index}", offset)
        yield Block(index, offset, kind, length, crc, payload, zlib.crc32(payload) == pcrc)
        offset += _BLOCK.size + plen
        index += 1


class BlockDecoder:
    """Decodes blocks in file order; a learner is kept between a block and the CONTINUES blocks after it.

    ``config`` is a header's, checked by ``read_header`` (and again here: the
    kernels' buffers are sized by it, and the decoded symbols are bytes).
    """

    def __init__(self, config, writer: str = ""):
        check_config(config)
        self.face = byte_face(config)
        self.config = config
        self.writer = writer
        self.learner = None

    def decode(self, block: Block, progress=None, step: int = 1 << 16) -> bytes:
        """The block's bytes; a FormatError naming the block when it is damaged."""
        where = f"block {block.index} (at byte {block.offset})"
        if not block.payload_ok:
            self.learner = None
            raise FormatError(f"{where} is damaged (payload checksum mismatch)")
        if block.kind == CONTINUES and self.learner is None:
            raise FormatError(f"{where} continues a block that could not be decoded")
        if block.kind == FRESH:
            self.learner = self.face.solo(self.config)
        data = np.frombuffer(block.payload, dtype=np.uint8)
        coder = self.face.coder(self.config)
        coder.start(data)
        out = np.empty(block.length, dtype=np.uint8)
        symbols = np.empty(min(step, block.length), dtype=np.int64)
        for start in range(0, block.length, step):
            chunk = symbols[:min(step, block.length - start)]
            done = coder.decode(self.learner, data, chunk)
            if done < len(chunk):
                self.learner = None
                raise FormatError(f"{where} is damaged: its payload of {len(data)} bytes ends before its "
                                  f"{block.length} bytes are decoded")
            out[start:start + len(chunk)] = chunk
            if progress is not None:
                progress(min(start + step, block.length))
        result = out.tobytes()
        if zlib.crc32(result) != block.crc:
            self.learner = None
            raise FormatError(f"{where} does not decode to its checksum: the file is damaged, or it was written "
                              f"by a build whose arithmetic differs from this one (written by: "
                              f"{self.writer or 'unknown'}; this is {build_info()})")
        return result


def decompress(data: bytes, memory_limit: int = DEFAULT_MEMORY_LIMIT) -> bytes:
    """Inverse of :func:`compress`; any damage is a FormatError.

    A file whose model and blocks would need more than ``memory_limit`` bytes
    is refused (``limits.MemoryLimitError``, a ValueError) before any is
    allocated.
    """
    reader = io.BytesIO(data)
    header = read_header(reader)
    check_memory(header.config, header.block_size, memory_limit)
    decoder = BlockDecoder(header.config, header.build)
    parts, crc = [], 0
    for record in read_records(reader, header, header.size):
        if isinstance(record, End):
            out = b"".join(parts)
            if record.total_length != len(out) or record.crc != crc:
                raise FormatError("the end record does not match the decoded data (damaged end record)")
            if reader.read(1):
                raise FormatError("unexpected data after the end record")
            return out
        part = decoder.decode(record)
        crc = zlib.crc32(part, crc)
        parts.append(part)
    raise AssertionError("unreachable")
