"""The bitwise learner's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..kit.memory import table_array
from ..open_alphabet import OpenAlphabetLearner, SnapshotKind, validate_symbols
from .config import BUCKET, SOURCES, BitsConfig, state_shapes
from .model import learn_buffer
from .snapshot import LAYOUT, MAGIC, VERSION, check
from .state import BitsState, advise, grows, new_state, resident_nbytes
from .walk import predict, undo_width


def _config(**settings) -> BitsConfig:
    """A snapshot's configuration: a setting seqd 0.20 did not write has the value 0.20's model had."""
    return BitsConfig.from_settings(settings)


def _allocate(config: BitsConfig, name: str, shape, dtype) -> np.ndarray:
    """A restored array's memory: as a new learner's (``state.new_state``)."""
    return table_array(shape, dtype, huge=not grows(config, name))


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

    snapshot_kind = SnapshotKind(MAGIC, VERSION, "bitwise", _config, BitsState, state_shapes, check, _allocate,
                                 LAYOUT)
    _new_state = staticmethod(new_state)
    config: BitsConfig
    state: BitsState

    def __init__(self, config=None, *, _state=None, eager_pages: bool = False):
        # no configuration: today's model, BitsConfig(); the snapshot kind's _config is for reading what an
        # earlier seqd wrote, where a missing setting means bitwise-1's.  eager_pages: huge pages for every table
        # from the start (state.new_state), for a process that learns one stream
        config = BitsConfig() if config is None else config
        super().__init__(config, _state=_state if _state is not None else new_state(config, eager_pages))
        self._hyper = self.config.hyper()
        st = self.state
        # the distribution's work (walk.predict)
        self._nodes, self._p = np.zeros(256), np.zeros(257)
        width = undo_width(st.inputs.shape[1], SOURCES, max(st.runs.shape[0] - 1, 0), st.unit_v.shape[1])
        self._undo, self._kept = np.zeros((8, width)), np.zeros((2, SOURCES, BUCKET + 1), np.int64)
        self._branch = np.zeros(8, np.int64)
        self._advised: set = set()
        advise(self.config, st, self._advised)

    def learn(self, symbols) -> np.ndarray:
        """Predict, score and learn each byte in turn; returns each one's prequential code length in bits."""
        x = validate_symbols(symbols, self.config.alphabet_cap)
        bits = np.empty(len(x))
        learn_buffer(self.state, self._hyper, x, bits)
        self.settle()
        return bits

    def settle(self) -> None:
        """After learning, by whichever kernel: huge pages for the tables that have grown to fill them
        (``state.advise``)."""
        advise(self.config, self.state, self._advised)

    def _distribution(self) -> tuple[int, np.ndarray]:
        width = predict(self.state, self._hyper, self._nodes, self._p, self._undo, self._kept, self._branch)
        return width, self._p[:width]

    @property
    def resident_bytes(self) -> int:
        """Memory the learner's arrays take now: :attr:`state_bytes` at most, less while its tables grow and its
        history fills (``state.resident_nbytes``)."""
        return resident_nbytes(self.config, self.state)

    @property
    def stats(self) -> dict:
        return {"symbols": int(self.state.counts[0]), "alphabet_size": 256}
