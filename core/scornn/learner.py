"""The scoRNN learner's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..open_alphabet import SnapshotKind
from ..readout import ReadoutLearner
from .cayley import learn_buffer
from .config import ACTIVE, NORM, SYMBOLS, SCORNNConfig, state_shapes
from .snapshot import MAGIC, VERSION, check
from .state import SCORNNState, new_state


class SCORNNLearner(ReadoutLearner):
    """A scoRNN (seed 002's scaled-Cayley orthogonal RNN) learning one symbol stream online (``seqd.core.scornn``).

        >>> learner = SCORNNLearner(SCORNNConfig(alphabet_cap=4, units=8, learning_rate=0.2))
        >>> bits = learner.learn([0, 1, 2, 3] * 150)
        >>> bool(bits[-40:].mean() < 0.5)
        True
        >>> bool(np.allclose(learner.state.w @ learner.state.w.T, np.eye(8)))  # W stays orthogonal
        True
    """

    snapshot_kind = SnapshotKind(MAGIC, VERSION, "scoRNN", SCORNNConfig, SCORNNState, state_shapes, check)
    _new_state = staticmethod(new_state)
    config: SCORNNConfig
    state: SCORNNState

    def _learn_buffer(self, x: np.ndarray, bits: np.ndarray) -> None:
        c = self.config
        learn_buffer(self.state, c.alphabet_cap, c.seed, c.learning_rate, c.skew_rate, c.clip, c.coupling, c.margin,
                     c.init_scale, self._numerics, x, bits)

    @property
    def stats(self) -> dict:
        c = self.state.counts
        return {"symbols": int(c[SYMBOLS]), "alphabet_size": int(c[ACTIVE]),
                "gradient_norm": float(self.state.reals[NORM])}
