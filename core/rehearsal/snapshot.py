"""A rehearsing GLNN's snapshots: its own arrays in the layout of ``core/arrays_snapshot.py`` (their mark, and what a
restored state must satisfy), then, if it has one, its online learner's snapshot (``online/snapshot.py``)."""

from __future__ import annotations

import json
import math
import struct

import numpy as np

from .config import COMPLETE, DRAWN, FILLED, HEAD, PREVIOUS, REHEARSALS, SINCE, SYMBOLS, RehearsalConfig
from .state import RehearsalState

MAGIC = b"SEQDRHS\x00"
VERSION = 1


def check(config: RehearsalConfig, state: RehearsalState) -> None:
    """Every index the kernels follow stays inside its array, and every number is finite."""
    c, A, slots = state.counts, config.alphabet_cap, config.blocks + 1
    inside = (c[SYMBOLS] >= 0 and 0 <= c[PREVIOUS] < A and 0 <= c[FILLED] < config.block and 0 <= c[HEAD] < slots
              and 0 <= c[COMPLETE] <= config.blocks and 0 <= c[SINCE] <= config.interval and c[REHEARSALS] >= 0
              and c[DRAWN] in (0, 1) and np.array_equal(state.symbol_of, np.arange(-1, A))
              and not np.any((state.inputs < 0) | (state.inputs > config.units))
              and not np.any(state.buffer >= A) and not np.any((state.before < 0) | (state.before >= A)))
    if not inside:
        raise ValueError("rehearsing-GLNN snapshot holds an index outside its arrays")
    if state.mixture.shape != (min(config.groups, A), config.members):
        raise ValueError("rehearsing-GLNN snapshot holds a mixture of another shape")
    for name in ("w", "tau", "v0", "v", "a", "rates", "mixture"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"rehearsing-GLNN snapshot holds a non-finite value in {name!r}")
    if np.any(state.rates < 0.0):
        raise ValueError("rehearsing-GLNN snapshot holds a negative learning rate")


_HEADER = struct.Struct("<8sII")  # arrays_snapshot's: magic, version, description length


def split(data) -> tuple[memoryview, memoryview]:
    """(the rehearsing part, the online learner's): the first part's length read from its own header (its
    description lists every array's dtype and shape).  A snapshot too short or with a header that does not parse
    is a ValueError; the parts' own checksums catch the rest."""
    data = memoryview(data).cast("B")
    if len(data) < _HEADER.size + 4:
        raise ValueError("rehearsing-GLNN snapshot is truncated")
    found, _, hlen = _HEADER.unpack_from(data)
    if found != MAGIC:
        raise ValueError("not a seqd rehearsing-GLNN snapshot (wrong magic)")
    try:
        meta = json.loads(bytes(data[_HEADER.size:_HEADER.size + hlen]))
        size = sum(math.prod(int(k) for k in shape) * np.dtype(dtype).itemsize for _, dtype, shape in meta["arrays"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"rehearsing-GLNN snapshot header is invalid: {exc}") from None
    end = _HEADER.size + hlen + size + 4
    if end > len(data):
        raise ValueError("rehearsing-GLNN snapshot is truncated")
    return data[:end], data[end:]
