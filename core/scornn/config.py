"""The settings of a scoRNN learner (``__init__``'s docstring says what each does), and its state's shapes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..settings import integers, numbers

SYMBOLS, ACTIVE, FILLED = range(3)  # positions in ``counts`` (as the LSTM's: the readout kernels are shared)
NORM = 0  # position in ``reals``: the last window's gradient norm
ERR, DH = 0, 1  # rows of ``scratch``: the softmax's error, one step's error into h
NORMALIZED, ALPHA, BETA = range(3)  # positions in an ENRNN's ``spectrum``: whether W^(S) = T / (rho + epsilon) yet,
# and the eigenvalue of T of largest modulus, alpha + i beta (beta >= 0)
MAX_UNITS = 1024
MAX_HORIZON = 1000


@dataclass(frozen=True)
class SCORNNConfig:
    """Settings of a scoRNN learner."""

    alphabet_cap: int = 256  # symbols are integers in [0, alphabet_cap)
    units: int = 64  # n: hidden units
    negatives: int | None = None  # rho: the entries of D that are -1 (None: half the long-term units)
    short: int = 0  # m: the last m units are the ENRNN's short-term state (seed 002 §2.7); 0: a scoRNN
    coupling: bool = False  # an ENRNN's W^(C): the short-term state feeds the long-term one (eq. 2.82; off: eq.
    # 2.80). Online, never reset, the orthogonal state cannot dissipate that drive: on a repeated phrase the coupled
    # preset's |h| grew past 70 within 400 symbols and its softmax underflowed (docs/benchmarks.md)
    margin: float = 0.0  # epsilon of eq. 2.90: W^(S) = T / (rho(T) + epsilon) (seed 002's experiments: 0)
    horizon: int = 10  # symbols per truncated back-propagation window
    learning_rate: float = 0.05  # the step on U, b and the softmax (gradient ascent on log-likelihood, nats)
    skew_rate: float = 0.01  # the step on the skew-symmetric A (Theorem 2.5.3's gradient)
    clip: float = 0.0  # seed 001, Algorithm 2: a window's gradient longer than this is rescaled to it; 0: off
    init_scale: float = 0.2  # U's entries start uniform in [-init_scale, init_scale)
    seed: int = 0  # draws U and A's blocks

    def __post_init__(self):
        if self.negatives is None:
            long = self.units - self.short if isinstance(self.units, int) and isinstance(self.short, int) else 0
            object.__setattr__(self, "negatives", long // 2)
        integers(self, "alphabet_cap", "units", "negatives", "short", "horizon", "seed")
        numbers(self, "learning_rate", "skew_rate", "clip", "init_scale", "margin")
        if not isinstance(self.coupling, bool):
            raise ValueError(f"coupling must be true or false, got {self.coupling!r}")
        if not 1 <= self.alphabet_cap <= 65536:
            raise ValueError(f"alphabet_cap must be in [1, 65536], got {self.alphabet_cap}")
        if not 1 <= self.units <= MAX_UNITS:
            raise ValueError(f"units must be in [1, {MAX_UNITS}], got {self.units}")
        if not 0 <= self.short < self.units:
            raise ValueError(f"short must be in [0, units = {self.units}): at least one long-term unit, got {self.short}")
        if not 0 <= self.negatives <= self.units - self.short:
            raise ValueError(f"negatives must be in [0, {self.units - self.short}] (the long-term units), "
                             f"got {self.negatives}")
        if self.clip < 0.0 or (self.short and self.clip == 0.0):
            raise ValueError(f"clip must be >= 0 (0: no clipping), and > 0 for an ENRNN (short > 0: online, its "
                             f"state never reset, its T diverges without), got {self.clip}")
        if not 0.0 <= self.margin <= 1.0:
            raise ValueError(f"margin must be in [0, 1], got {self.margin}")
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
    A, N, H, m = config.alphabet_cap, config.units, config.horizon, config.short
    q = N - m
    i, f, z = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.complex128)
    return {"code_of": ((A,), i), "symbol_of": ((A + 1,), i), "skew": ((q, q), f), "w": ((N, N), f),
            "signs": ((q,), f), "embed": ((A + 1, N), f), "bias": ((N,), f), "v": ((N + 1, A + 1), f),
            "a": ((N + 1,), f), "pi": ((A + 1,), f), "hs": ((H + 1, N), f), "zs": ((H, N), f), "codes": ((H,), i),
            "dh": ((H, N), f), "grad_w": ((N, N), f), "grad_embed": ((A + 1, N), f), "grad_bias": ((N,), f),
            "inverse": ((q, 2 * q), f), "work": ((2, q, q), f), "scratch": ((2, max(N, A + 1)), f),
            "carry": ((N,), f), "reals": ((1,), f), "counts": ((3,), i),
            # the ENRNN's (empty when short = 0, as every scoRNN snapshot of format 1 has them)
            "short_t": ((m, m), f), "step_t": ((m, m), f), "spectrum": ((3 if m else 0,), f), "hess": ((m + 1 if m else 0, m), f),
            "eig": ((m, m + 1), z), "vectors": ((2 if m else 0, m), z)}
