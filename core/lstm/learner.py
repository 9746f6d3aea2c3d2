"""The LSTM learner's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import SnapshotKind
from ..readout import ReadoutLearner
from .cell import learn_buffer
from .config import ACTIVE, NORM, SYMBOLS, LSTMConfig, state_shapes
from .snapshot import MAGIC, VERSION, check
from .state import LSTMState, new_state


class LSTMLearner(ReadoutLearner):
    """An LSTM that learns one symbol stream online by truncated back-propagation (``seqd.core.lstm``).

        >>> learner = LSTMLearner(LSTMConfig(alphabet_cap=4, cells=8, learning_rate=0.2))
        >>> bits = learner.learn([0, 1, 2, 3] * 150)
        >>> bool(bits[-40:].mean() < 0.5)
        True
        >>> learner.predict_one()
        0
    """

    snapshot_kind = SnapshotKind(MAGIC, VERSION, "LSTM", LSTMConfig, LSTMState, state_shapes, check)
    _new_state = staticmethod(new_state)
    config: LSTMConfig
    state: LSTMState

    def _learn_buffer(self, x: np.ndarray, bits: np.ndarray) -> None:
        c = self.config
        learn_buffer(self.state, c.alphabet_cap, c.seed, c.learning_rate, c.clip, c.init_scale, self._numerics,
                     x, bits)

    @property
    def stats(self) -> dict:
        c = self.state.counts
        return {"symbols": int(c[SYMBOLS]), "alphabet_size": int(c[ACTIVE]),
                "gradient_norm": float(self.state.reals[NORM])}
