"""An HMM's parameters, and the random one seed 000's footnote 16 starts EM from."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class HMM(NamedTuple):
    """N states, D edges per state, A symbols."""

    succ: np.ndarray  # (N, D) int64: the states each state's edges lead to (distinct; the first is itself)
    trans: np.ndarray  # (N, D): the edges' probabilities, each row summing to 1
    emit: np.ndarray  # (N, A): each state's writing probabilities, each row summing to 1
    init: np.ndarray  # (N,): the first state's distribution

    def copy(self) -> "HMM":
        return HMM(*(a.copy() for a in self))


def draw(states: int, degree: int, frequencies: np.ndarray, rng: np.random.Generator) -> HMM:
    """A random graph of ``degree`` edges per state (a loop, then distinct other states drawn uniformly),
    edge probabilities from Dirichlet(1/2, ..., 1/2), writing probabilities ``frequencies`` times uniform
    [0, 1] numbers, normalised (seed 000, footnote 16); ValueError on impossible sizes."""
    if states < 1:
        raise ValueError(f"an HMM needs at least one state, got {states}")
    if not 1 <= degree <= states:
        raise ValueError(f"degree must be in [1, states = {states}], got {degree}")
    frequencies = np.asarray(frequencies, dtype=np.float64)
    if frequencies.ndim != 1 or len(frequencies) < 1 or np.any(frequencies < 0) or frequencies.sum() <= 0:
        raise ValueError("frequencies must be non-negative and not all zero")
    succ = np.empty((states, degree), dtype=np.int64)
    for i in range(states):
        others = np.delete(np.arange(states), i)
        succ[i, 0] = i
        succ[i, 1:] = rng.choice(others, size=degree - 1, replace=False)
    trans = rng.dirichlet(np.full(degree, 0.5), size=states)
    emit = frequencies[None, :] * rng.random((states, len(frequencies)))
    emit /= emit.sum(axis=1, keepdims=True)
    return HMM(succ, trans, emit, np.full(states, 1.0 / states))
