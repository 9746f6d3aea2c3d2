"""The settings of a CTW learner (``__init__``'s docstring says what each does to the model)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..settings import integers

MAX_STATE_BYTES = 1 << 31  # a configuration whose node pool would hold more is refused
SYMBOLS, ACTIVE, NODES = range(3)  # positions in the state's ``counts`` array
EMPTY = -1  # a free slot of the node hash table
COUNT_LIMIT = 1 << 30  # a node whose total count reaches it halves its counts (a stream runs for ever)


@dataclass(frozen=True)
class CTWConfig:
    """Settings of a CTW learner.  ``seed`` is accepted for a common interface; CTW draws nothing."""

    alphabet_cap: int = 256  # symbols are integers in [0, alphabet_cap)
    depth: int = 8  # D: the longest context
    alpha: float = 0.5  # the estimate's pseudo-count per letter: 1/2, Krichevsky-Trofimov's
    node_bits: int = 16  # log2 of the node pool
    seed: int = 0

    def __post_init__(self):
        if isinstance(self.alpha, bool) or not isinstance(self.alpha, (int, float)) \
                or not (math.isfinite(self.alpha) and 2.0 ** -20 <= self.alpha <= 16.0):
            raise ValueError(f"alpha must be a number in [2^-20, 16], got {self.alpha!r}")
        object.__setattr__(self, "alpha", float(self.alpha))
        integers(self, "alphabet_cap", "depth", "node_bits", "seed")
        if not 1 <= self.alphabet_cap <= 65536:
            raise ValueError(f"alphabet_cap must be in [1, 65536], got {self.alphabet_cap}")
        if not 1 <= self.depth <= 64:
            raise ValueError(f"depth must be in [1, 64], got {self.depth}")
        if not 4 <= self.node_bits <= 26:
            raise ValueError(f"node_bits must be in [4, 26], got {self.node_bits}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if state_nbytes(self) > MAX_STATE_BYTES:
            raise ValueError(f"a pool of 2^{self.node_bits} nodes over {self.alphabet_cap} symbols holds "
                             f"{state_nbytes(self):,} bytes, more than {MAX_STATE_BYTES:,}: lower node_bits")


def state_shapes(config: CTWConfig) -> dict:
    """(shape, dtype) of every array of a learner of ``config`` (``state.CTWState``), in snapshot order."""
    nodes, A, D = 1 << config.node_bits, config.alphabet_cap, config.depth
    i, f = np.dtype(np.int64), np.dtype(np.float64)
    return {"code_of": ((A,), i), "symbol_of": ((A + 1,), i), "recent": ((D,), i), "slots": ((2 * nodes,), i),
            "keys": ((2 * nodes,), i), "n": ((nodes, A + 1), np.dtype(np.uint32)), "total": ((nodes,), i),
            "log_beta": ((nodes,), f), "path": ((D + 1,), i), "p": ((D + 2, A + 1), f), "counts": ((3,), i)}


def state_nbytes(config: CTWConfig) -> int:
    """Bytes held by a learner of ``config``, fixed by its configuration."""
    return sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in state_shapes(config).values())
