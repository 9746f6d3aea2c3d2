"""An echo-state learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, and what a restored
state must satisfy."""

from __future__ import annotations

import numpy as np

from .config import ACTIVE, SYMBOLS, ESNConfig
from .state import ESNState

MAGIC = b"SEQDESN\x00"
VERSION = 1


def check(config: ESNConfig, state: ESNState) -> None:
    """Every index the kernels follow stays inside its array, and every number is finite."""
    c, A, N = state.counts, config.alphabet_cap, config.units
    active = int(c[ACTIVE])
    symbols = state.symbol_of[1:active + 1]
    if not (0 <= active <= A and c[SYMBOLS] >= 0) \
            or np.any((state.sources < 0) | (state.sources >= N)) \
            or np.any((state.code_of < 0) | (state.code_of > active)) \
            or np.any((symbols < 0) | (symbols >= A)) \
            or not np.array_equal(state.code_of[symbols], np.arange(1, active + 1)):
        raise ValueError("echo-state snapshot holds an index outside its arrays")
    for name in ("weights", "inputs", "a", "w", "h0", "hd", "reals"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"echo-state snapshot holds a non-finite value in {name!r}")
