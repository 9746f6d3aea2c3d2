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

from ..open_alphabet import OpenAlphabetLearner, validate_symbols
from .config import OnlineConfig
from .snapshot import from_bytes, from_stream, snapshot_parts, to_bytes
from .sources import POS
from .state import (ACTIVE, ETA_TAU, ETA_W, NONFINITE, REJECTED, SYMBOLS, WINDOWS, OnlineState, new_state,
                    resident_nbytes)
from .steps import learn_buffer, predict_into


class OnlineLearner(OpenAlphabetLearner):
    """A GLNN (or GNN) learning one symbol stream online (``docs/online.md``).

    Symbols are integers in ``[0, config.alphabet_cap)``.  The alphabet is
    open: a stream starts with no symbols, and a first occurrence is predicted
    through an escape probability, named among the symbols not yet seen, and
    then joins the model.  The prediction methods (``predict_proba_one``,
    ``predict_proba``, ``predict_one``), ``learn_one`` and ``state_bytes``
    are every open-alphabet learner's (``core/open_alphabet.py``).
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

    # -- prediction -------------------------------------------------------------------------
    def _distribution(self) -> tuple[int, np.ndarray]:
        width = predict_into(self.state, self._flags, self._proba)
        return width, self._proba[:width]

    # -- state ------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """An exact, versioned snapshot: :meth:`from_bytes` continues the stream bit for bit."""
        return to_bytes(self.config, self.state)

    def snapshot_parts(self, history: bool = True) -> list[memoryview]:
        """The bytes of :meth:`to_bytes` as buffers to write in turn, without copying the state;
        valid until the learner learns or predicts again (both write its work arrays).  ``history=False``
        leaves out the symbols of its history ring, which are then kept elsewhere (a stream's history file)
        and given back to :meth:`from_bytes` (``snapshot.HistoryReader``)."""
        return snapshot_parts(self.config, self.state, history)

    @classmethod
    def from_bytes(cls, data: bytes, history=None) -> "OnlineLearner":
        config, state = from_bytes(data, history)
        return cls(config, _state=state)

    @classmethod
    def from_stream(cls, read_into, read, limit: int | None = None, history=None) -> "OnlineLearner":
        """:meth:`from_bytes` of a snapshot that arrives in pieces (``snapshot.from_stream``)."""
        config, state = from_stream(read_into, read, limit, history)
        return cls(config, _state=state)

    @property
    def history(self) -> tuple[np.ndarray, int] | None:
        """(history ring, stream position) if the learner keeps the symbols it has seen (its context units), else
        None: what a stream's history file holds in its place (``snapshot_parts(history=False)``)."""
        if not self.state.hist.size:
            return None
        return self.state.hist, int(self.state.ctx_int[POS])

    @property
    def resident_bytes(self) -> int:
        """Memory the learner's arrays take now: :attr:`state_bytes` at most, less while its history and its
        tables that grow (``table_growth``) are not full (``state.resident_nbytes``)."""
        return resident_nbytes(self.config, self.state)

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
