"""Batch training of the GLNN family on one sequence: seed 000, Section 2 (its learning-rate control,
``RateControlled``, also trains the batch LSTM of ``lstm.py``).

The trainer alternates a step on the writing weights w and a step on the
transition weights (tau, rho) together with the initial potentials V^0,
starting with w.  Each step computes a direction at the current parameters,
then tries ``theta + eta * direction``: if the training log-likelihood
(eq. 16) went down, the trial is cancelled, eta is halved and the step tried
again; otherwise it is kept and eta grows by 1.1.  The two learning rates are
controlled separately and start at eta_0 = 1/N (seed 000 §2, "Learning rate
control").

The step can never lower the training log-likelihood: a trial that does not
improve is never kept, and one whose log-likelihood is not finite is treated
as a degradation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..kernels.backward import Backprop, Scored, backward
from ..kernels.forward import allocate, forward
from ..kernels.transition import TransitionSums, accumulate_transition, solve_blocks, solve_quasi_diagonal
from ..kernels.writing import accumulate_writing, diagonal_step, quasi_diagonal_step
from ..model import ModelSpec, Params, network
from .methods import Method, get_method

LN2 = float(np.log(2.0))


@dataclass(frozen=True)
class TrainConfig:
    """Settings of the batch trainer; the defaults are seed 000's."""

    method: str = "rbpm"
    metric_damping: float = 1.0  # epsilon added to the metric blocks' diagonal (text after eq. 26)
    writing_damping: float | None = None  # None: eps_y = frequency of y + machine epsilon (text after eq. 19)
    initial_rate: float | None = None  # None: eta_0 = 1/N
    rate_growth: float = 1.1
    rate_shrink: float = 0.5
    max_retries: int = 60  # retries before a step is given up (eta then shrinks by 2^-61)
    rms_decay: float = 0.9  # running mean of squared gradients for the "rms" method
    clip: float = 0.0  # seed 001, Algorithm 2: a step direction longer than this is rescaled to it; 0: off

    def __post_init__(self):
        if not self.clip >= 0.0:
            raise ValueError(f"clip must be >= 0 (0: no clipping), got {self.clip}")


@dataclass
class StepRecord:
    step: int
    part: str  # "w" or "tau"
    log2_likelihood: float
    rate: float
    retries: int
    accepted: bool
    seconds: float


@dataclass
class _Buffers:
    V: np.ndarray
    a: np.ndarray
    pi: np.ndarray


class RateControlled:
    """Seed 000 §2's learning-rate control, for any batch trainer: alternate a writing step and a transition
    step (w first), each tried at its own rate, kept only if the training log-likelihood does not go down.

    A subclass sets ``config`` (a ``TrainConfig``), ``params`` (with ``copy()`` and its arrays as attributes),
    ``symbols`` and ``chi`` (``checked_sequence``), calls ``_start(units, alphabet_size)``, sets ``loglik``
    (nats), ``_current`` and ``_trial`` (forward buffers), and defines ``_forward(params, buffers)`` (the training log-likelihood in nats,
    filling ``buffers``), ``_writing_direction()`` and ``_transition_direction()`` (each a dict from a
    parameter's name to its direction at ``params``).
    """

    def _start(self, units: int, alphabet_size: int):
        """The controls' starting values, from ``symbols`` and ``chi``: eps_y of eq. (18) for the writing steps
        (the frequency of y among the scored symbols, or ``config.writing_damping``), both rates at eta_0 = 1/N
        (or ``config.initial_rate``), and an empty history."""
        config, chi = self.config, self.chi
        if config.writing_damping is None:
            predicted = np.bincount(self.symbols, weights=chi, minlength=alphabet_size)
            self.writing_damping = predicted / max(chi.sum(), 1.0) + np.finfo(float).eps
        else:
            self.writing_damping = np.full(alphabet_size, float(config.writing_damping))
        self.rate_w = self.rate_tau = 1.0 / units if config.initial_rate is None else float(config.initial_rate)
        self.steps = 0
        self.history: list[StepRecord] = []
        self.train_seconds = 0.0

    @property
    def log2_likelihood(self) -> float:
        """Training log-likelihood of eq. (16), in bits."""
        return self.loglik / LN2

    # -- the accept / reject rule -------------------------------------------
    def _try(self, directions: dict[str, np.ndarray], rate: float) -> tuple[float, int, bool]:
        cfg = self.config
        if not all(np.all(np.isfinite(d)) for d in directions.values()):
            return rate * cfg.rate_shrink, 0, False  # a non-finite direction: no rate can help
        if cfg.clip > 0.0:  # seed 001, Algorithm 2, on the whole step (w's, or every transition parameter's)
            norm = float(np.sqrt(sum(float(np.sum(d * d)) for d in directions.values())))
            if norm > cfg.clip:
                directions = {name: d * (cfg.clip / norm) for name, d in directions.items()}
        for retry in range(cfg.max_retries + 1):
            trial = self.params.copy()
            for name, direction in directions.items():
                arr = getattr(trial, name)
                arr += rate * direction
            loglik = self._forward(trial, self._trial)
            if np.isfinite(loglik) and loglik >= self.loglik:
                self.params = trial
                self.loglik = loglik
                self._current, self._trial = self._trial, self._current
                return rate * cfg.rate_growth, retry, True
            rate *= cfg.rate_shrink
        return rate, cfg.max_retries, False

    def step_writing(self) -> StepRecord:
        return self._step("w")

    def step_transition(self) -> StepRecord:
        return self._step("tau")

    def _step(self, part: str) -> StepRecord:
        t0 = time.process_time()
        if part == "w":
            self.rate_w, retries, ok = self._try(self._writing_direction(), self.rate_w)
            rate = self.rate_w
        else:
            self.rate_tau, retries, ok = self._try(self._transition_direction(), self.rate_tau)
            rate = self.rate_tau
        elapsed = time.process_time() - t0
        self.train_seconds += elapsed
        self.steps += 1
        rec = StepRecord(self.steps, part, self.log2_likelihood, rate, retries, ok, self.train_seconds)
        self.history.append(rec)
        return rec

    def run(self, steps: int | None = None, seconds: float | None = None, callback=None):
        """Alternate w and tau steps (w first) until ``steps`` steps or ``seconds`` of CPU time (:func:`run_budget`)."""
        return run_budget(self, lambda: self._step("w" if self.steps % 2 == 0 else "tau"), steps, seconds, callback)


