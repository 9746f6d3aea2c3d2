"""A scoRNN learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, and what a restored
state must satisfy."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import codes_are_consistent
from .config import ACTIVE, FILLED, SYMBOLS, SCORNNConfig
from .state import SCORNNState

MAGIC = b"SEQDSCOR"
VERSION = 1


def check(config: SCORNNConfig, state: SCORNNState) -> None:
    """Every index a kernel follows stays inside its array, every number is finite, A is skew-symmetric and D's
    entries are signs."""
    c = state.counts
    active, filled = int(c[ACTIVE]), int(c[FILLED])
    if c[SYMBOLS] < 0 or not 0 <= filled <= config.horizon \
            or not codes_are_consistent(state.code_of, state.symbol_of, active, config.alphabet_cap) \
            or np.any((state.codes[:filled] < 1) | (state.codes[:filled] > active)):
        raise ValueError("scoRNN snapshot holds an index outside its arrays")
    for name in ("skew", "w", "embed", "bias", "v", "a", "hs", "zs", "dh", "grad_w", "grad_embed", "grad_bias",
                 "inverse", "reals"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"scoRNN snapshot holds a non-finite value in {name!r}")
    if not np.array_equal(state.skew, -state.skew.T) or not np.all(np.abs(state.signs) == 1.0):
        raise ValueError("scoRNN snapshot holds an A that is not skew-symmetric, or a D that is not signs")
