"""The settings of an LSTM learner (``__init__``'s docstring says what each does), and its state's shapes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..settings import integers, numbers

SYMBOLS, ACTIVE, FILLED = range(3)  # positions in the state's ``counts`` array: symbols seen, active codes,
# forward steps taken in the current window
NORM = 0  # position in the state's ``reals`` array: the last window's gradient norm (before clipping)
FORGET, INPUT, CANDIDATE, OUTPUT, TANH_CELL = range(5)  # rows of an LSTM step's gates (the last: tanh of the cell)
UPDATE, RESET = range(2)  # a GRU step's rows: update gate, reset gate, then CANDIDATE
ERR, DH, BELOW, DPRE = 0, 1, 2, 3  # rows of ``scratch``: DPRE.. are the gates' errors (4 rows)
GATES = {"lstm": 4, "gru": 3}  # weight rows per cell: the gates and the candidate
MAX_CELLS = 1024
MAX_LAYERS = 8
MAX_HORIZON = 1000


@dataclass(frozen=True)
class LSTMConfig:
    """Settings of an LSTM learner."""

    alphabet_cap: int = 256  # symbols are integers in [0, alphabet_cap)
    cell: str = "lstm"  # "lstm" (memory cells with forget, input and output gates) or "gru" (gated recurrent units)
    cells: int = 90  # memory cells per layer
    layers: int = 1  # stacked layers; each reads the symbol, its own last output and the output of the one below
    horizon: int = 10  # symbols per truncated back-propagation window
    learning_rate: float = 0.05  # the step of plain gradient ascent on log-likelihood (nats)
    clip: float = 0.0  # seed 001, Algorithm 2: a window's gradient longer than this is rescaled to it; 0: off
    init_scale: float = 0.2  # weights start uniform in [-init_scale, init_scale)
    forget_bias: float = 1.0  # the forget gates' bias at the start, the GRU's update gates' its opposite: remember
    seed: int = 0  # draws the weights

    def __post_init__(self):
        integers(self, "alphabet_cap", "cells", "layers", "horizon", "seed")
        numbers(self, "learning_rate", "clip", "init_scale", "forget_bias")
        if self.cell not in GATES:
            raise ValueError(f"cell must be one of {', '.join(GATES)}, got {self.cell!r}")
        if not 1 <= self.alphabet_cap <= 65536:
            raise ValueError(f"alphabet_cap must be in [1, 65536], got {self.alphabet_cap}")
        if not 1 <= self.cells <= MAX_CELLS:
            raise ValueError(f"cells must be in [1, {MAX_CELLS}], got {self.cells}")
        if not 1 <= self.layers <= MAX_LAYERS:
            raise ValueError(f"layers must be in [1, {MAX_LAYERS}], got {self.layers}")
        if not 1 <= self.horizon <= MAX_HORIZON:
            raise ValueError(f"horizon must be in [1, {MAX_HORIZON}], got {self.horizon}")
        if not 0.0 < self.learning_rate <= 1.0:  # larger steps drive the softmax to probabilities of 0
            raise ValueError(f"learning_rate must be in (0, 1], got {self.learning_rate}")
        if self.clip < 0.0:
            raise ValueError(f"clip must be >= 0 (0: no clipping), got {self.clip}")
        if not 0.0 <= self.init_scale <= 4.0:
            raise ValueError(f"init_scale must be in [0, 4], got {self.init_scale}")
        if abs(self.forget_bias) > 64.0:
            raise ValueError(f"forget_bias must be in [-64, 64], got {self.forget_bias}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")


def inputs_per_cell(config: LSTMConfig) -> int:
    """K: the weights of one gate of one cell besides its symbol's: bias, own layer's last output, and the layer
    below's output (layers above the first)."""
    return (2 if config.layers > 1 else 1) * config.cells + 1


def state_shapes(config: LSTMConfig) -> dict:
    """(shape, dtype) of every array of a learner of ``config`` (``state.LSTMState``), in snapshot order."""
    A, N, L, H, K = config.alphabet_cap, config.cells, config.layers, config.horizon, inputs_per_cell(config)
    G = GATES[config.cell]
    i, f = np.dtype(np.int64), np.dtype(np.float64)
    return {"code_of": ((A,), i), "symbol_of": ((A + 1,), i),
            "w": ((L, G, N, K), f), "embed": ((L, G, A + 1, N), f), "v": ((L * N + 1, A + 1), f),
            "a": ((L * N + 1,), f), "pi": ((A + 1,), f),
            "hs": ((H + 1, L, N), f), "cs": ((H + 1, L, N), f), "gates": ((H, L, 5, N), f), "codes": ((H,), i),
            "dh": ((H, L * N), f), "grad_w": ((L, G, N, K), f), "grad_embed": ((L, G, A + 1, N), f),
            "scratch": ((3 + 4, max(N, A + 1)), f), "carry": ((2, L, N), f), "reals": ((1,), f),
            "counts": ((3,), i)}
