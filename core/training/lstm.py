"""The LSTM rows of seed 000's Table 1: an LSTM trained in batch on one sequence, by plain gradient or by DH + FB.

Seed 000, Section 4 ("LSTMs"): "we have kept the same overall procedure and
simply replaced each RNN cell with an LSTM cell following Eqs. (7)-(11) in
[Gra13] ... We kept the softmax output from the other models ... The weights
were initialized to uniform random values in [-0.1, 0.1] ... Network
construction, network sizes, and CPU time budget were identical to the other
models."  So, here:

* **The graph** is the other models' (``model.random_graph``): cell j reads
  unit 0 (the constant 1: the gates' biases), its own output and d - 1 other
  cells' outputs, through the slots ``inputs[j, k]``.
* **The cell** is Graves's (2013) eqs. (7)-(11): memory cells with input,
  forget and output gates and peephole weights from the cell (seed 001,
  eqs. 2.1-2.5, with the forget gate every LSTM since 2000 carries); per
  cell j, reading symbol x_t, with a_t = (1, h_t) and sigma the logistic,

      i = sigma(sum_k W_ijk a_t[inputs_jk] + R_i x_t j + P_ij c_t[j])
      f = sigma(sum_k W_fjk a_t[inputs_jk] + R_f x_t j + P_fj c_t[j])
      g = tanh(sum_k W_gjk a_t[inputs_jk] + R_g x_t j)
      c_{t+1}[j] = f c_t[j] + i g
      o = sigma(sum_k W_ojk a_t[inputs_jk] + R_o x_t j + P_oj c_{t+1}[j])
      h_{t+1}[j] = o tanh(c_{t+1}[j])

  R holds each gate's input weight for each symbol (the symbol enters as a
  one-hot vector); the state starts at h_0 = c_0 = 0.
* **The output** is the other models' softmax (eq. 6) over a_t: pi_t reads
  the state before x_t, so the objective is eq. (16)'s
  sum_t chi_t log pi_t(x_t).
* **Initialisation**: every weight uniform in [-0.1, 0.1], except the
  writing weights' bias row, which starts at log nu_y as the other models'
  (eq. 30), so that every model starts from the symbol frequencies.
* **Training** is seed 000 §2's procedure (``training.batch.RateControlled``):
  a step on the writing weights w, then one on every cell weight, each kept
  only if the training log-likelihood does not go down, with its own
  learning rate.  Directions:

  - ``plain``: the gradient of the log-likelihood per symbol,
    (1/T) dL/dtheta, for w and the cells alike;
  - ``dhfb``: "the diagonal Hessian for the writing parameters w, and
    frequency-adjusted learning rates for the input symbols (equivalent to
    rescaling the inputs)": w by the inverse diagonal Hessian (the RNN's DH,
    ``kernels.writing.diagonal_step``), a symbol's input weights R_.y by
    1 / (its count), the shared weights W and P by 1/T, as the RNN's FB.

The gradient is back-propagation through the whole sequence (seed 000,
Appendix B for the RNN; the LSTM's chain rule below in ``backward``),
tested against finite differences and against a NumPy reference
(``tests/naive.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..jit import kernel
from ..kernels.elementary import IEEE, log_of, logistic, numerics_marker, tanh
from ..kernels.forward import regularized_log2_probs, softmax_into
from ..kernels.writing import accumulate_writing, diagonal_step
from ..model import random_graph
from .batch import Evaluation, RateControlled, TrainConfig, checked_sequence

GATE_I, GATE_F, GATE_G, GATE_O = range(4)  # rows of the gate weights and of a step's stored gates
PEEP_I, PEEP_F, PEEP_O = range(3)  # rows of the peephole weights
METHODS = {"plain": "plain gradient on every weight (seed 000, Table 1's \"LSTM with plain gradient\")",
           "dhfb": "diagonal Hessian for w, frequency-adjusted rates for the inputs (Table 1's \"LSTM with DH and FB\")"}
INIT_SCALE = 0.1  # seed 000 §4: "uniform random values in [-0.1, 0.1]"


@dataclass
class LSTMParams:
    """A batch LSTM: N cells, alphabet A, D = d + 1 slots per cell (slot 0: unit 0, slot 1: the cell itself)."""

    inputs: np.ndarray  # (N+1, D) int64: the units each cell reads (row 0 unused), model.random_graph's
    writing_weights: np.ndarray  # (N+1, A): w of eq. (6), over (1, h_1 .. h_N)
    gate_weights: np.ndarray  # (4, N+1, D): W, each gate's weights on its slots
    input_weights: np.ndarray  # (4, A, N+1): R, each gate's weight on each symbol
    peepholes: np.ndarray  # (3, N+1): P, the input, forget and output gates' weights on the cell

    def copy(self) -> "LSTMParams":
        return LSTMParams(*(np.array(getattr(self, f.name), copy=True) for f in fields(self)))

    @property
    def units(self) -> int:
        return self.inputs.shape[0] - 1

    @property
    def alphabet_size(self) -> int:
        return self.writing_weights.shape[1]


def initialize(units: int, degree: int, nu: np.ndarray, rng: np.random.Generator) -> LSTMParams:
    """A new LSTM on the other models' graph of ``units`` cells and ``degree`` inputs each; ``nu``: the symbol
    frequencies of eq. (30)."""
    if units < 1 or not 1 <= degree <= units:
        raise ValueError(f"need units >= 1 and degree in [1, units], got units={units}, degree={degree}")
    nu = np.asarray(nu, dtype=np.float64)
    A = len(nu)
    if A < 1 or not np.all(nu > 0.0):
        raise ValueError("nu must hold a positive frequency for every symbol (eq. 30 takes its log)")
    inputs = random_graph(units, degree, rng)
    N1, D = inputs.shape

    def uniform(*shape):
        return rng.uniform(-INIT_SCALE, INIT_SCALE, shape)

    w = uniform(N1, A)
    w[0] = np.log(nu)
    gates, inp, peep = uniform(4, N1, D), uniform(4, A, N1), uniform(3, N1)
    for arr in (gates[:, 0], inp[:, :, 0], peep[:, 0]):  # row 0 is unit 0, not a cell
        arr[...] = 0.0
    return LSTMParams(inputs, w, gates, inp, peep)


@dataclass
class Buffers:
    """One forward pass over T symbols: a (T+1, N+1) = (1, h_t); c (T+1, N+1) the cells; gates (T, 4, N+1) each
    step's i, f, g, o; pi (T, A) the predictions."""

    a: np.ndarray
    c: np.ndarray
    gates: np.ndarray
    pi: np.ndarray

    @classmethod
    def allocate(cls, T: int, units: int, alphabet_size: int) -> "Buffers":
        return cls(np.empty((T + 1, units + 1)), np.empty((T + 1, units + 1)), np.empty((T, 4, units + 1)),
                   np.empty((T, alphabet_size)))


