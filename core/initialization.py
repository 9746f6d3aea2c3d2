"""Initial values of a unit: seed 000, Section 2 "Initialization of the parameters" and Appendix A.

One place for the initialisation that the batch model (``model.initialize``),
the online learner's new symbols (``online.alphabet.activate_symbol``) and the
online learner's first state (``online.state.new_state``) share.  All values
are stated in tanh coordinates, where the paper states them.

GLNN (eqs. 31-33), for unit j = 1..N with mu_j = 1/(j+1) and alpha = 1/2:

    tau_jj = -alpha                                       eq. (31): the self-loop
    tau_0j = beta_j + epsilon_j (u_jy - centre)           eq. (32): bias and reading rate
    beta_j = -sqrt(alpha (alpha - mu_j)),  epsilon_j = mu_j / 4   eq. (33), (79)
    V_j^0  = s^-1(beta_j / alpha)                         so that V^0 is a fixed point

GNN and RNN (the RNN principle of eq. 69, which the GNN takes because it has
no leak to integrate with): self-loop 1 - 1/j, reading rate (u_jy - centre)/2,
V^0 = 0.

``input_scale`` multiplies the reading rate (the online learner's setting;
1 in the paper).  The scalar helpers are Numba kernels, so the online kernels
call them inside their loops and NumPy code calls them as functions.  The
order of the floating-point operations is part of the result: a stream's
bits, and every ``.sqd`` file, depend on it.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import kernel
from .kernels.elementary import atanh

ALPHA = 0.5  # eq. (33) / (76): tau_jjy = -alpha
INPUT_SCALE = 0.25  # eq. (79): epsilon = mu_j / 4
RNN_INPUT_SCALE = 0.5  # eq. (69): rho_jy = (u_jy - ...) / 2


@kernel
def unit_transition(leak, j, u, input_scale):
    """(self-loop, bias) of unit j reading a symbol whose centred uniform draw is ``u``, in tanh coordinates.

    GLNN (``leak`` != 0): (-alpha, beta_j + input_scale mu_j/4 u), eqs. (31)-(33).
    GNN and RNN: (1 - 1/j, input_scale u/2), eq. (69); the RNN stores the
    second value as its input weight rho_jy rather than as a bias.
    """
    if leak != 0.0:
        mu = 1.0 / (j + 1.0)
        return -ALPHA, -math.sqrt(ALPHA * (ALPHA - mu)) + input_scale * INPUT_SCALE * mu * u
    return 1.0 - 1.0 / j, input_scale * RNN_INPUT_SCALE * u


@kernel
def logistic_transition(self_loop, bias):
    """(self-loop, bias) of a unit mapped to logistic coordinates (``model.reparametrize``).

    For a unit whose only non-zero incoming weights are its self-loop and its
    bias: tau'_jj = 4 tau_jj, tau'_0j = 2 (tau_0j - tau_jj).
    """
    return 4.0 * self_loop, 2.0 * (bias - self_loop)


def initial_potentials(leak: float, units: int, numerics: str = "ieee") -> np.ndarray:
    """V_j^0 for j = 1..N in tanh coordinates: arctanh(beta_j / alpha) for the GLNN, 0 otherwise.

    V^0 is in every snapshot and every compressed stream, so its arctanh is
    seqd's own (``kernels.elementary.atanh``, the same bits everywhere); with
    ``numerics="libm"`` (format 1 files) it is NumPy's ``arctanh`` on the
    whole vector, as those files were written.
    """
    if leak == 0.0:
        return np.zeros(units)
    j = np.arange(1, units + 1)
    mu = 1.0 / (j + 1.0)
    beta = -np.sqrt(ALPHA * (ALPHA - mu))
    if numerics == "libm":
        return np.arctanh(beta / ALPHA)
    return np.array([atanh(float(y)) for y in beta / ALPHA])


def logistic_potentials(v0: np.ndarray) -> np.ndarray:
    """V^0 mapped to logistic coordinates (``model.reparametrize``): V' = 2 V."""
    return 2.0 * v0


@kernel
def unit_uniform(seed, j, y):
    """A reproducible uniform number in [0, 1) for (seed, unit, symbol): SplitMix64 of the triple."""
    z = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(j) * np.uint64(0xBF58476D1CE4E5B9) \
        + np.uint64(y) * np.uint64(0x94D049BB133111EB) + np.uint64(0x2545F4914F6CDD1D)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return float(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)
