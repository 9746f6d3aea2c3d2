"""The GLNN family: gated leaky networks, gated networks and plain RNNs.

Seed 000 (Ollivier 2015, "Riemannian metrics for neural networks II") defines
three recurrent models that share one output layer, the softmax vote of eq. (6),

    pi_t(y) = exp(sum_i a_i^t w_iy) / sum_y' exp(sum_i a_i^t w_iy'),

and differ only in their evolution line:

* **GLNN** (Definition 5, eq. 13): ``V_j^{t+1} = V_j^t + sum_i tau_{i j x_t} a_i^t``
* **GNN**  (eq. 10):               ``V_j^{t+1} =         sum_i tau_{i j x_t} a_i^t``
* **RNN**  (eq. 8):                ``V_j^{t+1} = rho_{j x_t} + sum_i tau_{i j} a_i^t``

with ``a_j = s(V_j)``, ``s`` = tanh or logistic, and ``a_0 = 1`` the
always-active unit.  The kernels implement all three with one code path: a
``leak`` flag (1 for GLNN) and a ``gated`` flag (transition weights indexed by
the current symbol, or shared with per-symbol input weights ``rho``).

Storage (units are numbered 1..N; row 0 of per-unit arrays is unit 0):

* ``inputs[j, k]`` (N+1, D) with D = d + 1: the units feeding unit j.  Slot 0
  is always unit 0, slot 1 is always j itself (the self-loop), slots 2..d are
  distinct other units drawn at random.  The paper draws d *outgoing* edges
  per unit; seqd fixes the *incoming* count instead, so that every metric
  block (eq. 26) has the same size D x D.
* ``writing_weights`` (N+1, A): ``w[i, y]``.
* ``transition_weights`` (S, N+1, D): ``tau[y, j, k]`` is the weight of the
  edge ``inputs[j, k] -> j`` read when the current symbol is y, stored
  symbol-major so the slice used at time t is contiguous.  S = A for gated
  models, S = 1 for the RNN.
* ``input_weights`` (A, N+1): ``rho[y, j]`` (RNN only; zeros otherwise).
* ``initial_potential`` (N+1,): ``V^0`` (entry 0 unused).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .initialization import initial_potentials, unit_transition
from .kernels.elementary import IEEE, numerics_marker
from .kernels.network import Network

MODELS = ("glnn", "gnn", "rnn")
ACTIVATIONS = ("tanh", "logistic")


@dataclass(frozen=True)
class ModelSpec:
    """Hyper-parameters of one network, under their constructor names."""

    model: str = "glnn"
    units: int = 16
    degree: int = 3
    activation: str = "tanh"
    alphabet_size: int = 2

    def __post_init__(self):
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}, got {self.model!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of {ACTIVATIONS}, got {self.activation!r}")
        if self.units < 1:
            raise ValueError(f"units must be >= 1, got {self.units}")
        if not 1 <= self.degree <= self.units:
            raise ValueError(
                f"degree (incoming units per unit, self-loop included) must be in [1, units={self.units}], got {self.degree}"
            )
        if self.alphabet_size < 1:
            raise ValueError(f"alphabet_size must be >= 1, got {self.alphabet_size}")

    @property
    def gated(self) -> bool:
        return self.model != "rnn"

    @property
    def leak(self) -> float:
        return 1.0 if self.model == "glnn" else 0.0

    @property
    def activation_code(self) -> int:
        return ACTIVATIONS.index(self.activation)

    @property
    def slots(self) -> int:
        """D = d + 1: incoming slots per unit, unit 0 included."""
        return self.degree + 1


@dataclass
class Params:
    """The trainable parameters theta = (w, tau, rho, V^0) and the fixed graph."""

    inputs: np.ndarray
    writing_weights: np.ndarray
    transition_weights: np.ndarray
    input_weights: np.ndarray
    initial_potential: np.ndarray

    def copy(self) -> "Params":
        return Params(*(np.array(getattr(self, f.name), copy=True) for f in dataclasses.fields(self)))

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def network(spec: ModelSpec, params: Params) -> Network:
    """The kernels' view of a model's evolution: graph, transition and input weights, and the model's flags."""
    return Network(params.inputs, params.transition_weights, params.input_weights, spec.leak, spec.gated,
                   spec.activation_code, numerics_marker(IEEE))


def random_graph(units: int, degree: int, rng: np.random.Generator) -> np.ndarray:
    """Incoming lists (N+1, d+1): slot 0 = unit 0, slot 1 = self-loop, then d-1 distinct other units."""
    inputs = np.zeros((units + 1, degree + 1), dtype=np.int64)
    for j in range(1, units + 1):
        others = np.array([i for i in range(1, units + 1) if i != j], dtype=np.int64)
        inputs[j, 1] = j
        if degree > 1:
            inputs[j, 2:] = np.sort(rng.choice(others, size=degree - 1, replace=False))
    return inputs


