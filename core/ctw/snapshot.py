"""A CTW learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, and what a restored state
must satisfy."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import codes_are_consistent
from .config import ACTIVE, EMPTY, NODES, SYMBOLS, CTWConfig
from .state import CTWState

MAGIC = b"SEQDCTW\x00"
VERSION = 1


def check(config: CTWConfig, state: CTWState) -> None:
    """Every index a kernel or the learner follows stays inside its array, and the counts add up (a snapshot
    that passes its checksum may still have been written wrong)."""
    c = state.counts
    active, nodes = int(c[ACTIVE]), int(c[NODES])
    if not (1 <= nodes <= 1 << config.node_bits and c[SYMBOLS] >= 0):
        raise ValueError("CTW snapshot holds inconsistent counts")
    used = state.slots[state.slots != EMPTY]
    if not codes_are_consistent(state.code_of, state.symbol_of, active, config.alphabet_cap) \
            or np.any((used < 1) | (used >= nodes)) or np.unique(used).size != used.size or used.size != nodes - 1 \
            or np.any((state.recent < 0) | (state.recent > active)):
        # every node but the root sits in one slot of the table, so that half of it stays empty and a lookup
        # that finds no node ends
        raise ValueError("CTW snapshot holds an index outside its arrays")
    if not np.array_equal(state.total, state.n.sum(axis=1, dtype=np.int64)) \
            or not np.all(np.isfinite(state.log_beta)):
        raise ValueError("CTW snapshot holds counts that do not add up")