@kernel
def forward(inputs, W, R, P, w, x, chi, a, c, gates, pi, numerics):
    """Run the LSTM over ``x`` from h_0 = c_0 = 0, filling a, c, gates and pi (``Buffers``); returns
    sum_t chi_t log pi_t(x_t) in nats (eq. 16)."""
    T = x.shape[0]
    N1, D = inputs.shape
    for j in range(N1):
        a[0, j] = 0.0
        c[0, j] = 0.0
    a[0, 0] = 1.0
    loglik = 0.0
    for t in range(T):
        softmax_into(a[t], w, pi[t], numerics)
        if chi[t] != 0.0:
            loglik += chi[t] * log_of(numerics, pi[t, x[t]])
        y = x[t]
        a[t + 1, 0] = 1.0
        c[t + 1, 0] = 0.0
        for j in range(1, N1):
            z_i = R[GATE_I, y, j] + P[PEEP_I, j] * c[t, j]
            z_f = R[GATE_F, y, j] + P[PEEP_F, j] * c[t, j]
            z_g = R[GATE_G, y, j]
            z_o = R[GATE_O, y, j]
            for k in range(D):
                u = a[t, inputs[j, k]]
                z_i += W[GATE_I, j, k] * u
                z_f += W[GATE_F, j, k] * u
                z_g += W[GATE_G, j, k] * u
                z_o += W[GATE_O, j, k] * u
            i = logistic(z_i)
            f = logistic(z_f)
            g = tanh(z_g)
            cell = f * c[t, j] + i * g
            o = logistic(z_o + P[PEEP_O, j] * cell)
            c[t + 1, j] = cell
            a[t + 1, j] = o * tanh(cell)
            gates[t, GATE_I, j] = i
            gates[t, GATE_F, j] = f
            gates[t, GATE_G, j] = g
            gates[t, GATE_O, j] = o
    return loglik


