"""The echo-state learner's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import SnapshotKind
from ..readout import ReadoutLearner
from .config import ACTIVE, RATE, SYMBOLS, ESNConfig, state_shapes
from .reservoir import learn_buffer
from .snapshot import MAGIC, VERSION, check
from .state import ESNState, new_state


class ESNLearner(ReadoutLearner):
    """A leaky echo-state network whose readout learns one symbol stream online (``seqd.core.esn``).

        >>> learner = ESNLearner(ESNConfig(alphabet_cap=4, units=20, connections=4))
        >>> bits = learner.learn([0, 1, 2, 3] * 100)
        >>> bool(bits[-40:].mean() < 0.5)
        True
        >>> learner.predict_one()
        0
    """

    snapshot_kind = SnapshotKind(MAGIC, VERSION, "echo-state", ESNConfig, ESNState, state_shapes, check)
    _new_state = staticmethod(new_state)
    config: ESNConfig
    state: ESNState

    readout_field = "w"  # the readout is the writing layer's weights

    def _learn_buffer(self, x: np.ndarray, bits: np.ndarray) -> None:
        c = self.config
        learn_buffer(self.state, c.alphabet_cap, c.seed, c.leak, c.input_scale, c.writing_discount, c.writing_prior,
                     c.writing_evidence_floor, self._numerics, x, bits)

    @property
    def stats(self) -> dict:
        c = self.state.counts
        return {"symbols": int(c[SYMBOLS]), "alphabet_size": int(c[ACTIVE]),
                "writing_rate": float(self.state.reals[RATE])}
