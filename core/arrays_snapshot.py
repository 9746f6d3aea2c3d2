"""The snapshot format of the learners whose state is a named tuple of arrays (CTW, the echo-state network).

magic (8 bytes), version (u32), description length (u32), the description (JSON: the configuration's
settings, each array's name, dtype and shape), each array little-endian in field order, then a CRC-32 of
everything before it.  Restoring continues the stream bit for bit; every inconsistency is a ``ValueError``
that says what is wrong.  (The GLNN learner's snapshots, ``online/snapshot.py``, have the same layout and
their own history of versions.)
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import asdict

import numpy as np

_HEADER = struct.Struct("<8sII")  # magic, version, description length


def pack(magic: bytes, version: int, config, state) -> bytes:
    """The snapshot of ``state`` (a named tuple of arrays) for ``config`` (a dataclass)."""
    return b"".join(pack_parts(magic, version, config, state))


def pack_parts(magic: bytes, version: int, config, state) -> list[memoryview]:
    """:func:`pack`'s bytes as buffers to write in turn: on a little-endian host the arrays are not copied (the
    buffers are views of the state, valid while nothing learns), and the checksum runs without the GIL."""
    arrays = state._asdict()
    meta = {"config": asdict(config), "arrays": [[k, v.dtype.str, list(v.shape)] for k, v in arrays.items()]}
    text = json.dumps(meta, sort_keys=True).encode()
    parts = [memoryview(_HEADER.pack(magic, version, len(text)) + text)]
    for v in arrays.values():
        little = np.ascontiguousarray(v.astype(v.dtype.newbyteorder("<"), copy=False))
        parts.append(memoryview(little.reshape(-1).view(np.uint8)))
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    return parts + [memoryview(struct.pack("<I", crc))]


def unpack(data: bytes, magic: bytes, version: int, what: str, config_type, state_type, shapes, allocate=None):
    """(config, state) of a snapshot :func:`pack` wrote; ``shapes(config)`` gives each array's (shape, dtype).

    ``what`` names the learner in the errors ("CTW snapshot is truncated").  A snapshot of an older format
    (``version`` is the newest) may lack arrays that format did not have, if each is empty in its
    configuration; they are restored empty.  ``allocate(shape, dtype)``, if given, makes the zeroed array
    each one is copied into (a learner whose tables want memory of their own: ``online/tables.table_array``)."""
    data = memoryview(data).cast("B")  # not copied: each array is copied out of it once
    if len(data) < _HEADER.size + 4:
        raise ValueError(f"{what} snapshot is truncated")
    found, got_version, hlen = _HEADER.unpack_from(data)
    if found != magic:
        raise ValueError(f"not a seqd {what} snapshot (wrong magic)")
    if got_version > version:
        raise ValueError(f"{what} snapshot format {got_version} is newer than this seqd understands ({version})")
    if zlib.crc32(data[:-4]) != struct.unpack_from("<I", data, len(data) - 4)[0]:
        raise ValueError(f"{what} snapshot is damaged (checksum mismatch)")
    try:
        meta = json.loads(bytes(data[_HEADER.size:_HEADER.size + hlen]))
        config = config_type(**meta["config"])
        listed = [(name, np.dtype(dtype), tuple(int(k) for k in shape)) for name, dtype, shape in meta["arrays"]]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{what} snapshot header is invalid: {exc}") from None
    expected = shapes(config)
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
    arrays, offset = {}, _HEADER.size + hlen
    for name, dtype, shape in listed:
        if shape != expected[name][0] or dtype.newbyteorder("=") != np.dtype(expected[name][1]):
            raise ValueError(f"{what} snapshot array {name!r} is not what its configuration holds")
        count = math.prod(shape)
        if offset + count * dtype.itemsize > len(data) - 4:
            raise ValueError(f"{what} snapshot is truncated")
        stored = np.frombuffer(data, dtype, count, offset).reshape(shape)
        if allocate is None:
            arrays[name] = stored.astype(expected[name][1], copy=True)
        else:
            arrays[name] = allocate(shape, expected[name][1])
            arrays[name][...] = stored
        offset += count * dtype.itemsize
    if offset != len(data) - 4:
        raise ValueError(f"{what} snapshot is truncated or followed by other bytes")
    for name in state_type._fields:
        if name not in arrays:
            arrays[name] = np.zeros(*expected[name])
    return config, state_type(**arrays)
