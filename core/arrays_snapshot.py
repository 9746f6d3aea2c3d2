"""The snapshot format of the learners whose state is a named tuple of arrays (all but the GLNN byte model's).

magic (8 bytes), version (u32), description length (u32), the description (JSON: the configuration's
settings, each array's name, dtype and stored shape, and, for a learner that keeps a history ring, how many of
its symbols the snapshot holds), each array's stored parts little-endian in field order, then a CRC-32 of
everything before it.  Restoring continues the stream bit for bit; every inconsistency is a ``ValueError``
that says what is wrong.

An array is stored whole, unless its learner says otherwise (a :class:`Layout`): a table that grows with the
stream is stored as far as it has grown, and a history ring as the symbols it holds, oldest first, or not at
all when they are kept elsewhere (a daemon stream's history file), to be asked for at restore.  The GLNN byte
model's snapshots (``online/snapshot.py``) have the same layout and their own history of versions.
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import asdict, dataclass
from typing import Callable, Protocol

import numpy as np

_HEADER = struct.Struct("<8sII")  # magic, version, description length


class HistoryReader(Protocol):
    """Where a learner's history is kept when its snapshot does not hold it (a stream's history file)."""

    def __call__(self, first: int, views: list[memoryview]) -> None:
        """Fill the byte buffers ``views``, in turn, with the symbols from stream position ``first`` on (little-
        endian, the history's dtype); a ValueError if they cannot be had."""


@dataclass(frozen=True)
class Layout:
    """How a learner stores its arrays in parts: ``views(config, name, array, arrays, elsewhere)`` gives the parts of
    ``array`` a snapshot stores, as views of it, from the arrays stored before it (``arrays``: by name); and
    ``ring(config, arrays)`` gives (history ring, stream position) of a learner that keeps one, else None."""

    views: Callable
    ring: Callable


def ring_views(ring: np.ndarray, first: int, n: int) -> list[np.ndarray]:
    """The places of stream positions first ... first + n - 1 in a history ring, in order: one or two slices."""
    H = ring.shape[0]
    if n == 0:
        return []
    start = first % H
    if start + n <= H:
        return [ring[start:start + n]]
    return [ring[start:], ring[:start + n - H]]


def stored_shape(array: np.ndarray, views: list[np.ndarray]) -> tuple[int, ...]:
    """The shape a snapshot gives the parts ``views`` of ``array``: the array's own, or their rows one after the
    other (a history's symbols; a growing table's slots, each with the shape of a slot)."""
    if len(views) == 1 and views[0] is array:
        return array.shape
    return (sum(len(v) for v in views),) + (views[0].shape[1:] if views else array.shape[2:])


def _whole(config, name, array, arrays, elsewhere):
    return [array]


def pack(magic: bytes, version: int, config, state) -> bytes:
    """The snapshot of ``state`` (a named tuple of arrays) for ``config`` (a dataclass)."""
    return b"".join(pack_parts(magic, version, config, state))


def pack_parts(magic: bytes, version: int, config, state, layout: Layout | None = None,
               history: bool = True) -> list[memoryview]:
    """:func:`pack`'s bytes as buffers to write in turn: on a little-endian host the arrays are not copied (the
    buffers are views of the state, valid while nothing learns), and the checksum runs without the GIL.  With a
    ``layout``, each array as its parts, and ``history=False`` leaves the history ring out."""
    arrays = state._asdict()
    views_of = layout.views if layout is not None else _whole
    listing = [(name, array, views_of(config, name, array, arrays, not history)) for name, array in arrays.items()]
    meta = {"config": asdict(config),
            "arrays": [[name, array.dtype.str, list(stored_shape(array, views))] for name, array, views in listing]}
    if layout is not None and layout.ring(config, arrays) is not None:
        ring, t = layout.ring(config, arrays)
        meta["history"] = {"held": min(t, ring.shape[0]) if history else 0, "elsewhere": not history}
    text = json.dumps(meta, sort_keys=True).encode()
    parts = [memoryview(_HEADER.pack(magic, version, len(text)) + text)]
    for _, _, views in listing:
        for v in views:
            little = np.ascontiguousarray(v.astype(v.dtype.newbyteorder("<"), copy=False))
            parts.append(memoryview(little.reshape(-1).view(np.uint8)))
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return parts + [memoryview(struct.pack("<I", crc))]


class BytesReader:
    """``read_into`` and ``read`` (the pair :func:`unpack_stream` takes) over bytes already in memory."""

    def __init__(self, view: memoryview):
        self.view, self.at = view, 0

    def read_into(self, buffer) -> int:
        n = min(len(buffer), len(self.view) - self.at)
        buffer[:n] = self.view[self.at:self.at + n]
        self.at += n
        return n

    def read(self, n: int) -> bytes:
        out = bytes(self.view[self.at:self.at + n])
        self.at += len(out)
        return out


def _check_head(head, magic: bytes, version: int, what: str) -> tuple[int, int]:
    """(format version, header length) of a snapshot's fixed head, or a ``ValueError`` saying what is wrong."""
    found, got_version, hlen = _HEADER.unpack_from(head)
    if found != magic:
        raise ValueError(f"not a seqd {what} snapshot (wrong magic)")
    if got_version > version:
        raise ValueError(f"{what} snapshot format {got_version} is newer than this seqd understands ({version})")
    return got_version, hlen


def unpack(data: bytes, magic: bytes, version: int, what: str, config_type, state_type, shapes, allocate=None,
           layout: Layout | None = None, history: HistoryReader | None = None):
    """(config, state) of a snapshot :func:`pack` wrote; ``shapes(config)`` gives each array's (shape, dtype).

    ``what`` names the learner in the errors ("CTW snapshot is truncated").  A snapshot of an older format
    (``version`` is the newest) may lack arrays that format did not have, if each is empty in its
    configuration; they are restored empty.  ``allocate(config, name, shape, dtype)``, if given, makes the
    zeroed array each one is copied into (a learner whose tables want memory of their own:
    ``kit/memory.table_array``).  The checksum is checked first, so damage anywhere is said as such."""
    view = memoryview(data).cast("B")  # not copied: each array is copied out of it once
    if len(view) < _HEADER.size + 4:
        raise ValueError(f"{what} snapshot is truncated")
    _check_head(view, magic, version, what)
    if zlib.crc32(view[:-4]) != struct.unpack_from("<I", view, len(view) - 4)[0]:
        raise ValueError(f"{what} snapshot is damaged (checksum mismatch)")
    reader = BytesReader(view)
    return unpack_stream(reader.read_into, reader.read, magic, version, what, config_type, state_type, shapes,
                         allocate, layout=layout, history=history)


def unpack_stream(read_into, read, magic: bytes, version: int, what: str, config_type, state_type, shapes,
                  allocate=None, *, layout: Layout | None = None, limit: int | None = None,
                  history: HistoryReader | None = None):
    """:func:`unpack` of a snapshot that arrives in pieces (an inflating reader): each array is filled where it
    will live.  ``read(n)`` returns the next ``n`` bytes (fewer only at the end); ``read_into(buffer)`` fills a
    writable byte buffer and returns how many bytes it got.  A snapshot whose arrays would take more than
    ``limit`` bytes is refused before any is allocated; one whose history is kept elsewhere gets it from
    ``history``."""
    head = read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise ValueError(f"{what} snapshot is truncated")
    got_version, hlen = _check_head(head, magic, version, what)
    text = read(hlen)
    if len(text) < hlen:
        raise ValueError(f"{what} snapshot is truncated")
    crc = zlib.crc32(text, zlib.crc32(head))
    try:
        meta = json.loads(text)
        config = config_type(**meta["config"])
        listed = [(name, np.dtype(dtype), tuple(int(k) for k in shape)) for name, dtype, shape in meta["arrays"]]
        kept = meta.get("history", {"held": None, "elsewhere": False})
        held, elsewhere = kept["held"], bool(kept["elsewhere"])
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"{what} snapshot header is invalid: {exc}") from None
    expected = shapes(config)
    full = sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in expected.values())
    if limit is not None and full > limit:
        raise ValueError(f"{what} snapshot's configuration holds {full} bytes of arrays, more than {limit}")
    names = [name for name, _, _ in listed]
    if got_version < version:  # arrays a later format added are empty in every configuration an older one wrote
        absent = [name for name in state_type._fields if name not in names]
        if names != [name for name in state_type._fields if name in names] \
                or any(math.prod(expected.get(name, ((1,),))[0]) for name in absent):
            raise ValueError(f"{what} snapshot does not hold the expected arrays")
    elif names != list(state_type._fields):
        raise ValueError(f"{what} snapshot does not hold the expected arrays")
    if set(expected) != set(state_type._fields):
        raise ValueError(f"{what} snapshot does not hold the expected arrays")
    views_of = layout.views if layout is not None else _whole
    arrays = {}
    for name, dtype, shape in listed:
        want_shape, want = expected[name]
        if dtype.newbyteorder("=") != np.dtype(want):
            raise ValueError(f"{what} snapshot array {name!r} is not what its configuration holds")
        out = np.zeros(want_shape, want) if allocate is None else allocate(config, name, want_shape, want)
        views = views_of(config, name, out, arrays, elsewhere)
        if stored_shape(out, views) != shape:
            raise ValueError(f"{what} snapshot array {name!r} is not what its configuration holds")
        for v in views:
            raw = memoryview(v.reshape(-1).view(np.uint8))
            if read_into(raw) < len(raw):
                raise ValueError(f"{what} snapshot is truncated")
            crc = zlib.crc32(raw, crc)
            if not np.little_endian:
                v.byteswap(inplace=True)
        arrays[name] = out
    tail = read(5)
    if len(tail) != 4:
        raise ValueError(f"{what} snapshot is truncated or followed by other bytes")
    if struct.unpack("<I", tail)[0] != crc:
        raise ValueError(f"{what} snapshot is damaged (checksum mismatch)")
    for name in state_type._fields:
        if name not in arrays:
            arrays[name] = np.zeros(*expected[name])
    if layout is not None and layout.ring(config, arrays) is not None:
        ring, t = layout.ring(config, arrays)
        restore_history(ring, t, what, held, elsewhere, history)
    return config, state_type(**arrays)


def restore_history(ring: np.ndarray, t: int, what: str, held, elsewhere: bool, history) -> None:
    """The symbols of a restored history ring of a stream at position ``t``: in the snapshot (``held`` of them,
    already read; None: not said) or, ``elsewhere``, read from ``history``."""
    n = min(t, ring.shape[0])
    if held is not None and held != (0 if elsewhere else n):
        raise ValueError(f"{what} snapshot header is invalid: its history's length is not its ring's")
    if elsewhere:
        if history is None:
            raise ValueError(f"{what} snapshot's history is kept elsewhere (a stream's history file), and none "
                             "was given")
        parts = ring_views(ring, t - n, n)
        history(t - n, [memoryview(v.view(np.uint8)) for v in parts])
        if not np.little_endian:
            for v in parts:
                v.byteswap(inplace=True)
