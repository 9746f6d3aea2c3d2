"""The CTW learner's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import OpenAlphabetLearner, SnapshotKind, validate_symbols
from .config import ACTIVE, NODES, SYMBOLS, CTWConfig, state_shapes
from .snapshot import MAGIC, VERSION, check
from .state import CTWState, new_state
from .tree import learn_buffer, predict


class CTWLearner(OpenAlphabetLearner):
    """A context-tree-weighting model of one symbol stream, learned online (``seqd.core.ctw``'s docstring).

        >>> learner = CTWLearner(CTWConfig(alphabet_cap=4, depth=3))
        >>> bits = learner.learn([0, 1, 2, 3] * 50)
        >>> bool(bits[-20:].mean() < 0.2)
        True
        >>> learner.predict_one()
        0
    """

    snapshot_kind = SnapshotKind(MAGIC, VERSION, "CTW", CTWConfig, CTWState, state_shapes, check)
    _new_state = staticmethod(new_state)
    config: CTWConfig
    state: CTWState

    def learn(self, symbols) -> np.ndarray:
        """Predict, score and learn each symbol in turn; returns each one's prequential code length in bits."""
        x = validate_symbols(symbols, self.config.alphabet_cap)
        bits = np.empty(len(x))
        learn_buffer(self.state, self.config.alphabet_cap, self.config.alpha, x, bits)
        return bits

    def _distribution(self) -> tuple[int, np.ndarray]:
        width = predict(self.state, self.config.alphabet_cap, self.config.alpha, False)
        return width, self.state.p[0, :width]

    @property
    def stats(self) -> dict:
        c = self.state.counts
        return {"symbols": int(c[SYMBOLS]), "alphabet_size": int(c[ACTIVE]), "nodes": int(c[NODES]),
                "node_pool": 1 << self.config.node_bits}
