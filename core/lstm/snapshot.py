"""An LSTM learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, and what a restored state
must satisfy."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import codes_are_consistent
from .config import ACTIVE, FILLED, SYMBOLS, LSTMConfig
from .state import LSTMState

MAGIC = b"SEQDLSTM"
VERSION = 1


def check(config: LSTMConfig, state: LSTMState) -> None:
    """Every index a kernel follows stays inside its array, and every number is finite."""
    c = state.counts
    active, filled = int(c[ACTIVE]), int(c[FILLED])
    if c[SYMBOLS] < 0 or not 0 <= filled <= config.horizon \
            or not codes_are_consistent(state.code_of, state.symbol_of, active, config.alphabet_cap) \
            or np.any((state.codes[:filled] < 1) | (state.codes[:filled] > active)):
        raise ValueError("LSTM snapshot holds an index outside its arrays")
    for name in ("w", "embed", "v", "a", "hs", "cs", "gates", "dh", "grad_w", "grad_embed", "reals"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"LSTM snapshot holds a non-finite value in {name!r}")