@kernel
def backward(inputs, W, P, w, x, chi, a, c, gates, pi, dh, dc, gW, gR, gP):
    """Add dL/dW, dL/dR and dL/dP of L = sum_t chi_t log pi_t(x_t) (nats) into gW, gR, gP: back-propagation
    through every step of ``forward``'s pass (whose buffers are a, c, gates, pi).  dh (T+1, N+1) and dc (N+1,)
    are work: dh[t] gathers dL/dh_t, first from the softmax at t,

        dL/dh_t[j] += chi_t sum_y (1{x_t = y} - pi_t(y)) w[j, y]          (eq. 6)

    then from step t's gates through the slots that read h_t."""
    T = x.shape[0]
    N1, D = inputs.shape
    A = w.shape[1]
    for t in range(T + 1):
        for j in range(N1):
            dh[t, j] = 0.0
    for t in range(T):
        if chi[t] == 0.0:
            continue
        for j in range(1, N1):
            total = 0.0
            for y in range(A):
                total -= pi[t, y] * w[j, y]
            dh[t, j] = chi[t] * (total + w[j, x[t]])
    for j in range(N1):
        dc[j] = 0.0
    for t in range(T - 1, -1, -1):  # step t: (h_t, c_t, x_t) -> (h_{t+1}, c_{t+1})
        y = x[t]
        for j in range(1, N1):
            i = gates[t, GATE_I, j]
            f = gates[t, GATE_F, j]
            g = gates[t, GATE_G, j]
            o = gates[t, GATE_O, j]
            cell = c[t + 1, j]
            tc = tanh(cell)
            d_h = dh[t + 1, j]
            d_o = d_h * tc * o * (1.0 - o)
            d_cell = dc[j] + d_h * o * (1.0 - tc * tc) + d_o * P[PEEP_O, j]
            d_i = d_cell * g * i * (1.0 - i)
            d_f = d_cell * c[t, j] * f * (1.0 - f)
            d_g = d_cell * i * (1.0 - g * g)
            dc[j] = d_cell * f + d_i * P[PEEP_I, j] + d_f * P[PEEP_F, j]
            gP[PEEP_I, j] += d_i * c[t, j]
            gP[PEEP_F, j] += d_f * c[t, j]
            gP[PEEP_O, j] += d_o * cell
            gR[GATE_I, y, j] += d_i
            gR[GATE_F, y, j] += d_f
            gR[GATE_G, y, j] += d_g
            gR[GATE_O, y, j] += d_o
            for k in range(D):
                src = inputs[j, k]
                u = a[t, src]
                gW[GATE_I, j, k] += d_i * u
                gW[GATE_F, j, k] += d_f * u
                gW[GATE_G, j, k] += d_g * u
                gW[GATE_O, j, k] += d_o * u
                if src > 0:
                    dh[t, src] += (W[GATE_I, j, k] * d_i + W[GATE_F, j, k] * d_f + W[GATE_G, j, k] * d_g
                                   + W[GATE_O, j, k] * d_o)


NUMERICS = numerics_marker(IEEE)


def _sequence(params: LSTMParams, symbols, predict_mask, buffers: Buffers | None = None):
    """(x, chi) checked against ``params`` (``batch.checked_sequence``), and ``buffers`` (new if None) checked to
    fit a pass over them."""
    x, chi = checked_sequence(symbols, predict_mask, params.alphabet_size)
    b = buffers or Buffers.allocate(len(x), params.units, params.alphabet_size)
    if b.pi.shape != (len(x), params.alphabet_size) or b.a.shape != (len(x) + 1, params.units + 1):
        raise ValueError("buffers do not fit this sequence and network")
    return x, chi, b


def _run(params: LSTMParams, x: np.ndarray, chi: np.ndarray, b: Buffers) -> float:
    """``forward`` on checked (x, chi) and buffers that fit them."""
    p = params
    return forward(p.inputs, p.gate_weights, p.input_weights, p.peepholes, p.writing_weights, x, chi,
                   b.a, b.c, b.gates, b.pi, NUMERICS)


def log_likelihood(params: LSTMParams, symbols, predict_mask=None, buffers: Buffers | None = None) -> float:
    """sum_t chi_t log pi_t(x_t) in nats (eq. 16) of ``params`` on ``symbols`` (the pass left in ``buffers``, if
    given)."""
    x, chi, b = _sequence(params, symbols, predict_mask, buffers)
    return _run(params, x, chi, b)


