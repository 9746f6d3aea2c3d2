"""Batch training, on one whole sequence, of the recurrent models seqd otherwise streams: the GRU, the scoRNN,
the ENRNN and the echo-state network (``seqd train --model batch-gru``, ``batch-scornn``, ``batch-enrnn``,
``batch-esn``).

Each model is the online learner's own (``core/lstm``, ``core/scornn``, ``core/esn``): the same evolution
kernel, the same back-propagation kernel, the same update of its recurrent weights (the scoRNN's Cayley
transform, the ENRNN's normalised short-term block, seed 002 eqs. 2.54-2.60 and 2.80-2.95), run here with a
window as long as the training sequence.  So the gradient is back-propagation through the whole sequence from
the initial state h = 0, not a truncated window's.

Training is seed 000 §2's procedure (``batch.RateControlled``): a step on the readout, then a step on the
recurrent weights, each kept only if the training log-likelihood (eq. 16, the scored positions' sum) does not
go down, each at its own rate (x 1.1 when kept, / 2 and retried when not).  Directions:

* the readout (pi_t = softmax of v^T (1, h_t), eq. 6) by seed 000's quasi-diagonal Hessian step (QDH, eqs.
  17-21): the readout is the GLNN's writing layer over the model's states;
* the recurrent weights by their mean gradient over the scored positions, through the model's own update
  (``apply_gradient``), which rescales a gradient longer than ``clip`` to that length (seed 001, Algorithm 2);
  an ENRNN's configuration needs a clip, and its preset's (30) is used when ``TrainConfig.clip`` is 0.
  ``TrainConfig.clip`` > 0 also rescales the readout's direction, as it does every batch trainer's step.

The echo-state network trains its readout alone (its reservoir is drawn, never trained): its batch fit is the
QDH step over the whole sequence's reservoir states, repeated under the same rate control.

The alphabet is the task's, closed: every symbol has its code from the start (code = symbol + 1, in symbol
order; code 0, the online learners' escape, is left out of the softmax).  Each gradient is tested against
finite differences of the log-likelihood (``tests/test_readout_batch.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from ..esn import reservoir
from ..esn.state import new_state as new_esn_state
from ..jit import kernel
from ..kernels.elementary import IEEE, log_of, numerics_marker
from ..kernels.forward import regularized_log2_probs, softmax_into
from ..kernels.writing import accumulate_writing, quasi_diagonal_step
from ..lstm import cell, gru
from ..lstm.config import FILLED
from ..lstm.state import new_state as new_lstm_state
from ..model import symbol_frequencies
from ..scornn import cayley
from ..scornn.state import new_state as new_scornn_state
from .batch import Evaluation, RateControlled, TrainConfig, checked_sequence, run_budget

METHODS = {"qdh": "seed 000's QDH step on the readout, the mean gradient (clipped) on the recurrent weights"}


# -- each model's step, as the sequence kernel calls it: (state, code, the echo-state network's leak) ----------
@kernel
def _lstm_step(st, code, leak):
    cell.forward(st, code)


@kernel
def _gru_step(st, code, leak):
    gru.gru_forward(st, code)


@kernel
def _scornn_step(st, code, leak):
    cayley.forward(st, code)


@kernel
def _esn_step(st, code, leak):
    reservoir.read(st, code, leak)


@dataclass(frozen=True)
class Family:
    """What the trainer needs of a model: its new state, its step, its back-propagation kernel and update (None:
    the reservoir, never trained), the window arrays to grow to the sequence, its trainable arrays (the readout
    last), the gradient arrays its back-propagation fills, and how a symbol joins."""

    new_state: Callable
    step: Callable
    gradient: Callable | None
    update: Callable | None  # (state, rate, clip, config)
    window: tuple[str, ...]
    params: tuple[str, ...]
    grads: tuple[str, ...]
    join: Callable  # (state, config, symbol)


def _scornn_update(st, rate, clip, c):
    cayley.apply_gradient(st, rate, rate * c.skew_rate / c.learning_rate, clip, c.coupling, c.margin)


_LSTM_WINDOW = ("hs", "cs", "gates", "codes", "dh")


def _lstm_join(st, c, symbol):
    cell._join(st, c.alphabet_cap, c.seed, c.init_scale, symbol)


def _lstm_update(st, rate, clip, c):  # the LSTM's and the GRU's
    cell.apply_gradient(st, rate, clip)


FAMILIES = {
    "lstm": Family(new_lstm_state, _lstm_step, cell.window_gradient, _lstm_update, _LSTM_WINDOW,
                   ("w", "embed", "v"), ("grad_w", "grad_embed"), _lstm_join),
    "gru": Family(new_lstm_state, _gru_step, gru.gru_window_gradient, _lstm_update, _LSTM_WINDOW,
                  ("w", "embed", "v"), ("grad_w", "grad_embed"), _lstm_join),
    "scornn": Family(new_scornn_state, _scornn_step, cayley.window_gradient, _scornn_update,
                     ("hs", "zs", "codes", "dh"),
                     ("skew", "w", "embed", "bias", "inverse", "short_t", "spectrum", "v"),
                     ("grad_w", "grad_embed", "grad_bias"),
                     lambda st, c, symbol: cayley._join(st, c.alphabet_cap, c.seed, c.init_scale, symbol)),
    "esn": Family(new_esn_state, _esn_step, None, None, (), ("w",), (),
                  lambda st, c, symbol: reservoir._join(st, c.alphabet_cap, c.seed, c.input_scale, c.writing_prior,
                                                        symbol)),
}
FAMILIES["enrnn"] = FAMILIES["scornn"]


@kernel
def score_sequence(step, st, readout, codes, chi, leak, numerics, a_all, pi_all):
    """Run the model over ``codes`` from its current state, with the readout ``readout`` (its columns 1..A, the
    escape's left out): a_all[t] = (1, h_t), the state the prediction of x_t reads, pi_all[t] that prediction
    over the A symbols, and a_all[T] the state after the last.  Returns sum_t chi_t log pi_t(x_t) (nats, eq. 16)."""
    T = codes.shape[0]
    N1 = a_all.shape[1]
    loglik = 0.0
    for t in range(T):
        for i in range(N1):
            a_all[t, i] = st.a[i]
        softmax_into(st.a, readout[:, 1:], pi_all[t], numerics)
        if chi[t] != 0.0:
            loglik += chi[t] * log_of(numerics, pi_all[t, codes[t] - 1])
        step(st, codes[t], leak)
    for i in range(N1):
        a_all[T, i] = st.a[i]
    return loglik


@kernel
def readout_errors(readout, codes, chi, pi_all, dh):
    """dh[t - 1] = chi_t w^T (e_{x_t} - pi_t) over the units, t >= 1: the error the prediction of x_t sends into
    the state h_t, which the model's step t - 1 made (the back-propagation kernels' input)."""
    T = codes.shape[0]
    N1, A = readout.shape[0], pi_all.shape[1]
    for t in range(1, T):
        c = chi[t]
        for i in range(1, N1):
            acc = 0.0
            if c != 0.0:
                for y in range(A):
                    acc += readout[i, 1 + y] * ((1.0 if codes[t] == y + 1 else 0.0) - pi_all[t, y])
            dh[t - 1, i - 1] = c * acc
    for i in range(1, N1):
        dh[T - 1, i - 1] = 0.0  # h_T predicts nothing in the sequence


class ReadoutParams(dict):
    """The trainable arrays of a model by name (``batch.RateControlled`` copies and steps them)."""

    def copy(self) -> "ReadoutParams":
        return ReadoutParams({name: np.array(value, copy=True) for name, value in self.items()})

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@dataclass
class _Buffers:
    a: np.ndarray  # (T+1, N+1)
    pi: np.ndarray  # (T, A)


class _Runner:
    """A model's state with a window as long as a sequence, every symbol joined; how to load parameters into it
    and run it from h = 0."""

    def __init__(self, name: str, config, length: int):
        if name not in FAMILIES:
            raise ValueError(f"no batch trainer for {name!r}; there are: {', '.join(FAMILIES)}")
        self.family = family = FAMILIES[name]
        state = family.new_state(config)
        grown = {}
        for field in family.window:  # the same arrays, with room for every step of the sequence
            arr = getattr(state, field)
            rows = length + 1 if arr.shape[0] == config.horizon + 1 else length
            if field == "codes":  # the update lists each code once there (ReadoutTrainer._try_update)
                rows = max(rows, config.alphabet_cap)
            grown[field] = np.zeros((rows,) + arr.shape[1:], dtype=arr.dtype)
        self.state = state._replace(**grown)
        for symbol in range(config.alphabet_cap):  # code = symbol + 1
            family.join(self.state, config, symbol)
        self.readout_name = family.params[-1]
        self.leak = float(getattr(config, "leak", 0.0))
        self.numerics = numerics_marker(IEEE)

    @property
    def readout(self) -> np.ndarray:
        return getattr(self.state, self.readout_name)

    def params(self) -> ReadoutParams:
        return ReadoutParams({name: np.array(getattr(self.state, name), copy=True) for name in self.family.params})

    def load(self, params: ReadoutParams):
        for name, value in params.items():
            getattr(self.state, name)[...] = value

    def reset(self):
        """The initial state, h = 0 (the cells' too), before the sequence's first symbol."""
        st = self.state
        st.a[1:] = 0.0
        if self.family.window:
            st.hs[0] = 0.0
            if "cs" in self.family.window:
                st.cs[0] = 0.0
            st.counts[FILLED] = 0

    def run(self, params: ReadoutParams, codes, chi, buf: _Buffers) -> float:
        self.load(params)
        self.reset()
        return score_sequence(self.family.step, self.state, self.readout, codes, chi, self.leak, self.numerics,
                              buf.a, buf.pi)


def preset_config(name: str, alphabet_size: int, units: int, seed: int):
    """The online preset's configuration for ``name`` (gru, lstm, scornn, enrnn, esn, rehearsal) over the alphabet, with
    ``units`` units or cells (0: the preset's)."""
    from .. import learners
    _, make = learners.PRESETS[name]
    config = make(alphabet_cap=alphabet_size, seed=seed)
    sized = {field: units for field in ("units", "cells") if hasattr(config, field) and units > 0}
    if not sized:
        return config
    if hasattr(config, "degree"):  # a rehearsing GLNN's unit reads at most every unit
        sized["degree"] = min(config.degree, units)
    if hasattr(config, "connections"):  # an echo-state unit reads at most every unit
        sized["connections"] = min(config.connections, units)
    if hasattr(config, "short"):  # the scoRNN's and the ENRNN's proportions: D's -1 on half the long-term units
        short = round(units * config.short / config.units)  # the ENRNN preset's 24 of 64 short-term units
        if config.short and units < 2:
            raise ValueError(f"an ENRNN needs at least 2 units (long-term and short-term), got {units}")
        short = max(short, 1) if config.short else 0
        sized.update(short=short, negatives=(units - short) * config.negatives // (config.units - config.short))
    return replace(config, **sized)


class ReadoutTrainer(RateControlled):
    """Trains one of seqd's readout models (``name``: gru, lstm, scornn, enrnn, esn) on ``symbols``."""

    def __init__(self, name: str, model_config, symbols, predict_mask=None, config: TrainConfig = TrainConfig()):
        self.name, self.model_config, self.config = name, model_config, config
        A = model_config.alphabet_cap
        self.symbols, self.chi = checked_sequence(symbols, predict_mask, A)
        self.codes = self.symbols + 1
        T = len(self.symbols)
        self.runner = _Runner(name, model_config, T)
        self.params = self.runner.params()
        nu, _ = symbol_frequencies(self.symbols, self.chi, A)
        readout = self.params[self.runner.readout_name]
        readout[:, 0] = 0.0
        readout[0, 1:] = np.log(nu)  # eq. (30): every model starts from the symbol frequencies (seed 000 §4)
        units = self.runner.state.a.shape[0] - 1
        self._start(units, A)
        self._current = _Buffers(np.zeros((T + 1, units + 1)), np.zeros((T, A)))
        self._trial = _Buffers(np.zeros((T + 1, units + 1)), np.zeros((T, A)))
        self.loglik = self._forward(self.params, self._current)
        if not np.isfinite(self.loglik):
            raise ValueError("the initial parameters give a non-finite log-likelihood")
        self._W, self._h0, self._hd, self._dw = (np.zeros((units + 1, A)) for _ in range(4))
        self.clip = config.clip if config.clip > 0.0 else float(getattr(model_config, "clip", 0.0))
        self.scored = max(float(np.sum(self.chi)), 1.0)
        self._scorers: dict[int, _Runner] = {}  # evaluate's runners, by sequence length

    # -- evaluation --------------------------------------------------------
    def _forward(self, params: ReadoutParams, buf: _Buffers) -> float:
        return self.runner.run(params, self.codes, self.chi, buf)

    def gradient(self) -> ReadoutParams:
        """d log-likelihood / d theta (nats) at ``params``, by name: the readout's (eq. 17) and, back through the
        whole sequence, the recurrent weights' (the model's own back-propagation kernel)."""
        out = self._recurrent_gradient()
        cur = self._current
        W = np.zeros_like(self._W)
        accumulate_writing(self.symbols, self.chi, cur.a, cur.pi, W, np.zeros_like(W), np.zeros_like(W))
        readout = np.zeros_like(self.params[self.runner.readout_name])
        readout[:, 1:] = W
        out[self.runner.readout_name] = readout
        return out

    def _recurrent_gradient(self) -> ReadoutParams:
        """The recurrent weights' gradient at ``params`` (none for the reservoir): the model is run again at
        ``params`` first, since its window arrays hold the last trial's steps."""
        cur = self._current
        self.loglik = self._forward(self.params, cur)
        out = ReadoutParams()
        family = self.runner.family
        if family.gradient is not None:
            st = self.runner.state
            readout_errors(self.runner.readout, self.codes, self.chi, cur.pi, st.dh)
            for name in family.grads:
                getattr(st, name)[...] = 0.0
            family.gradient(st)
            for name in family.grads:
                out[name] = np.array(getattr(st, name), copy=True)
        return out

    # -- directions --------------------------------------------------------
    def _writing_direction(self) -> dict[str, np.ndarray]:
        for arr in (self._W, self._h0, self._hd):
            arr.fill(0.0)
        cur = self._current
        accumulate_writing(self.symbols, self.chi, cur.a, cur.pi, self._W, self._h0, self._hd)
        quasi_diagonal_step(self._W, self._h0, self._hd, self.writing_damping, self._dw)
        direction = np.zeros_like(self.params[self.runner.readout_name])
        direction[:, 1:] = self._dw
        return {self.runner.readout_name: direction}

    def _transition_direction(self) -> dict[str, np.ndarray]:
        return {name: g / self.scored for name, g in self._recurrent_gradient().items()}

    def _try(self, directions: dict[str, np.ndarray], rate: float) -> tuple[float, int, bool]:
        if self.runner.readout_name in directions:  # the readout: theta + rate * direction, as every batch trainer
            return super()._try(directions, rate)
        return self._try_update(directions, rate)

    def _try_update(self, grads: dict[str, np.ndarray], rate: float) -> tuple[float, int, bool]:
        """The recurrent step through the model's own update (its Cayley transform, its clipping), at ``rate``,
        halved until the log-likelihood does not go down (seed 000 §2)."""
        cfg = self.config
        if not all(np.all(np.isfinite(g)) for g in grads.values()):
            return rate * cfg.rate_shrink, 0, False
        runner, st = self.runner, self.runner.state
        codes = st.codes  # the update visits the rows of the codes its window read: here each code once
        A = self.model_config.alphabet_cap
        for retry in range(cfg.max_retries + 1):
            runner.load(self.params)
            for name, g in grads.items():
                getattr(st, name)[...] = g
            codes[:A] = np.arange(1, A + 1)
            st.counts[FILLED] = A
            runner.family.update(st, rate, self.clip, self.model_config)
            trial = runner.params()
            loglik = self._forward(trial, self._trial)
            if np.isfinite(loglik) and loglik >= self.loglik:
                self.params, self.loglik = trial, loglik
                self._current, self._trial = self._trial, self._current
                return rate * cfg.rate_growth, retry, True
            rate *= cfg.rate_shrink
        return rate, cfg.max_retries, False

    def run(self, steps: int | None = None, seconds: float | None = None, callback=None):
        """Alternate readout and recurrent steps (readout first); the echo-state network's are all readout steps."""
        alone = self.runner.family.gradient is None
        return run_budget(self, lambda: self._step("w" if alone or self.steps % 2 == 0 else "tau"), steps,
                          seconds, callback)

    # -- scoring -----------------------------------------------------------
    def evaluate(self, symbols, predict_mask=None, true_log2_likelihood=None) -> Evaluation:
        """Score a sequence with the current parameters, from h = 0, with seed 000's regularisation (§4)."""
        x, chi = checked_sequence(symbols, predict_mask, self.model_config.alphabet_cap)
        T, A = len(x), self.model_config.alphabet_cap
        if T not in self._scorers:
            self._scorers[T] = _Runner(self.name, self.model_config, T)
        runner = self._scorers[T]
        buf = _Buffers(np.zeros((T + 1, runner.state.a.shape[0])), np.zeros((T, A)))
        runner.run(self.params, x + 1, chi, buf)
        lp = np.empty(len(x))
        regularized_log2_probs(x, buf.pi, lp)
        return Evaluation.of(lp, chi, true_log2_likelihood)


def log2_likelihood_of(trainer: ReadoutTrainer, params: ReadoutParams) -> float:
    """The training log-likelihood (bits) ``params`` give, without moving the trainer: the finite-difference tests'
    objective."""
    buf = _Buffers(np.zeros_like(trainer._trial.a), np.zeros_like(trainer._trial.pi))
    return trainer._forward(params, buf) / math.log(2.0)


BATCH_MODELS: dict[str, str] = {"batch-gru": "gru", "batch-scornn": "scornn", "batch-enrnn": "enrnn",
                                "batch-esn": "esn"}  # seqd train's model name -> the online preset it trains
