"""What a learner over an open alphabet offers, from the one distribution it predicts, and its input rule.

A subclass holds ``config`` (with ``alphabet_cap``) and ``state`` (a named
tuple of arrays with ``symbol_of``: the symbol of each internal code, code 0
being the escape) and defines ``learn`` and ``_distribution()``: the active
width and the next symbol's probabilities over codes 0..width-1.  The
prediction methods here are every such learner's: seed 000's GLNN
(``online.OnlineLearner``), CTW, and those that predict with
``readout.py``'s softmax (``readout.ReadoutLearner``: the echo-state
network, the LSTM and GRU, the scoRNN).  All but the GLNN also take their
snapshots from here (a :class:`SnapshotKind`, in ``arrays_snapshot.py``'s
layout, which the GLNN's own format, ``online/snapshot.py``, shares).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .arrays_snapshot import Layout, pack_parts, unpack, unpack_stream


@dataclass(frozen=True)
class SnapshotKind:
    """How a learner's snapshots are told apart and checked (``arrays_snapshot.py``)."""

    magic: bytes  # 8 bytes
    version: int
    what: str  # the learner's name in errors
    config_type: type
    state_type: type
    shapes: Callable  # config -> {name: (shape, dtype)}
    check: Callable  # (config, state) -> None, or a ValueError: what a restored state must satisfy
    allocate: Callable | None = None  # (config, name, shape, dtype) -> a zeroed array to restore into; None: NumPy's
    layout: Layout | None = None  # how arrays are stored in parts (growing tables, a history ring); None: whole


def codes_are_consistent(code_of: np.ndarray, symbol_of: np.ndarray, active: int, cap: int) -> bool:
    """Whether ``active`` codes name distinct symbols of [0, cap), each the code of its symbol, and no other
    symbol has a code: what a restored state must hold before a kernel indexes with them."""
    symbols = symbol_of[1:active + 1]
    return (0 <= active <= cap and not np.any((code_of < 0) | (code_of > active))
            and not np.any((symbols < 0) | (symbols >= cap))
            and np.array_equal(code_of[symbols], np.arange(1, active + 1))
            and np.count_nonzero(code_of) == active)


class OpenAlphabetLearner:
    config: object
    state: tuple
    snapshot_kind: SnapshotKind

    def __init__(self, config=None, *, _state=None):
        kind = self.snapshot_kind
        self.config = config if config is not None else kind.config_type()
        self.state = _state if _state is not None else self._new_state(self.config)

    @staticmethod
    def _new_state(config) -> tuple:
        raise NotImplementedError

    def _distribution(self) -> tuple[int, np.ndarray]:
        raise NotImplementedError

    def learn(self, symbols) -> np.ndarray:
        raise NotImplementedError

    def learn_one(self, symbol: int) -> None:
        """Learn one symbol (River's stateful convention: returns nothing)."""
        self.learn([symbol])

    def predict_proba_one(self) -> dict:
        """Distribution of the next symbol over the symbols seen so far, and ``None`` for a new one.

        Once every symbol of the alphabet has been seen, ``None`` has probability 0.
        """
        width, p = self._distribution()
        out: dict = {int(self.state.symbol_of[c]): float(p[c]) for c in range(1, width)}
        out[None] = float(p[0])
        return out

    def predict_proba(self) -> np.ndarray:
        """Probabilities of every symbol 0..cap-1 for the next step; unseen symbols share the escape mass."""
        width, p = self._distribution()
        return self.spread(self.config.alphabet_cap, self.state.symbol_of[1:width], p[1:width], p[0])

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

    @property
    def state_bytes(self) -> int:
        """Memory held by the learner's arrays: fixed by its configuration, whatever the stream's length."""
        return sum(arr.nbytes for arr in self.state)

    @property
    def resident_bytes(self) -> int:
        """Memory the learner's arrays take now (a learner whose memory grows with its stream says less than
        :attr:`state_bytes`)."""
        return self.state_bytes

    def to_bytes(self) -> bytes:
        """An exact, versioned, checksummed snapshot: :meth:`from_bytes` continues the stream bit for bit."""
        return b"".join(self.snapshot_parts())

    def snapshot_parts(self, history: bool = True) -> list[memoryview]:
        """The bytes of :meth:`to_bytes` as buffers to write in turn, without copying the state (the daemon's
        snapshots); valid until the learner learns or predicts again.  ``history=False`` leaves out the history
        ring of a learner that keeps one (:attr:`history`): the daemon keeps it in the stream's history file."""
        kind = self.snapshot_kind
        return pack_parts(kind.magic, kind.version, self.config, self.state, kind.layout, history)

    @property
    def history(self) -> tuple[np.ndarray, int] | None:
        """(history ring, stream position) of a learner that keeps the symbols it has seen in a ring, else None."""
        kind = self.snapshot_kind
        return None if kind.layout is None else kind.layout.ring(self.config, self.state._asdict())

    @classmethod
    def from_bytes(cls, data: bytes, history=None):
        """The learner a snapshot holds; ``history`` reads the symbols of a ring its snapshot left out."""
        kind = cls.snapshot_kind
        config, state = unpack(data, kind.magic, kind.version, kind.what, kind.config_type, kind.state_type,
                               kind.shapes, kind.allocate, kind.layout, history)
        kind.check(config, state)
        return cls(config, _state=state)

    @classmethod
    def from_stream(cls, read_into, read, limit: int | None = None, history=None):
        """:meth:`from_bytes` of a snapshot that arrives in pieces (``arrays_snapshot.unpack_stream``)."""
        kind = cls.snapshot_kind
        config, state = unpack_stream(read_into, read, kind.magic, kind.version, kind.what, kind.config_type,
                                      kind.state_type, kind.shapes, kind.allocate, layout=kind.layout, limit=limit,
                                      history=history)
        kind.check(config, state)
        return cls(config, _state=state)


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
