"""The lifelong online learner: predict the next symbol, then learn from it, forever.

    >>> from seqd.core.online import OnlineLearner, OnlineConfig
    >>> learner = OnlineLearner(OnlineConfig(units=8, alphabet_cap=4))
    >>> bits = learner.learn([0, 1, 2, 3] * 50)
    >>> bool(bits[-20:].mean() < bits[:20].mean())
    True
    >>> learner.predict_one()
    0

Time and memory per symbol do not depend on how long the stream has run: the
state is a fixed set of arrays (``state.py``), and the past is not kept.
"""

from __future__ import annotations

import numpy as np

from .config import OnlineConfig
from .snapshot import from_bytes, snapshot_parts, to_bytes
from .state import ACTIVE, ETA_TAU, ETA_W, NONFINITE, REJECTED, SYMBOLS, WINDOWS, OnlineState, new_state
from .steps import learn_buffer, predict_into


class OnlineLearner:
    """A GLNN (or GNN) learning one symbol stream online (``docs/online.md``).

    Symbols are integers in ``[0, config.alphabet_cap)``.  The alphabet is
    open: a stream starts with no symbols, and a first occurrence is predicted
    through an escape probability, named among the symbols not yet seen, and
    then joins the model.
    """

    def __init__(self, config: OnlineConfig | None = None, *, _state: OnlineState | None = None):
        self.config = config or OnlineConfig()
        self.state = _state if _state is not None else new_state(self.config)
        self._hyper = self.config.hyper()
        self._flags = self.config.flags()
        self._proba = np.zeros(self.config.alphabet_cap + 1)

    # -- learning ---------------------------------------------------------------------------
    def learn(self, symbols) -> np.ndarray:
        """Predict, score and learn each symbol in turn; returns each one's code length in bits.

        The code lengths are prequential: symbol t is scored by the model that
        has learned from symbols 0..t-1 only.  One call runs one Numba loop,
        however many symbols it is given.
        """
        x = validate_symbols(symbols, self.config.alphabet_cap)
        bits = np.empty(len(x))
        learn_buffer(self.state, self._hyper, self._flags, x, bits)
        return bits

    def learn_one(self, symbol: int) -> None:
        """Learn one symbol (River's stateful convention: returns nothing)."""
        self.learn([symbol])

    # -- prediction -------------------------------------------------------------------------
    def predict_proba_one(self) -> dict[int, float]:
        """Distribution of the next symbol over the symbols seen so far, and ``None`` for a new one.

        Once every symbol of the alphabet has been seen, ``None`` has probability 0.
        """
        width = predict_into(self.state, self._flags, self._proba)
        out: dict = {int(self.state.symbol_of[c]): float(self._proba[c]) for c in range(1, width)}
        out[None] = float(self._proba[0])
        return out

    def predict_proba(self) -> np.ndarray:
        """Probabilities of every symbol 0..cap-1 for the next step; unseen symbols share the escape mass."""
        width = predict_into(self.state, self._flags, self._proba)
        return self.spread(self.config.alphabet_cap, self.state.symbol_of[1:width], self._proba[1:width],
                           self._proba[0])

    @staticmethod
    def spread(cap: int, symbols, probs, escape: float) -> np.ndarray:
        """Probabilities of all ``cap`` symbols: the seen ``symbols`` have ``probs``, the others share ``escape``."""
        seen = len(symbols)
        out = np.full(cap, escape / (cap - seen) if seen < cap else 0.0)
        out[np.asarray(symbols, dtype=np.int64)] = probs
        return out

    def predict_one(self) -> int | None:
        """The most probable next symbol, or None before any symbol was seen."""
        dist = self.predict_proba_one()
        dist.pop(None)
        return max(dist, key=dist.get) if dist else None

    # -- state ------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """An exact, versioned snapshot: :meth:`from_bytes` continues the stream bit for bit."""
        return to_bytes(self.config, self.state)

    def snapshot_parts(self) -> list[memoryview]:
        """The bytes of :meth:`to_bytes` as buffers to write in turn, without copying the state;
        valid until the learner learns or predicts again (both write its work arrays)."""
        return snapshot_parts(self.config, self.state)

    @classmethod
    def from_bytes(cls, data: bytes) -> "OnlineLearner":
        config, state = from_bytes(data)
        return cls(config, _state=state)

    @property
    def state_bytes(self) -> int:
        """Memory held by the learner's arrays: fixed by the configuration, whatever the stream's length."""
        return sum(arr.nbytes for arr in self.state)

    @property
    def stats(self) -> dict:
        c, r = self.state.counts, self.state.reals
        return {
            "symbols": int(c[SYMBOLS]),
            "alphabet_size": int(c[ACTIVE]),
            "windows": int(c[WINDOWS]),
            "rejected_windows": int(c[REJECTED]),
            "nonfinite_windows": int(c[NONFINITE]),
            "transition_rate": float(r[ETA_TAU]),
            "writing_rate": float(r[ETA_W]),
        }


def validate_symbols(symbols, cap: int) -> np.ndarray:
    """``symbols`` (a sequence, an integer array or bytes) as a contiguous int64 array, each in [0, cap);
    anything else is a ValueError that says what is wrong.  Every learner takes its input through here."""
    if isinstance(symbols, (bytes, bytearray, memoryview)):
        x = np.frombuffer(bytes(symbols), dtype=np.uint8)
    else:
        x = np.asarray(symbols)
    if x.ndim != 1:
        raise ValueError(f"symbols must be a one-dimensional sequence, got shape {x.shape}")
    if len(x) == 0:
        raise ValueError("empty input: there is nothing to learn")
    if not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"symbols must be integers, got dtype {x.dtype}")
    x = x.astype(np.int64, copy=False)
    lo, hi = int(x.min()), int(x.max())
    if lo < 0 or hi >= cap:
        bad = lo if lo < 0 else hi
        raise ValueError(f"symbol {bad} is outside the alphabet [0, {cap})")
    return np.ascontiguousarray(x)