def symbol_frequencies(symbols: np.ndarray, predict_mask: np.ndarray | None, alphabet_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(nu, nu_tilde) of eqs. (30) and (32): frequencies among predicted symbols and among all symbols.

    A symbol absent from the data would give ``log nu_y = -inf`` in eq. (30);
    seqd uses the Krichevsky-Trofimov estimate (count + 1/2) / (n + A/2)
    for ``nu`` so that every symbol keeps a finite writing bias.
    """
    symbols = np.asarray(symbols, dtype=np.int64)
    mask = np.ones(len(symbols)) if predict_mask is None else np.asarray(predict_mask, dtype=np.float64)
    counts = np.bincount(symbols, weights=mask, minlength=alphabet_size)[:alphabet_size]
    nu = (counts + 0.5) / (counts.sum() + 0.5 * alphabet_size)
    all_counts = np.bincount(symbols, minlength=alphabet_size)[:alphabet_size].astype(np.float64)
    nu_tilde = all_counts / max(all_counts.sum(), 1.0)
    return nu, nu_tilde


def initialize(spec: ModelSpec, nu: np.ndarray, nu_tilde: np.ndarray, rng: np.random.Generator) -> Params:
    """Initial parameters per seed 000: eqs. (30)-(33) for GLNNs, eq. (69) for RNNs.

    The values are built in tanh coordinates, where the paper states them, and
    mapped to logistic coordinates by :func:`reparametrize` when the
    activation is logistic, so both activations start from the same network
    behaviour (seed 000 §3.6, point 2).  GNNs have no leak, so the GLNN's
    integrating initialisation does not apply; they get the RNN's principle
    (eq. 69): self-loop ``1 - 1/j`` and a random per-symbol bias of size 1/2.
    """
    N, A, D = spec.units, spec.alphabet_size, spec.slots
    if len(nu) != A or len(nu_tilde) != A:
        raise ValueError(f"frequency vectors must have length alphabet_size={A}")
    inputs = random_graph(N, spec.degree, rng)
    w = np.zeros((N + 1, A))
    w[0] = np.log(nu)  # eq. (30)
    S = A if spec.gated else 1
    tau = np.zeros((S, N + 1, D))
    rho = np.zeros((A, N + 1))
    v0 = np.zeros(N + 1)
    u = rng.random((N + 1, A))  # u_jy uniform in [0, 1]
    centred = u - (u @ nu_tilde)[:, None]  # u_jy - sum_y' nu~_y' u_jy'
    for j in range(1, N + 1):  # eqs. (31)-(32) for the GLNN, eq. (69) otherwise (initialization.py)
        for y in range(A):
            self_loop, reading = unit_transition(spec.leak, j, centred[j, y], 1.0)
            s = y if spec.gated else 0
            tau[s, j, 1] = self_loop
            if spec.gated:
                tau[y, j, 0] = reading
            else:
                rho[y, j] = reading
    v0[1:] = initial_potentials(spec.leak, N)
    params = Params(inputs, w, tau, rho, v0)
    if spec.activation != "tanh":
        params = reparametrize(params, spec, "tanh", spec.activation)
    return params


def reparametrize(params: Params, spec: ModelSpec, source: str, target: str) -> Params:
    """Map parameters between tanh and logistic coordinates with identical network behaviour.

    With ``tanh(V) = 2 logistic(2V) - 1``, a tanh network (V, a) and a logistic
    network with ``V' = 2V``, ``a' = (a + 1)/2`` print the same distributions
    when (seed 000 §3.6; seed 004 §3.2):

        w'_iy = 2 w_iy,  w'_0y = w_0y - sum_{i>0} w_iy
        tau'_k = 4 tau_k (k > 0),  tau'_0 = 2 (tau_0 - sum_{k>0} tau_k)
        rho' = 2 rho,  V'^0 = 2 V^0.

    Invariant training methods follow the same trajectory in both coordinate
    systems; this map is how the tests check it.
    """
    if source == target:
        return params.copy()
    if {source, target} != set(ACTIVATIONS):
        raise ValueError(f"unknown activations {source!r} -> {target!r}")
    p = params.copy()
    w, tau = p.writing_weights, p.transition_weights
    if source == "tanh":
        w[0] -= w[1:].sum(axis=0)
        w[1:] *= 2.0
        tau[..., 0] = 2.0 * (tau[..., 0] - tau[..., 1:].sum(axis=-1))
        tau[..., 1:] *= 4.0
        p.input_weights *= 2.0
        p.initial_potential *= 2.0
    else:
        w[1:] *= 0.5
        w[0] += w[1:].sum(axis=0)
        tau[..., 1:] *= 0.25
        tau[..., 0] = 0.5 * tau[..., 0] + tau[..., 1:].sum(axis=-1)
        p.input_weights *= 0.5
        p.initial_potential *= 0.5
    tau[:, 0, :] = 0.0
    p.initial_potential[0] = 0.0
    return p


def activation_functions(activation: str):
    """(s, s', s^-1) as NumPy functions, for references and tests."""
    if activation == "tanh":
        return np.tanh, lambda v: 1.0 - np.tanh(v) ** 2, np.arctanh
    if activation == "logistic":
        sig = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
        return sig, lambda v: sig(v) * (1.0 - sig(v)), lambda a: math.log(a / (1.0 - a))
    raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