def run_budget(trainer, step, steps: int | None, seconds: float | None, callback=None) -> list:
    """Call ``step()`` (which returns a record and adds to ``trainer.train_seconds``) until ``steps`` calls or
    ``seconds`` of CPU time; ``callback(trainer, record)`` after each, returning True, stops the run.  CPU time
    (``time.process_time``) so that a budget means the same on a busy machine.  Returns ``trainer.history``."""
    if steps is None and seconds is None:
        raise ValueError("give a step budget, a time budget, or both")
    done = 0
    while (steps is None or done < steps) and (seconds is None or trainer.train_seconds < seconds):
        record = step()
        done += 1
        if callback is not None and callback(trainer, record):
            break
    return trainer.history


def checked_sequence(symbols, predict_mask, alphabet_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, chi): the symbols as int64 and the mask as floats (ones if None), checked to be what a kernel may
    index with: not empty, symbols in [0, alphabet_size), a mask of the same length."""
    x = np.ascontiguousarray(symbols, dtype=np.int64)
    if x.ndim != 1 or len(x) == 0:
        raise ValueError("the sequence is empty (or not a sequence): nothing to train on or score")
    if x.min() < 0 or x.max() >= alphabet_size:
        raise ValueError(f"symbols must be in [0, {alphabet_size}), got range [{x.min()}, {x.max()}]")
    chi = np.ones(len(x)) if predict_mask is None else np.ascontiguousarray(predict_mask, dtype=np.float64)
    if chi.shape != x.shape:
        raise ValueError(f"predict_mask must have shape ({len(x)},), got {chi.shape}")
    return x, chi


class BatchTrainer(RateControlled):
    """Trains ``params`` in place of a copy on ``symbols`` (with mask ``predict_mask``)."""

    def __init__(self, spec: ModelSpec, params: Params, symbols, predict_mask=None, config: TrainConfig = TrainConfig()):
        self.spec = spec
        self.config = config
        self.method: Method = get_method(config.method, spec.model)
        self.params = params.copy()
        self.symbols, self.chi = checked_sequence(symbols, predict_mask, spec.alphabet_size)
        T = len(self.symbols)
        N, A, D = spec.units, spec.alphabet_size, spec.slots
        S = A if spec.gated else 1
        self.symbol_counts = np.bincount(self.symbols, minlength=A).astype(np.float64)
        self._start(N, A)
        self._current = _Buffers(*allocate(T, N, A))
        self._trial = _Buffers(*allocate(T, N, A))
        self.loglik = self._forward(self.params, self._current)  # nats
        if not np.isfinite(self.loglik):
            raise ValueError("the initial parameters give a non-finite log-likelihood")
        # work arrays
        self._W = np.zeros((N + 1, A))
        self._h0 = np.zeros((N + 1, A))
        self._hd = np.zeros((N + 1, A))
        self._dw = np.zeros((N + 1, A))
        self._B = np.zeros((T + 1, N + 1))
        self._m = np.zeros((T + 1, N + 1))
        self._scratch = np.zeros((3, N + 1))
        self._G = np.zeros((S, N + 1, D))
        R = 0 if spec.gated else A  # input weights rho exist only in the RNN
        self._G_rho = np.zeros((R, N + 1))
        self._M = np.zeros((S, N + 1, D, D))
        self._M_rho = np.zeros((R, N + 1))
        self._dtau = np.zeros((S, N + 1, D))
        self._drho = np.zeros((R, N + 1))
        self._dv0 = np.zeros(N + 1)
        self._chol = np.zeros((D, D))
        self._rms = None
        self.failed_blocks = 0

    # -- evaluation --------------------------------------------------------
    def _forward(self, params: Params, buf: _Buffers) -> float:
        s = self.spec
        return forward(network(s, params), self.symbols, self.chi, params.writing_weights, params.initial_potential,
                       buf.V, buf.a, buf.pi)

    # -- directions --------------------------------------------------------
    def _writing_direction(self) -> dict[str, np.ndarray]:
        for arr in (self._W, self._h0, self._hd):
            arr.fill(0.0)
        cur = self._current
        accumulate_writing(self.symbols, self.chi, cur.a, cur.pi, self._W, self._h0, self._hd)
        if self.method.writing == "qdh":
            quasi_diagonal_step(self._W, self._h0, self._hd, self.writing_damping, self._dw)
        else:
            diagonal_step(self._W, self._hd, self.writing_damping, self._dw)
        return {"writing_weights": self._dw}

    def _transition_direction(self) -> dict[str, np.ndarray]:
        s, p, cur, meth = self.spec, self.params, self._current, self.method
        self._B[-1].fill(0.0)
        self._m[-1].fill(0.0)
        net = network(s, p)
        back = Backprop(self._B, self._m)
        backward(net, Scored(self.symbols, self.symbols, self.chi), p.writing_weights, cur.a, cur.pi, meth.modulus,
                 back, self._scratch)
        for arr in (self._G, self._G_rho, self._M, self._M_rho):
            arr.fill(0.0)
        accumulate_transition(net, self.symbols, cur.a, back, meth.quasi_diagonal,
                              TransitionSums(self._G, self._G_rho, self._M, self._M_rho))
        eps = self.config.metric_damping
        B0 = self._B[0]
        if meth.transition == "metric":
            if meth.quasi_diagonal:
                solve_quasi_diagonal(self._G, self._M, self._G_rho, self._M_rho, eps, self._dtau, self._drho)
            else:
                self.failed_blocks += solve_blocks(self._G, self._M, eps, self._dtau, self._chol)
            self._dv0[:] = B0 / (self._m[0] + eps)  # eq. (29)
        elif meth.transition == "fb":
            # frequency-adjusted backpropagation: a symbol's parameters are divided by the number
            # of terms in their gradient; the RNN's shared weights by the sequence length
            counts = np.maximum(self.symbol_counts, 1.0)
            if s.gated:
                self._dtau[:] = self._G / counts[:, None, None]
            else:
                self._dtau[:] = self._G / len(self.symbols)
                self._drho[:] = self._G_rho / counts[:, None]
            self._dv0[:] = B0
        else:  # rms
            grads = (self._G, self._G_rho, B0)
            if self._rms is None:
                self._rms = [g * g for g in grads]
            else:
                d = self.config.rms_decay
                for r, g in zip(self._rms, grads):
                    r *= d
                    r += (1.0 - d) * g * g
            for out, g, r in zip((self._dtau, self._drho, self._dv0), grads, self._rms):
                np.divide(g, np.sqrt(r) + 1e-12, out=out)
        self._dv0[0] = 0.0
        directions = {"transition_weights": self._dtau, "initial_potential": self._dv0}
        if not s.gated:
            directions["input_weights"] = self._drho
        return directions

@dataclass
class Evaluation:
    """A sequence scored by a trained network (seed 000 §4: regularised validation log-likelihood)."""

    log2_likelihood: float  # sum over predicted positions
    true_log2_likelihood: float | None = None
    error_rate: float | None = None  # distant XOR: fraction of predicted positions with p(correct) <= 1/2
    log2_probs: np.ndarray = field(default=None, repr=False)

    @classmethod
    def of(cls, log2_probs: np.ndarray, chi: np.ndarray, true_log2_likelihood=None) -> "Evaluation":
        """The evaluation of a sequence whose positions' log2-probabilities are ``log2_probs`` (weights ``chi``)."""
        predicted = chi != 0.0
        total = float(np.sum(chi[predicted] * log2_probs[predicted]))
        error = float(np.mean(log2_probs[predicted] <= -1.0)) if predicted.any() else None
        return cls(total, true_log2_likelihood, error, log2_probs)

    @property
    def regret(self) -> float | None:
        """Cumulative regret in bits: truth minus model (Table 1)."""
        if self.true_log2_likelihood is None:
            return None
        return self.true_log2_likelihood - self.log2_likelihood


def evaluate(spec: ModelSpec, params: Params, symbols, predict_mask=None, true_log2_likelihood=None, regularize=True) -> Evaluation:
    """Score a sequence with fixed parameters, from V^0, with seed 000's regularisation."""
    from ..kernels.forward import regularized_log2_probs

    x = np.ascontiguousarray(symbols, dtype=np.int64)
    chi = np.ones(len(x)) if predict_mask is None else np.ascontiguousarray(predict_mask, dtype=np.float64)
    V, a, pi = allocate(len(x), spec.units, spec.alphabet_size)
    forward(network(spec, params), x, chi, params.writing_weights, params.initial_potential, V, a, pi)
    if regularize:
        lp = np.empty(len(x))
        regularized_log2_probs(x, pi, lp)
    else:
        lp = np.log2(pi[np.arange(len(x)), x])
    return Evaluation.of(lp, chi, true_log2_likelihood)
