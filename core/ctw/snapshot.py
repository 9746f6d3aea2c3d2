"""A CTW learner's snapshot: magic, version, a JSON description (configuration, each array's name, dtype and
shape), each array little-endian, then a CRC-32 of all that.  Restoring it continues the stream bit for bit;
every inconsistency is a ``ValueError`` that says what is wrong."""

from __future__ import annotations

import json
import math
import struct
import zlib
from dataclasses import asdict

import numpy as np

from .config import ACTIVE, EMPTY, NODES, SYMBOLS, CTWConfig, state_shapes
from .state import CTWState

MAGIC = b"SEQDCTW\x00"
VERSION = 1
_HEADER = struct.Struct("<8sII")  # magic, version, description length


def to_bytes(config: CTWConfig, state: CTWState) -> bytes:
    arrays = state._asdict()
    meta = {"config": asdict(config), "arrays": [[k, v.dtype.str, list(v.shape)] for k, v in arrays.items()]}
    text = json.dumps(meta, sort_keys=True).encode()
    body = _HEADER.pack(MAGIC, VERSION, len(text)) + text + b"".join(
        np.ascontiguousarray(v.astype(v.dtype.newbyteorder("<"), copy=False)).tobytes() for v in arrays.values())
    return body + struct.pack("<I", zlib.crc32(body))


def from_bytes(data: bytes) -> tuple[CTWConfig, CTWState]:
    data = bytes(data)
    if len(data) < _HEADER.size + 4:
        raise ValueError("CTW snapshot is truncated")
    magic, version, hlen = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ValueError("not a seqd CTW snapshot (wrong magic)")
    if version > VERSION:
        raise ValueError(f"CTW snapshot format {version} is newer than this seqd understands ({VERSION})")
    if zlib.crc32(data[:-4]) != struct.unpack_from("<I", data, len(data) - 4)[0]:
        raise ValueError("CTW snapshot is damaged (checksum mismatch)")
    try:
        meta = json.loads(data[_HEADER.size:_HEADER.size + hlen])
        config = CTWConfig(**meta["config"])
        listed = [(name, np.dtype(dtype), tuple(int(k) for k in shape)) for name, dtype, shape in meta["arrays"]]
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"CTW snapshot header is invalid: {exc}") from None
    shapes = state_shapes(config)
    if [name for name, _, _ in listed] != list(shapes):
        raise ValueError("CTW snapshot does not hold the expected arrays")
    state, offset = {}, _HEADER.size + hlen
    for name, dtype, shape in listed:
        if shape != shapes[name][0] or dtype.newbyteorder("=") != np.dtype(shapes[name][1]):
            raise ValueError(f"CTW snapshot array {name!r} is not what its configuration holds")
        count = math.prod(shape)
        if offset + count * dtype.itemsize > len(data) - 4:
            raise ValueError("CTW snapshot is truncated")
        state[name] = np.frombuffer(data, dtype, count, offset).reshape(shape).astype(shapes[name][1], copy=True)
        offset += count * dtype.itemsize
    if offset != len(data) - 4:
        raise ValueError("CTW snapshot is truncated or followed by other bytes")
    state = CTWState(**state)
    _check(config, state)
    return config, state


def _check(config: CTWConfig, state: CTWState) -> None:
    """Every index a kernel or the learner follows stays inside its array, and the counts add up (a snapshot
    that passes its checksum may still have been written wrong)."""
    c, A = state.counts, config.alphabet_cap
    active, nodes = int(c[ACTIVE]), int(c[NODES])
    if not (0 <= active <= A and 1 <= nodes <= 1 << config.node_bits and c[SYMBOLS] >= 0):
        raise ValueError("CTW snapshot holds inconsistent counts")
    symbols = state.symbol_of[1:active + 1]
    if np.any((state.slots < EMPTY) | (state.slots >= nodes)) \
            or np.any((state.recent < 0) | (state.recent > active)) \
            or np.any((state.code_of < 0) | (state.code_of > active)) \
            or np.any((symbols < 0) | (symbols >= A)) \
            or not np.array_equal(state.code_of[symbols], np.arange(1, active + 1)):
        raise ValueError("CTW snapshot holds an index outside its arrays")
    if not np.array_equal(state.total, state.n.sum(axis=1, dtype=np.int64)) \
            or not np.all(np.isfinite(state.log_beta)):
        raise ValueError("CTW snapshot holds counts that do not add up")
