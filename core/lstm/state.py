"""An LSTM learner's arrays, and the weights a new learner draws (their shapes: ``config.state_shapes``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .cell import draw_weights
from .config import LSTMConfig, state_shapes


class LSTMState(NamedTuple):
    """Every array an LSTM learner owns; A = alphabet cap, N = cells, L = layers, H = horizon, K = inputs per
    cell (``config.inputs_per_cell``).  Window slot s holds the state before the window's (s+1)-th step."""

    code_of: np.ndarray  # (A,) int64: internal code of each symbol, 0 while unseen
    symbol_of: np.ndarray  # (A+1,) int64: symbol of each code (-1 for the escape)
    w: np.ndarray  # (L, 4, N, K): each gate's weights on (1, own h_{t-1}, the layer below's h_t)
    embed: np.ndarray  # (L, 4, A+1, N): each gate's weights on the symbol read (code by code)
    v: np.ndarray  # (L*N+1, A+1): the softmax's weights on (1, every layer's h_t)
    a: np.ndarray  # (L*N+1,): 1, then every layer's h_t: what the prediction reads
    pi: np.ndarray  # (A+1,): the last prediction over the codes
    hs: np.ndarray  # (H+1, L, N): each layer's h before the window's steps, and after each
    cs: np.ndarray  # (H+1, L, N): the same for the memory cells
    gates: np.ndarray  # (H, L, 5, N): each step's forget, input, candidate, output gates and tanh(cell)
    codes: np.ndarray  # (H,) int64: the code each step read
    dh: np.ndarray  # (H, L*N): d log pi(next symbol) / d h of each step, through the softmax it fed
    grad_w: np.ndarray  # (L, 4, N, K): the window's gradient, accumulating
    grad_embed: np.ndarray  # (L, 4, A+1, N): its rows of the codes read in the window
    scratch: np.ndarray  # (7, max(N, A+1)), work: rows ERR, DH, BELOW, then the four gates' errors (cell.py)
    carry: np.ndarray  # (2, L, N), work: the error carried back in time, into h and into the cell
    reals: np.ndarray  # (1,): the last window's gradient norm
    counts: np.ndarray  # (3,) int64: symbols seen, active codes, steps taken in the window


def new_state(config: LSTMConfig) -> LSTMState:
    shapes = state_shapes(config)
    state = LSTMState(**{name: np.zeros(*shapes[name]) for name in LSTMState._fields})
    state.symbol_of[0] = -1
    state.a[0] = 1.0
    draw_weights(config.seed, config.init_scale, config.forget_bias, state.w)
    return state

