"""An echo-state learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, and what a restored
state must satisfy."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import codes_are_consistent
from .config import ACTIVE, SYMBOLS, ESNConfig
from .state import ESNState

MAGIC = b"SEQDESN\x00"
VERSION = 1


def check(config: ESNConfig, state: ESNState) -> None:
    """Every index the kernels follow stays inside its array, and every number is finite."""
    c = state.counts
    if c[SYMBOLS] < 0 or not codes_are_consistent(state.code_of, state.symbol_of, int(c[ACTIVE]), config.alphabet_cap) \
            or np.any((state.sources < 0) | (state.sources >= config.units)):
        raise ValueError("echo-state snapshot holds an index outside its arrays")
    for name in ("weights", "inputs", "a", "w", "h0", "hd", "reals"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"echo-state snapshot holds a non-finite value in {name!r}")
