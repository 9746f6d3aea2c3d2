"""A scoRNN learner's arrays, and the ones a new learner draws (their shapes: ``config.state_shapes``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..online.alphabet import unit_uniform
from .cayley import cayley
from .config import SCORNNConfig, state_shapes

BLOCK_DRAWS = 1 << 40  # A's 2 x 2 blocks are drawn as (seed, block, BLOCK_DRAWS)


class SCORNNState(NamedTuple):
    """Every array a scoRNN learner owns; A = alphabet cap, N = units, H = horizon."""

    code_of: np.ndarray  # (A,) int64: internal code of each symbol, 0 while unseen
    symbol_of: np.ndarray  # (A+1,) int64: symbol of each code (-1 for the escape)
    skew: np.ndarray  # (N, N): the skew-symmetric A
    w: np.ndarray  # (N, N): W = (I + A)^{-1} (I - A) D, orthogonal
    signs: np.ndarray  # (N,): D's diagonal, -1 or 1
    embed: np.ndarray  # (A+1, N): U's column of each code
    bias: np.ndarray  # (N,): the modReLU's b
    v: np.ndarray  # (N+1, A+1): the softmax's weights on (1, h_t)
    a: np.ndarray  # (N+1,): 1, then h_t
    pi: np.ndarray  # (A+1,): the last prediction over the codes
    hs: np.ndarray  # (H+1, N): h before the window's steps, and after each
    zs: np.ndarray  # (H, N): each step's z
    codes: np.ndarray  # (H,) int64: the code each step read
    dh: np.ndarray  # (H, N): d log pi(next symbol) / d h of each step
    grad_w: np.ndarray  # (N, N): the window's gradient in W
    grad_embed: np.ndarray  # (A+1, N): in U's columns of the codes read
    grad_bias: np.ndarray  # (N,): in b
    inverse: np.ndarray  # (N, 2N): [work | (I + A)^{-1}], from the last Cayley transform
    work: np.ndarray  # (2, N, N), work: the skew gradient's products
    scratch: np.ndarray  # (2, max(N, A+1)), work: the softmax's error, one step's error into z
    carry: np.ndarray  # (N,), work: the error carried back in time
    reals: np.ndarray  # (1,): the last window's gradient norm
    counts: np.ndarray  # (3,) int64: symbols seen, active codes, steps taken in the window


def new_state(config: SCORNNConfig) -> SCORNNState:
    """D with its first ``negatives`` entries -1; A zero but for 2 x 2 blocks [[0, s], [-s, 0]] down its
    diagonal, s uniform in [0, 1) (seed 002 draws the block's angle 2 atan s uniform in [0, pi/2); drawing s
    needs no tangent, and covers the same angles); W from them; the biases 0."""
    shapes = state_shapes(config)
    state = SCORNNState(**{name: np.zeros(*shapes[name]) for name in SCORNNState._fields})
    state.symbol_of[0] = -1
    state.a[0] = 1.0
    state.signs[...] = 1.0
    state.signs[:config.negatives] = -1.0
    for block in range(config.units // 2):
        s = unit_uniform(config.seed, block, BLOCK_DRAWS)
        state.skew[2 * block, 2 * block + 1] = s
        state.skew[2 * block + 1, 2 * block] = -s
    cayley(state.skew, state.signs, state.inverse, state.w)
    return state

