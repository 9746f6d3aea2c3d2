"""What a stream serves: an immutable view of its learner at one position, published by the worker after each
batch and read by the I/O loop (``predict``, ``stats``, the metrics) without touching the learner's arrays.  A
hibernated stream keeps its last view: it answers while its learner sleeps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.learners import model_of
from ..core.open_alphabet import OpenAlphabetLearner
from .learner_store import RECENT


@dataclass(frozen=True)
class View:
    """What a stream serves at one position, computed by the worker, read by the I/O loop."""

    position: int
    symbols: np.ndarray  # seen symbols, most probable first (ties: smaller symbol first)
    probs: np.ndarray  # their probabilities
    escape: float  # probability of a symbol not seen yet
    alphabet_cap: int
    stats: dict

    @classmethod
    def of(cls, learner, position: int, stats: dict) -> "View":
        dist = learner.predict_proba_one()
        escape = dist.pop(None)
        symbols = np.fromiter(dist.keys(), dtype=np.int64, count=len(dist))
        probs = np.fromiter(dist.values(), dtype=np.float64, count=len(dist))
        order = np.lexsort((symbols, -probs))
        return cls(position, symbols[order], probs[order], escape, learner.config.alphabet_cap, stats)

    def top(self, k: int) -> list[list]:
        return [list(pair) for pair in zip(self.symbols[:k].tolist(), self.probs[:k].tolist())]

    def distribution(self) -> list[float]:
        """Every symbol's probability; the unseen share the escape mass (as a learner's ``predict_proba``)."""
        return OpenAlphabetLearner.spread(self.alphabet_cap, self.symbols, self.probs, self.escape).tolist()


def recent_after(recent: np.ndarray | None, bits: np.ndarray) -> np.ndarray:
    """The last :data:`RECENT` code lengths once ``bits`` follow ``recent`` (None: a stream that has none yet)."""
    tail = bits[-RECENT:]
    if recent is None:
        recent = np.zeros(RECENT)
    return np.concatenate((recent[len(tail):], tail))


def learner_stats(learner, position: int, code_bits: float, recent: np.ndarray) -> dict:
    """What a stream's stats say of its learner at ``position``, after ``code_bits`` in all and the ``recent``
    code lengths (the last :data:`RECENT`)."""
    s = learner.stats
    recent_n = min(position, RECENT)
    return {
        "position": position,
        "bits_per_symbol": code_bits / position if position else None,
        "recent_bits_per_symbol": float(recent[RECENT - recent_n:].sum()) / recent_n if recent_n else None,
        "code_bits": code_bits,
        "alphabet_size": s["alphabet_size"],
        "alphabet_cap": learner.config.alphabet_cap,
        "model": model_of(learner.config).name,
        # the GLNN's (a model without them: None)
        "writing_rate": s.get("writing_rate"),
        "transition_rate": s.get("transition_rate"),
        "windows": s.get("windows"),
        "rejected_windows": s.get("rejected_windows"),
    }
