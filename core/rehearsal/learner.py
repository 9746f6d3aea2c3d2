"""The rehearsing GLNN's public face: the interface every seqd learner has (``docs/architecture.md``)."""

from __future__ import annotations

import numpy as np

from ..kernels.elementary import IEEE, numerics_marker
from ..arrays_snapshot import unpack
from ..online import OnlineLearner
from ..open_alphabet import OpenAlphabetLearner, SnapshotKind, validate_symbols
from .config import ACTIVATIONS, COMPLETE, DRAWN, HEAD, PREVIOUS, REHEARSALS, SYMBOLS, RehearsalConfig, online_config, state_shapes
from .rehearse import block_of, rehearse
from .snapshot import MAGIC, VERSION, check, split
from .state import RehearsalState, drawn_from_block, groups_of, new_state
from .stream import BLOCK_DRAWN, REHEARSE, learn_span, mixture_into

NONE = np.zeros(0)


class RehearsalLearner(OpenAlphabetLearner):
    """GLNNs for each group of symbols read, trained by rehearsing a buffer of the stream's past blocks, mixed with
    the glnn preset's online learner (``seqd.core.rehearsal``'s docstring).  The alphabet is closed: every symbol
    of the cap is predicted from the start, the escape (code 0) never.

        >>> learner = RehearsalLearner(RehearsalConfig(alphabet_cap=4, units=4, degree=2, block=256, rehearsals=4))
        >>> bits = learner.learn([0, 1, 2, 3] * 300)
        >>> bool(bits[-100:].mean() < 0.5)
        True
        >>> learner.predict_one()
        0
    """

    snapshot_kind = SnapshotKind(MAGIC, VERSION, "rehearsing GLNN", RehearsalConfig, RehearsalState, state_shapes,
                                 check)
    _new_state = staticmethod(new_state)
    config: RehearsalConfig
    state: RehearsalState

    def __init__(self, config=None, *, _state=None, _online=None):
        super().__init__(config, _state=_state)
        c = self.config
        self.online = (_online or OnlineLearner(online_config(c))) if c.online else None
        self._numerics = numerics_marker(IEEE)
        self._hyper = (c.draws, groups_of(c), c.interval, c.uniform_share, ACTIVATIONS.index(c.activation))
        self._out = np.zeros(c.alphabet_cap)
        self._p = np.zeros(c.alphabet_cap + 1)

    def learn(self, symbols) -> np.ndarray:
        """Predict, score and learn each symbol in turn, rehearsing when one is due; returns each one's
        prequential code length in bits."""
        x = validate_symbols(symbols, self.config.alphabet_cap)
        outside = NONE if self.online is None else self.online.learn(x)
        bits = np.empty(len(x))
        st, done = self.state, 0
        while done < len(x):
            learned, why = learn_span(st, x[done:], bits[done:], outside[done:], self._hyper, self._numerics)
            done += learned
            if why == BLOCK_DRAWN:  # the first complete block: the networks drawn from its frequencies
                row = (st.counts[HEAD] - 1) % (self.config.blocks + 1)
                drawn_from_block(self.config, st, block_of(self.config, st, row)[0], int(st.before[row]))
                st.counts[DRAWN] = 1
            elif why == REHEARSE:
                rehearse(self.config, st)
        return bits

    def _distribution(self) -> tuple[int, np.ndarray]:
        st, c = self.state, self.config
        outside = NONE if self.online is None else self.online.predict_proba()
        mixture_into(st, st.counts[PREVIOUS] % groups_of(c), c.draws, c.uniform_share, outside, self._out,
                     self._numerics)
        self._p[0] = 0.0
        self._p[1:] = self._out
        return c.alphabet_cap + 1, self._p

    # -- snapshots: the rehearsing part (arrays_snapshot's layout), then the online learner's own -------------
    @property
    def state_bytes(self) -> int:
        return super().state_bytes + (0 if self.online is None else self.online.state_bytes)

    @property
    def resident_bytes(self) -> int:
        return super().state_bytes + (0 if self.online is None else self.online.resident_bytes)

    def snapshot_parts(self, history: bool = True) -> list[memoryview]:
        """The rehearsing part's arrays, then the online member's snapshot (which keeps no history ring)."""
        parts = super().snapshot_parts()
        return parts if self.online is None else parts + self.online.snapshot_parts()

    def to_bytes(self) -> bytes:
        return b"".join(self.snapshot_parts())

    @classmethod
    def from_stream(cls, read_into, read, limit: int | None = None, history=None):
        """:meth:`from_bytes` of a snapshot that arrives in pieces: its two parts are read whole."""
        pieces = []
        while piece := read(1 << 20):
            pieces.append(piece)
        data = b"".join(pieces)
        if limit is not None and len(data) > limit:
            raise ValueError(f"rehearsing-GLNN snapshot holds more than {limit} bytes")
        return cls.from_bytes(data)

    @classmethod
    def from_bytes(cls, data: bytes, history=None):
        mine, rest = split(data)
        kind = cls.snapshot_kind
        config, state = unpack(mine, kind.magic, kind.version, kind.what, kind.config_type, kind.state_type,
                               kind.shapes)
        check(config, state)
        if not config.online:
            if len(rest):
                raise ValueError("rehearsing-GLNN snapshot is truncated or followed by other bytes")
            return cls(config, _state=state)
        online = OnlineLearner.from_bytes(rest)
        if online.config != online_config(config):
            raise ValueError("rehearsing-GLNN snapshot holds an online learner of another configuration")
        if online.stats["symbols"] != state.counts[SYMBOLS]:
            raise ValueError("rehearsing-GLNN snapshot's online learner has read another number of symbols")
        return cls(config, _state=state, _online=online)

    @property
    def stats(self) -> dict:
        c = self.state.counts
        return {"symbols": int(c[SYMBOLS]), "alphabet_size": self.config.alphabet_cap,
                "buffered_blocks": int(c[COMPLETE]), "rehearsals": int(c[REHEARSALS]),
                "transition_rate": float(np.median(self.state.rates[:, 1]))}
