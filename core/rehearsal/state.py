"""A rehearsing GLNN's arrays, and the networks it draws (its shapes: ``config.state_shapes``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..model import ModelSpec, Params, initialize, symbol_frequencies
from ..kernels.elementary import IEEE, numerics_marker
from .config import ACTIVATIONS, RehearsalConfig, state_shapes


class RehearsalState(NamedTuple):
    """Every array a rehearsing GLNN owns; G = networks (groups x draws), A = alphabet cap, N = units, D =
    incoming slots per unit.  Network n = g * draws + k is draw k of group g."""

    symbol_of: np.ndarray  # (A+1,) int64: the symbol of each code, -1 for the escape (the alphabet is closed)
    inputs: np.ndarray  # (G, N+1, D) int64: each network's graph (model.py's ``inputs``)
    w: np.ndarray  # (G, N+1, A): writing weights w_iy (eq. 6)
    tau: np.ndarray  # (G, A, N+1, D): transition weights tau_{i j y} (eq. 13), symbol-major
    rho: np.ndarray  # (G, 0, N+1): the RNN's input weights, which a GLNN has none of
    v0: np.ndarray  # (G, N+1): initial potentials V^0
    v: np.ndarray  # (G, N+1): each network's potentials V^t on the stream
    a: np.ndarray  # (G, N+1): its activities a^t = s(V^t), a_0 = 1
    rates: np.ndarray  # (G, 2): the learning rates of its w and tau steps (seed 000 §2), 0 before its first step
    mixture: np.ndarray  # (groups, members): log-weight (nats) of each member of a group's mixture (its draws, then
    # the online learner): its log-likelihood on the positions the group predicted, less the group's best
    buffer: np.ndarray  # (blocks+1, block) uint16: the rehearsal buffer, a ring of blocks
    before: np.ndarray  # (blocks+1,) int64: the symbol read before each block's first
    pi: np.ndarray  # (draws, A), work: each draw's prediction
    work: np.ndarray  # (3, max(N+1, members)), work: the members' weights; the next potentials and activities
    counts: np.ndarray  # (COUNTS,) int64: config.py's SYMBOLS ... DRAWN


def spec_of(config: RehearsalConfig) -> ModelSpec:
    """The ModelSpec of each of the learner's networks."""
    return ModelSpec("glnn", config.units, config.degree, config.activation, config.alphabet_cap)


def params_of(state: RehearsalState, n: int) -> Params:
    """Network n's parameters, as views of the state."""
    return Params(state.inputs[n], state.w[n], state.tau[n], state.rho[n], state.v0[n])


def groups_of(config: RehearsalConfig) -> int:
    """The groups the symbols read are split into."""
    return min(config.groups, config.alphabet_cap)


def draw_networks(config: RehearsalConfig, state: RehearsalState, frequencies) -> None:
    """Every network drawn afresh (eqs. 30-33 of seed 000, ``model.initialize``) from the generator (seed, n),
    with the frequencies ``frequencies(g)`` gives for its group g: (nu, nu~) of eqs. (30) and (32).  Each then
    starts at V^0 with its rates unset and its log-weight 0."""
    spec = spec_of(config)
    for n in range(config.networks):
        params = initialize(spec, *frequencies(n // config.draws), np.random.default_rng([config.seed, n]))
        for name, value in params.arrays().items():
            if name != "input_weights":  # a GLNN has none (model.py: zeros, never read)
                np.copyto(getattr(params_of(state, n), name), value)
    restart(state, config.activation)


def drawn_from_block(config: RehearsalConfig, state: RehearsalState, x: np.ndarray, before: int) -> None:
    """:func:`draw_networks` with the frequencies of the block ``x`` (read after the symbol ``before``): group g's
    networks from the positions that follow a symbol of g."""
    previous = np.concatenate(([before], x[:-1])) % groups_of(config)
    draw_networks(config, state, lambda g: symbol_frequencies(x, (previous == g).astype(np.float64),
                                                              config.alphabet_cap))


def restart(state: RehearsalState, activation: str) -> None:
    """Every network at V^0 on the stream, its rates unset, every member's log-weight 0."""
    from .stream import start

    start(state, ACTIVATIONS.index(activation), numerics_marker(IEEE))
    state.rates[...] = 0.0
    state.mixture[...] = 0.0


def new_state(config: RehearsalConfig) -> RehearsalState:
    """A learner before its first symbol: the networks drawn as if from a stream in which every symbol is as
    frequent (until the first block is complete, when they are drawn again from it)."""
    shapes = state_shapes(config)
    state = RehearsalState(**{name: np.zeros(*shapes[name]) for name in RehearsalState._fields})
    state.symbol_of[:] = np.arange(-1, config.alphabet_cap)
    uniform = np.full(config.alphabet_cap, 1.0 / config.alphabet_cap)
    draw_networks(config, state, lambda g: (uniform, uniform))
    return state
