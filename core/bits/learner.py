"""The bitwise learner's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..online.tables import table_array
from ..open_alphabet import OpenAlphabetLearner, SnapshotKind, validate_symbols
from .config import BUCKET, SOURCES, BitsConfig, state_shapes
from .model import learn_buffer
from .snapshot import MAGIC, VERSION, check
from .state import BitsState, new_state
from .walk import predict, undo_width


def _config(**settings) -> BitsConfig:
    """A snapshot's configuration: a setting seqd 0.20 did not write has the value 0.20's model had."""
    return BitsConfig.from_settings(settings)


class BitsLearner(OpenAlphabetLearner):
    """A bitwise context-mixing model of one byte stream, learned online (``seqd.core.bits``' docstring).

    The alphabet is closed (the 256 bytes): the escape, code 0, always has probability 0.

        >>> learner = BitsLearner()
        >>> bits = learner.learn(b"abcd" * 200)
        >>> bool(bits[-100:].mean() < 0.1)
        True
        >>> learner.predict_one()
        97
    """

    snapshot_kind = SnapshotKind(MAGIC, VERSION, "bitwise", _config, BitsState, state_shapes, check, table_array)
    _new_state = staticmethod(new_state)
    config: BitsConfig
    state: BitsState

    def __init__(self, config=None, *, _state=None):
        # no configuration: today's model, BitsConfig(); the snapshot kind's _config is for reading what an
        # earlier seqd wrote, where a missing setting means bitwise-1's
        super().__init__(BitsConfig() if config is None else config, _state=_state)
        self._hyper = self.config.hyper()
        st = self.state
        # the distribution's work (walk.predict)
        self._nodes, self._p = np.zeros(256), np.zeros(257)
        width = undo_width(st.inputs.shape[1], SOURCES, max(st.runs.shape[0] - 1, 0), st.unit_v.shape[1])
        self._undo, self._kept = np.zeros((8, width)), np.zeros((2, SOURCES, BUCKET + 1), np.int64)
        self._branch = np.zeros(8, np.int64)

    def learn(self, symbols) -> np.ndarray:
        """Predict, score and learn each byte in turn; returns each one's prequential code length in bits."""
        x = validate_symbols(symbols, self.config.alphabet_cap)
        bits = np.empty(len(x))
        learn_buffer(self.state, self._hyper, x, bits)
        return bits

    def _distribution(self) -> tuple[int, np.ndarray]:
        width = predict(self.state, self._hyper, self._nodes, self._p, self._undo, self._kept, self._branch)
        return width, self._p[:width]

    @property
    def stats(self) -> dict:
        return {"symbols": int(self.state.counts[0]), "alphabet_size": 256}
