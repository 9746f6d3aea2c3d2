"""The CTW learner's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..online.learner import validate_symbols
from .config import ACTIVE, NODES, SYMBOLS, CTWConfig
from .snapshot import from_bytes, to_bytes
from .state import CTWState, new_state
from .tree import learn_buffer, predict


class CTWLearner:
    """A context-tree-weighting model of one symbol stream, learned online (``seqd.core.ctw``'s docstring).

        >>> learner = CTWLearner(CTWConfig(alphabet_cap=4, depth=3))
        >>> bits = learner.learn([0, 1, 2, 3] * 50)
        >>> bool(bits[-20:].mean() < 0.2)
        True
        >>> learner.predict_one()
        0
    """

    def __init__(self, config: CTWConfig | None = None, *, _state: CTWState | None = None):
        self.config = config or CTWConfig()
        self.state = _state if _state is not None else new_state(self.config)

    def learn(self, symbols) -> np.ndarray:
        """Predict, score and learn each symbol in turn; returns each one's prequential code length in bits."""
        x = validate_symbols(symbols, self.config.alphabet_cap)
        bits = np.empty(len(x))
        learn_buffer(self.state, self.config.alphabet_cap, self.config.alpha, x, bits)
        return bits

    def learn_one(self, symbol: int) -> None:
        self.learn([symbol])

    def _distribution(self) -> tuple[int, np.ndarray]:
        width = predict(self.state, self.config.alphabet_cap, self.config.alpha, False)
        return width, self.state.p[0, :width]

    def predict_proba_one(self) -> dict:
        """Distribution of the next symbol over the symbols seen so far, and ``None`` for a new one."""
        width, p = self._distribution()
        out: dict = {int(self.state.symbol_of[c]): float(p[c]) for c in range(1, width)}
        out[None] = float(p[0])
        return out

    def predict_proba(self) -> np.ndarray:
        """Probabilities of every symbol 0..cap-1; the unseen share the escape's."""
        width, p = self._distribution()
        cap, seen = self.config.alphabet_cap, width - 1
        out = np.full(cap, p[0] / (cap - seen) if seen < cap else 0.0)
        out[self.state.symbol_of[1:width]] = p[1:width]
        return out

    def predict_one(self) -> int | None:
        dist = self.predict_proba_one()
        dist.pop(None)
        return max(dist, key=dist.get) if dist else None

    @property
    def stats(self) -> dict:
        c = self.state.counts
        return {"symbols": int(c[SYMBOLS]), "alphabet_size": int(c[ACTIVE]), "nodes": int(c[NODES]),
                "node_pool": 1 << self.config.node_bits}

    @property
    def state_bytes(self) -> int:
        return sum(arr.nbytes for arr in self.state)

    def to_bytes(self) -> bytes:
        """An exact, versioned, checksummed snapshot: :meth:`from_bytes` continues the stream bit for bit."""
        return to_bytes(self.config, self.state)

    @classmethod
    def from_bytes(cls, data: bytes) -> "CTWLearner":
        config, state = from_bytes(data)
        return cls(config, _state=state)
