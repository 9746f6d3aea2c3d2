"""The network a kernel runs: graph, transition weights and the flags that pick the model, as one argument.

The three models of ``model.py`` differ only in their evolution line, so the
kernels take what decides it as one named tuple instead of six positional
arguments.  Numba passes a named tuple of arrays and scalars at no cost.
The writing weights ``w`` stay a separate argument: the online learner
passes only the columns of the symbols it has seen.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Network(NamedTuple):
    """What the evolution (eqs. 8, 10, 13) and its backward pass read."""

    inputs: np.ndarray  # (N+1, D) int64: incoming units of each unit (slot 0 unit 0, slot 1 the self-loop)
    tau: np.ndarray  # (S, N+1, D) transition weights, symbol-major (S = 1 for the RNN)
    rho: np.ndarray  # (A, N+1) input weights of the RNN; no rows for gated models
    leak: float  # 1 for the GLNN (eq. 13), 0 otherwise
    gated: bool  # transition weights indexed by the current symbol (GLNN, GNN)
    activation: int  # kernels.activation.TANH or LOGISTIC
    numerics: np.ndarray  # the empty marker array of elementary.numerics_marker: which exp/log/tanh
