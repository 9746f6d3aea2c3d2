"""An echo-state learner's arrays, and the reservoir a new learner draws (its shapes: ``config.state_shapes``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .config import RATE, ESNConfig, state_shapes
from .reservoir import draw_reservoir, spectral_radius


class ESNState(NamedTuple):
    """Every array an echo-state learner owns; A = alphabet cap, N = units, C = connections per unit."""

    code_of: np.ndarray  # (A,) int64: internal code of each symbol, 0 while unseen
    symbol_of: np.ndarray  # (A+1,) int64: symbol of each code (-1 for the escape)
    sources: np.ndarray  # (N, C) int64: the units each unit reads (W's nonzero columns, row by row)
    weights: np.ndarray  # (N, C): those entries of W, scaled to the spectral radius
    inputs: np.ndarray  # (A+1, N): W^in's column of each code (drawn when its symbol joins)
    a: np.ndarray  # (N+1,): 1, then h_t (unit 0 is the readout's bias)
    w: np.ndarray  # (N+1, A+1): the readout's weights
    h0: np.ndarray  # (N+1, A+1): the readout's discounted Hessian, cross terms with the bias (eq. 19)
    hd: np.ndarray  # (N+1, A+1): its diagonal (eq. 18), with the prior
    pi: np.ndarray  # (A+1,): the last prediction over the codes
    scratch: np.ndarray  # (WORK_ROWS, max(N+1, A+1)), work
    work: np.ndarray  # (N+1,), work: the next state
    reals: np.ndarray  # (1,): the writing rate
    counts: np.ndarray  # (2,) int64: symbols seen, active codes


def new_state(config: ESNConfig) -> ESNState:
    shapes = state_shapes(config)
    state = ESNState(**{name: np.zeros(*shapes[name]) for name in ESNState._fields})
    state.symbol_of[0] = -1
    state.a[0] = 1.0
    state.reals[RATE] = config.writing_rate
    state.hd[...] = config.writing_prior
    draw_reservoir(config.seed, state.sources, state.weights)
    rho = spectral_radius(state.sources, state.weights, state.work, state.scratch[0, :config.units])
    if rho > 0.0:
        state.weights[...] *= config.spectral_radius / rho
    return state

