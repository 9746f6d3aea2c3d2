"""EM for an HMM within a budget, with the interface seed 000's experiment protocol drives
(``training/experiment.py``: ``run``, ``steps``, ``train_seconds``, ``log2_likelihood``, ``history``)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..training.batch import run_budget
from .baum_welch import expected_counts, forward, predictive
from .model import HMM


@dataclass(frozen=True)
class EMRecord:
    """One EM step: the training log2-likelihood of the model it produced."""

    step: int
    log2_likelihood: float
    seconds: float


class HMMTrainer:
    """Baum-Welch on one training sequence; each step is one EM iteration over the whole sequence."""

    def __init__(self, hmm: HMM, symbols):
        self.params = hmm.copy()
        self.symbols = np.ascontiguousarray(symbols, dtype=np.int64)
        T, (N, D), A = len(self.symbols), hmm.succ.shape, hmm.emit.shape[1]
        if T < 2:
            raise ValueError("EM needs a training sequence of two symbols or more")
        if self.symbols.min() < 0 or self.symbols.max() >= A:
            raise ValueError(f"symbols must be in [0, {A})")
        self._alpha = np.empty((T, N))
        self._scale = np.empty(T)
        self._beta = np.empty(2 * N)
        self._edges, self._writes, self._first = np.zeros((N, D)), np.zeros((N, A)), np.zeros(N)
        self.steps = 0
        self.train_seconds = 0.0
        self.history: list[EMRecord] = []
        p = self.params
        self._loglik = forward(p.succ, p.trans, p.emit, p.init, self.symbols, self._alpha, self._scale)
        if not math.isfinite(self._loglik):
            raise ValueError("the HMM gives the training sequence probability 0: EM cannot start from it")
        # the networks' trainers report learning rates; EM has none
        self.rate_w = self.rate_tau = None

    @property
    def log2_likelihood(self) -> float:
        """Training log2-likelihood of the current parameters."""
        return self._loglik / math.log(2.0)

    def step(self) -> EMRecord:
        """One EM iteration: expected counts under the current model, then the model they make."""
        t0 = time.process_time()
        p = self.params
        for a in (self._edges, self._writes, self._first):
            a[...] = 0.0
        expected_counts(p.succ, p.trans, p.emit, self.symbols, self._alpha, self._scale, self._beta,
                        self._edges, self._writes, self._first)
        _normalise_rows(self._edges, p.trans)
        _normalise_rows(self._writes, p.emit)
        p.init[...] = self._first / self._first.sum()
        self._loglik = forward(p.succ, p.trans, p.emit, p.init, self.symbols, self._alpha, self._scale)
        self.train_seconds += time.process_time() - t0
        self.steps += 1
        record = EMRecord(self.steps, self.log2_likelihood, self.train_seconds)
        self.history.append(record)
        return record

    def run(self, steps: int | None = None, seconds: float | None = None, callback=None):
        """EM steps until ``steps`` of them or ``seconds`` of CPU time (``training.batch.run_budget``)."""
        return run_budget(self, self.step, steps, seconds, callback)


def _normalise_rows(counts: np.ndarray, out: np.ndarray) -> None:
    """out = counts with each row summing to 1; a row that saw nothing keeps its values (a state no path
    visits)."""
    totals = counts.sum(axis=1, keepdims=True)
    seen = totals[:, 0] > 0.0
    out[seen] = counts[seen] / totals[seen]


def log2_probs(hmm: HMM, symbols, regularize: bool = True) -> np.ndarray:
    """log2 P(x_t | x_<t) along ``symbols``, with seed 000 §4's regularisation unless ``regularize`` is False."""
    x = np.ascontiguousarray(symbols, dtype=np.int64)
    if len(x) and (x.min() < 0 or x.max() >= hmm.emit.shape[1]):
        raise ValueError(f"symbols must be in [0, {hmm.emit.shape[1]})")
    N = len(hmm.init)
    p = np.empty(len(x))
    predictive(hmm.succ, hmm.trans, hmm.emit, hmm.init, x, np.empty(N), np.empty(N), p)
    if not regularize:
        with np.errstate(divide="ignore"):
            return np.log2(p)
    # (1 - 1/(t+2)) P(x_t | x_<t) + 1/(t+2) 1/A, as kernels/forward.py's regularized_log2_probs has it
    lam = 1.0 / (np.arange(len(x)) + 2.0)
    return np.log2((1.0 - lam) * p + lam / hmm.emit.shape[1])
