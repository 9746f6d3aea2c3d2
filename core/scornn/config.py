"""The settings of a scoRNN learner (``__init__``'s docstring says what each does), and its state's shapes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..settings import integers, numbers

SYMBOLS, ACTIVE, FILLED = range(3)  # positions in ``counts`` (as the LSTM's: the readout kernels are shared)
NORM = 0  # position in ``reals``: the last window's gradient norm
ERR, DH = 0, 1  # rows of ``scratch``: the softmax's error, one step's error into h
MAX_UNITS = 1024
MAX_HORIZON = 1000


@dataclass(frozen=True)
class SCORNNConfig:
    """Settings of a scoRNN learner."""

    alphabet_cap: int = 256  # symbols are integers in [0, alphabet_cap)
    units: int = 64  # n: hidden units
    negatives: int | None = None  # rho: the entries of D that are -1 (None: n // 2)
    horizon: int = 10  # symbols per truncated back-propagation window
    learning_rate: float = 0.05  # the step on U, b and the softmax (gradient ascent on log-likelihood, nats)
    skew_rate: float = 0.01  # the step on the skew-symmetric A (Theorem 2.5.3's gradient)
    init_scale: float = 0.2  # U's entries start uniform in [-init_scale, init_scale)
    seed: int = 0  # draws U and A's blocks

    def __post_init__(self):
        if self.negatives is None:
            object.__setattr__(self, "negatives", self.units // 2 if isinstance(self.units, int) else 0)
        integers(self, "alphabet_cap", "units", "negatives", "horizon", "seed")
        numbers(self, "learning_rate", "skew_rate", "init_scale")
        if not 1 <= self.alphabet_cap <= 65536:
            raise ValueError(f"alphabet_cap must be in [1, 65536], got {self.alphabet_cap}")
        if not 1 <= self.units <= MAX_UNITS:
            raise ValueError(f"units must be in [1, {MAX_UNITS}], got {self.units}")
        if not 0 <= self.negatives <= self.units:
            raise ValueError(f"negatives must be in [0, units = {self.units}], got {self.negatives}")
        if not 1 <= self.horizon <= MAX_HORIZON:
            raise ValueError(f"horizon must be in [1, {MAX_HORIZON}], got {self.horizon}")
        if not (0.0 < self.learning_rate <= 1.0 and 0.0 <= self.skew_rate <= 1.0):
            raise ValueError("learning_rate must be in (0, 1] and skew_rate in [0, 1]")
        if not 0.0 <= self.init_scale <= 4.0:
            raise ValueError(f"init_scale must be in [0, 4], got {self.init_scale}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")


def state_shapes(config: SCORNNConfig) -> dict:
    """(shape, dtype) of every array of a learner of ``config`` (``state.SCORNNState``), in snapshot order."""
    A, N, H = config.alphabet_cap, config.units, config.horizon
    i, f = np.dtype(np.int64), np.dtype(np.float64)
    return {"code_of": ((A,), i), "symbol_of": ((A + 1,), i), "skew": ((N, N), f), "w": ((N, N), f),
            "signs": ((N,), f), "embed": ((A + 1, N), f), "bias": ((N,), f), "v": ((N + 1, A + 1), f),
            "a": ((N + 1,), f), "pi": ((A + 1,), f), "hs": ((H + 1, N), f), "zs": ((H, N), f), "codes": ((H,), i),
            "dh": ((H, N), f), "grad_w": ((N, N), f), "grad_embed": ((A + 1, N), f), "grad_bias": ((N,), f),
            "inverse": ((N, 2 * N), f), "work": ((2, N, N), f), "scratch": ((2, max(N, A + 1)), f),
            "carry": ((N,), f), "reals": ((1,), f), "counts": ((3,), i)}
