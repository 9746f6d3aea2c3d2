"""A scoRNN learner's snapshots (the layout of ``core/arrays_snapshot.py``): their mark, and what a restored
state must satisfy."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import codes_are_consistent
from .config import ACTIVE, ALPHA, BETA, FILLED, NORMALIZED, SYMBOLS, SCORNNConfig
from .enrnn import spectrum_of
from .state import SCORNNState

MAGIC = b"SEQDSCOR"
VERSION = 2  # 2: the ENRNN's arrays (short_t, step_t, spectrum, hess, eig, vectors), empty in a scoRNN; 1 lacks them


def check(config: SCORNNConfig, state: SCORNNState) -> None:
    """Every index a kernel follows stays inside its array, every number is finite, A is skew-symmetric, D's
    entries are signs, and an ENRNN's W has its zero block (and its coupling only if it has one)."""
    c = state.counts
    active, filled = int(c[ACTIVE]), int(c[FILLED])
    if c[SYMBOLS] < 0 or not 0 <= filled <= config.horizon \
            or not codes_are_consistent(state.code_of, state.symbol_of, active, config.alphabet_cap) \
            or np.any((state.codes[:filled] < 1) | (state.codes[:filled] > active)):
        raise ValueError("scoRNN snapshot holds an index outside its arrays")
    for name in ("skew", "w", "embed", "bias", "v", "a", "hs", "zs", "dh", "grad_w", "grad_embed", "grad_bias",
                 "inverse", "reals", "short_t", "step_t", "spectrum", "hess", "eig", "vectors"):
        if not np.all(np.isfinite(getattr(state, name))):
            raise ValueError(f"scoRNN snapshot holds a non-finite value in {name!r}")
    if not np.array_equal(state.skew, -state.skew.T) or not np.all(np.abs(state.signs) == 1.0):
        raise ValueError("scoRNN snapshot holds an A that is not skew-symmetric, or a D that is not signs")
    q, m = config.units - config.short, config.short
    if state.w[q:, :q].any() or (m and state.spectrum[NORMALIZED] not in (0.0, 1.0)) \
            or (not config.coupling and state.w[:q, q:].any()):
        raise ValueError("ENRNN snapshot holds a W that is not block upper triangular, or a bad normalisation flag")
    if m:  # W^(S) must be what T makes of it, and a normalised T's spectrum what the kernels compute
        alpha, beta, rho = spectrum_of(state.short_t, np.empty((m + 1, m)), np.empty(m, complex))
        if state.spectrum[NORMALIZED]:
            consistent = rho > 0.0 and state.spectrum[ALPHA] == alpha and state.spectrum[BETA] == beta \
                and np.array_equal(state.w[q:, q:], state.short_t / (rho + config.margin))
        else:
            consistent = rho >= 0.0 and np.array_equal(state.w[q:, q:], state.short_t)
        if not consistent:
            raise ValueError("ENRNN snapshot holds a W^(S) or a spectrum that its T does not give")
