"""A scoRNN learner's arrays, and the ones a new learner draws (their shapes: ``config.state_shapes``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..initialization import unit_uniform
from .cayley import cayley
from .config import SCORNNConfig, state_shapes

BLOCK_DRAWS = 1 << 40  # A's 2 x 2 blocks are drawn as (seed, block, BLOCK_DRAWS); T's as (seed, block,
# BLOCK_DRAWS + 1) for the angle and + 2 for the modulus; W^(C)'s (i, j) as (seed, i, COUPLING_DRAWS + j)
COUPLING_DRAWS = 1 << 41


class SCORNNState(NamedTuple):
    """Every array a scoRNN learner owns; A = alphabet cap, N = units, H = horizon."""

    code_of: np.ndarray  # (A,) int64: internal code of each symbol, 0 while unseen
    symbol_of: np.ndarray  # (A+1,) int64: symbol of each code (-1 for the escape)
    skew: np.ndarray  # (Q, Q): the skew-symmetric A, Q = N - M long-term units (all N in a scoRNN)
    w: np.ndarray  # (N, N): W; its first Q rows and columns (I + A)^{-1} (I - A) D, orthogonal
    signs: np.ndarray  # (Q,): D's diagonal, -1 or 1
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
    inverse: np.ndarray  # (Q, 2Q): [work | (I + A)^{-1}], from the last Cayley transform
    work: np.ndarray  # (2, Q, Q), work: the skew gradient's products
    scratch: np.ndarray  # (2, max(N, A+1)), work: the softmax's error, one step's error into z
    carry: np.ndarray  # (N,), work: the error carried back in time
    reals: np.ndarray  # (1,): the last window's gradient norm
    counts: np.ndarray  # (3,) int64: symbols seen, active codes, steps taken in the window
    # an ENRNN's short-term state (``enrnn.py``; M = config.short, every array empty when M = 0):
    short_t: np.ndarray  # (M, M): T, whose normalisation is W^(S), W's last M rows and columns
    step_t: np.ndarray  # (M, M), work: T's step, then the trial T
    spectrum: np.ndarray  # (3,): whether T is normalised yet (0 or 1), and alpha, beta of its dominant eigenvalue
    hess: np.ndarray  # (M+1, M), work: T's Hessenberg form and a reflection's vector
    eig: np.ndarray  # (M, M+1) complex, work: inverse iteration's system
    vectors: np.ndarray  # (2, M) complex, work: the eigenvalues, then the right and left eigenvectors


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
    for block in range((config.units - config.short) // 2):
        s = unit_uniform(config.seed, block, BLOCK_DRAWS)
        state.skew[2 * block, 2 * block + 1] = s
        state.skew[2 * block + 1, 2 * block] = -s
    cayley(state.skew, state.signs, state.inverse, state.w)
    q, m = config.units - config.short, config.short
    for block in range(m // 2):  # eq. 2.97: gamma [[cos t, -sin t], [sin t, cos t]], t in [0, pi/2), |gamma| < 1
        s = unit_uniform(config.seed, block, BLOCK_DRAWS + 1)  # tan(t / 2), as A's blocks: no sine or cosine
        gamma = 2.0 * unit_uniform(config.seed, block, BLOCK_DRAWS + 2) - 1.0
        c, d = (1.0 - s * s) / (1.0 + s * s), 2.0 * s / (1.0 + s * s)
        state.short_t[2 * block:2 * block + 2, 2 * block:2 * block + 2] = gamma * np.array([[c, -d], [d, c]])
    if m % 2:
        state.short_t[m - 1, m - 1] = 2.0 * unit_uniform(config.seed, m // 2, BLOCK_DRAWS + 2) - 1.0
    state.w[q:, q:] = state.short_t  # rho(T) < 1: T itself until training takes it past 1
    if config.coupling and m:  # Glorot uniform, seed 002's initialisation of W^(C)
        bound = np.sqrt(6.0 / (q + m))
        for i in range(q):
            for j in range(m):
                state.w[i, q + j] = bound * (2.0 * unit_uniform(config.seed, i, COUPLING_DRAWS + j) - 1.0)
    return state

