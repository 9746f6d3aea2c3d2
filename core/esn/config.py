"""The settings of an echo-state learner (``__init__``'s docstring says what each does), and its state's shapes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..settings import integers, numbers

SYMBOLS, ACTIVE = range(2)  # positions in the state's ``counts`` array
RATE = 0  # position in the state's ``reals`` array: the writing rate eta_w
WORK_ROWS = 7  # rows of ``scratch``: curvature, error, three of the writing step's, two per-symbol discounts
MAX_UNITS = 4096


@dataclass(frozen=True)
class ESNConfig:
    """Settings of an echo-state learner."""

    alphabet_cap: int = 256  # symbols are integers in [0, alphabet_cap)
    units: int = 200  # N: the reservoir's units (200: the best of 100, 200, 400 on the logs at the full writing step)
    connections: int = 10  # incoming connections per unit (the reservoir is sparse)
    spectral_radius: float = 0.95  # rho(W) the reservoir is scaled to
    leak: float = 0.5  # alpha of eq. (2.22): the share of h_{t-1} kept at each step
    input_scale: float = 1.0  # input weights uniform in [-input_scale, input_scale)
    seed: int = 0  # draws the reservoir and the input weights
    # the readout: seed 000's writing step (eqs. 17-21 online), as the GLNN's writing layer has it
    writing_discount: float = 1.0 / 4096
    writing_prior: float = 1.0
    writing_evidence_floor: float = 0.25
    writing_rate: float = 1.0

    def __post_init__(self):
        integers(self, "alphabet_cap", "units", "connections", "seed")
        numbers(self, "spectral_radius", "leak", "input_scale", "writing_discount", "writing_prior",
                "writing_evidence_floor", "writing_rate")
        if not 1 <= self.alphabet_cap <= 65536:
            raise ValueError(f"alphabet_cap must be in [1, 65536], got {self.alphabet_cap}")
        if not 1 <= self.units <= MAX_UNITS:
            raise ValueError(f"units must be in [1, {MAX_UNITS}], got {self.units}")
        if not 1 <= self.connections <= self.units:
            raise ValueError(f"connections must be in [1, units={self.units}], got {self.connections}")
        if not 0.0 <= self.spectral_radius <= 2.0:
            raise ValueError(f"spectral_radius must be in [0, 2], got {self.spectral_radius}")
        if not 0.0 <= self.leak < 1.0:
            raise ValueError(f"leak must be in [0, 1), got {self.leak}")
        if not 0.0 < self.input_scale <= 64.0:
            raise ValueError(f"input_scale must be in (0, 64], got {self.input_scale}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if not 0.0 < self.writing_discount < 1.0:
            raise ValueError(f"writing_discount must be in (0, 1), got {self.writing_discount}")
        if not (self.writing_prior > 0.0 and self.writing_rate > 0.0):
            raise ValueError("writing_prior and writing_rate must be > 0")
        if not 0.0 <= self.writing_evidence_floor <= 1.0:
            raise ValueError(f"writing_evidence_floor must be in [0, 1], got {self.writing_evidence_floor}")


def state_shapes(config: ESNConfig) -> dict:
    """(shape, dtype) of every array of a learner of ``config`` (``state.ESNState``), in snapshot order."""
    N, A, C = config.units, config.alphabet_cap, config.connections
    i, f = np.dtype(np.int64), np.dtype(np.float64)
    return {"code_of": ((A,), i), "symbol_of": ((A + 1,), i), "sources": ((N, C), i), "weights": ((N, C), f),
            "inputs": ((A + 1, N), f), "a": ((N + 1,), f), "w": ((N + 1, A + 1), f), "h0": ((N + 1, A + 1), f),
            "hd": ((N + 1, A + 1), f), "pi": ((A + 1,), f), "scratch": ((WORK_ROWS, max(N + 1, A + 1)), f),
            "work": ((N + 1,), f), "reals": ((1,), f), "counts": ((2,), i)}