def gradient(params: LSTMParams, symbols, predict_mask=None) -> LSTMParams:
    """dL/dtheta of eq. (16)'s L in nats, as an ``LSTMParams`` (its ``inputs`` the graph's, unchanged)."""
    x, chi, b = _sequence(params, symbols, predict_mask)
    _run(params, x, chi, b)
    g = LSTMParams(params.inputs.copy(), np.zeros_like(params.writing_weights), np.zeros_like(params.gate_weights),
                   np.zeros_like(params.input_weights), np.zeros_like(params.peepholes))
    h0, hd = np.zeros_like(g.writing_weights), np.zeros_like(g.writing_weights)
    accumulate_writing(x, chi, b.a, b.pi, g.writing_weights, h0, hd)
    backward(params.inputs, params.gate_weights, params.peepholes, params.writing_weights, x, chi, b.a, b.c,
             b.gates, b.pi, np.empty_like(b.a), np.empty(params.units + 1), g.gate_weights, g.input_weights,
             g.peepholes)
    return g


def evaluate(params: LSTMParams, symbols, predict_mask=None, true_log2_likelihood=None) -> Evaluation:
    """Score a sequence with fixed parameters from the zero state, with seed 000 §4's regularisation."""
    x, chi, b = _sequence(params, symbols, predict_mask)
    _run(params, x, chi, b)
    lp = np.empty(len(x))
    regularized_log2_probs(x, b.pi, lp)
    return Evaluation.of(lp, chi, true_log2_likelihood)


class LSTMTrainer(RateControlled):
    """Seed 000's batch procedure for an LSTM (``method`` "plain" or "dhfb", the module docstring); the interface
    of ``training.batch.BatchTrainer`` (``run``, ``steps``, ``train_seconds``, ``log2_likelihood``, ``history``)."""

    def __init__(self, params: LSTMParams, symbols, predict_mask=None, method: str = "dhfb",
                 config: TrainConfig = TrainConfig()):
        if method not in METHODS:
            raise ValueError(f"an LSTM's method must be one of {', '.join(METHODS)}, got {method!r}")
        self.method = method
        self.config = config
        self.params = params.copy()
        self.symbols, self.chi = checked_sequence(symbols, predict_mask, params.alphabet_size)
        T, N, A = len(self.symbols), params.units, params.alphabet_size
        self.symbol_counts = np.maximum(np.bincount(self.symbols, minlength=A).astype(np.float64), 1.0)
        self._start(N, A)
        self._current = Buffers.allocate(T, N, A)
        self._trial = Buffers.allocate(T, N, A)
        self.loglik = self._forward(self.params, self._current)
        if not np.isfinite(self.loglik):
            raise ValueError("the initial parameters give a non-finite log-likelihood")
        self._W, self._h0, self._hd, self._dw = (np.zeros((N + 1, A)) for _ in range(4))
        self._dh, self._dc = np.empty((T + 1, N + 1)), np.empty(N + 1)
        self._gW, self._gR, self._gP = (np.zeros_like(getattr(params, name))
                                        for name in ("gate_weights", "input_weights", "peepholes"))

    def _forward(self, params: LSTMParams, buf: Buffers) -> float:
        return _run(params, self.symbols, self.chi, buf)

    def _writing_direction(self) -> dict[str, np.ndarray]:
        for arr in (self._W, self._h0, self._hd):
            arr.fill(0.0)
        cur = self._current
        accumulate_writing(self.symbols, self.chi, cur.a, cur.pi, self._W, self._h0, self._hd)
        if self.method == "dhfb":
            diagonal_step(self._W, self._hd, self.writing_damping, self._dw)
        else:
            np.divide(self._W, len(self.symbols), out=self._dw)
        return {"writing_weights": self._dw}

    def _transition_direction(self) -> dict[str, np.ndarray]:
        p, cur = self.params, self._current
        for arr in (self._gW, self._gR, self._gP):
            arr.fill(0.0)
        backward(p.inputs, p.gate_weights, p.peepholes, p.writing_weights, self.symbols, self.chi, cur.a, cur.c,
                 cur.gates, cur.pi, self._dh, self._dc, self._gW, self._gR, self._gP)
        T = float(len(self.symbols))
        self._gW /= T
        self._gP /= T
        if self.method == "dhfb":  # a symbol's input weights at the rate of its frequency (FB)
            self._gR /= self.symbol_counts[None, :, None]
        else:
            self._gR /= T
        return {"gate_weights": self._gW, "input_weights": self._gR, "peepholes": self._gP}
