"""The learner registry: every learner configuration seqd ships, for the contract checks.

Every learner registers here, one :class:`Entry` per configuration worth
checking: a name, a factory of its configuration, and the learner class that
takes it.  A new learner (an LSTM, a GRU, an echo state network, CTW, an HMM)
adds one line to :data:`REGISTRY`, and ``tests/test_contract.py`` then holds it
to the same promises as the others:

* **determinism** -- a stream learned in one call, symbol by symbol, or in
  chunks of any sizes gives the same code lengths, bit for bit, and the same
  final state bytes;
* **exact snapshots** -- ``to_bytes`` at any position (inside a window, at a
  window's end, just after one) and ``from_bytes`` give a learner whose next
  distribution and following code lengths are the uninterrupted learner's, bit
  for bit, and taking the snapshot disturbs nothing;
* **coding** -- for byte configurations, ``.sqd`` encode then decode is the
  identity, and the encoded size is the learner's prequential code length plus
  at most the range coder's overhead; the container refuses other alphabets;
* **inputs are not mutated** -- ``learn`` leaves the array or bytearray it was
  given as it was;
* **seeding** -- the same seed gives the same stream; a different seed gives a
  different one where the model is random (``Entry.random``: recurrent units
  with a random graph and random reading rates), and the same one where it is not;
* **clear errors** -- a symbol outside the alphabet, a negative one, a
  non-integer dtype, 2-D or empty input, and a damaged or truncated snapshot
  are each a ``ValueError`` naming the problem, and a refused input leaves the
  learner as it was;
* **prediction is read-only** -- ``predict_proba_one`` / ``predict_proba`` asked
  twice agree, asking changes nothing that is learned afterwards, and each code
  length is the one of the distribution predicted for it.

The configurations are kept small where the configuration allows it (a few
units, an alphabet of 16, short windows), so that the whole suite runs in
seconds; the daemon's presets and the byte default are checked as shipped,
tens of megabytes of context tables included, on inputs of a thousand or so
symbols.  ``test_contract.py`` checks that every daemon preset is registered.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from seqd.core.bits import BitsConfig, BitsLearner
from seqd.core.bits.versions import PRESETS as BITWISE_PRESETS
from seqd.core.container import level_config
from seqd.core.ctw import CTWConfig, CTWLearner
from seqd.core.esn import ESNConfig, ESNLearner
from seqd.core.lstm import LSTMConfig, LSTMLearner
from seqd.core.scornn import SCORNNConfig, SCORNNLearner
from seqd.core.online import OnlineConfig, OnlineLearner
from seqd.core.rehearsal import RehearsalConfig, RehearsalLearner
from seqd.core.rehearsal.config import preset as rehearsal_preset

STREAM_LENGTH = 1200  # symbols per contract stream: several windows, every symbol of a small alphabet
SMALL = dict(units=8, degree=3, alphabet_cap=16, window=5)  # a recurrent network small enough to be quick
# context tables of kilobytes, not megabytes, with few entries per slot and a low count limit, so that
# short streams already replace entries and halve counts
TABLES = dict(context_bits=10, history_bits=10, match_bits=10, context_entries=4, count_limit=30)
SOURCES = dict(context_orders=(1, 2, 4), column_context=True, word_context=True, match_min=4)


@dataclass(frozen=True)
class Entry:
    """One learner configuration under contract.

    ``config`` builds its configuration (a new one at each call, as the daemon
    builds a stream's); ``learner`` is the class that takes it, with
    ``learner(config)`` and ``learner.from_bytes(data)``.  ``random`` says
    whether the seed draws part of the model (recurrent units: the graph and the
    reading rates), so that another seed must give another stream.  ``closed``
    says that its alphabet is closed (the bitwise model's bytes): every symbol
    is predicted from the start, and the escape never.
    """

    name: str
    config: Callable[[], OnlineConfig | BitsConfig | CTWConfig | ESNConfig | LSTMConfig | SCORNNConfig]
    learner: type = OnlineLearner
    random: bool = True
    closed: bool = False

    def make(self, **overrides):
        """A fresh learner of this configuration, with ``overrides`` of its settings (e.g. ``seed``)."""
        config = self.config()
        return self.learner(dataclasses.replace(config, **overrides) if overrides else config)

    def __str__(self) -> str:  # pytest's parameter id
        return self.name


REGISTRY: list[Entry] = [
    Entry("default-cap16", lambda: OnlineConfig(alphabet_cap=16)),
    Entry("rbpm", lambda: OnlineConfig(**SMALL, method="rbpm")),
    Entry("ruop", lambda: OnlineConfig(**SMALL, method="ruop")),
    Entry("qdrbpm", lambda: OnlineConfig(**SMALL, method="qdrbpm")),
    Entry("qdruop", lambda: OnlineConfig(**SMALL, method="qdruop")),
    Entry("gnn", lambda: OnlineConfig(**SMALL, model="gnn")),
    Entry("window-credit-only", lambda: OnlineConfig(**SMALL, credit_horizon=0)),  # seqd 0.11's glnn
    Entry("credit-short-horizon", lambda: OnlineConfig(**SMALL, credit_horizon=1)),  # its scale folded often
    Entry("escape-until-window-end", lambda: OnlineConfig(**SMALL, close_escape=False)),  # seqd 0.12's escape
    Entry("logistic", lambda: OnlineConfig(**SMALL, activation="logistic")),
    Entry("context-units", lambda: OnlineConfig(units=4, degree=2, alphabet_cap=128, window=5, **SOURCES, **TABLES)),
    Entry("context-only", lambda: OnlineConfig(units=0, alphabet_cap=256, window=5, **SOURCES, **TABLES),
          random=False),
    # the field column and indirect sources, each with the byte model's other sources and the mixer
    Entry("field-column", lambda: OnlineConfig(units=2, degree=1, alphabet_cap=256, window=5, **SOURCES, **TABLES,
                                               field_column_context=True, selected_weights=True)),
    Entry("indirect", lambda: OnlineConfig(units=2, degree=1, alphabet_cap=256, window=5, **SOURCES, **TABLES,
                                           indirect_context=True, selected_weights=True)),
    Entry("field-selected", lambda: OnlineConfig(units=2, degree=1, alphabet_cap=256, window=5, **SOURCES, **TABLES,
                                                 field_column_context=True, selected_weights=True,
                                                 field_selected_weights=True)),
    Entry("order2-selected", lambda: OnlineConfig(units=2, degree=1, alphabet_cap=256, window=5, **SOURCES, **TABLES,
                                                  field_column_context=True, selected_weights=True,
                                                  field_selected_weights=True, order2_selected_weights=True)),
    Entry("units-selected-maps", lambda: OnlineConfig(units=3, degree=2, alphabet_cap=256, window=5, **SOURCES,
                                                      **TABLES, field_column_context=True, selected_weights=True,
                                                      field_selected_weights=True, order2_selected_weights=True,
                                                      unit_selected_weights=True, probability_maps=True)),
    # the context weights of a voted symbol predicted at almost nothing left as they are (bytes-12's, with a floor
    # a short stream reaches)
    Entry("context-step-floor", lambda: OnlineConfig(units=3, degree=2, alphabet_cap=256, window=5, **SOURCES,
                                                     **TABLES, field_column_context=True, selected_weights=True,
                                                     field_selected_weights=True, unit_selected_weights=True,
                                                     probability_maps=True, context_step_floor=0.01)),
    Entry("maps", lambda: OnlineConfig(units=2, degree=1, alphabet_cap=64, window=5, probability_maps=True)),
    Entry("number", lambda: OnlineConfig(units=2, degree=1, alphabet_cap=256, window=5, **SOURCES, **TABLES,
                                         number_context=True, selected_weights=True)),
    # tables that start at 2^10 slots and double within the stream (the byte default's growth, in miniature)
    Entry("growing-tables", lambda: OnlineConfig(units=2, degree=1, alphabet_cap=256, window=5, **SOURCES,
                                                 context_entries=4, count_limit=30, context_bits=13, history_bits=10,
                                                 match_bits=12, table_growth=True, selected_weights=True)),
    # the mixer (selected weights) by each of its steps: diagonal metric (the default), block metric, gradient
    Entry("mixer", lambda: OnlineConfig(units=4, degree=2, alphabet_cap=128, window=5, **SOURCES, **TABLES,
                                        selected_weights=True)),
    Entry("mixer-block", lambda: OnlineConfig(units=0, alphabet_cap=256, window=5, **SOURCES, **TABLES,
                                              selected_weights=True, selected_step="block"), random=False),
    Entry("mixer-gradient", lambda: OnlineConfig(units=0, alphabet_cap=256, window=5, **SOURCES, **TABLES,
                                                 selected_weights=True, selected_step="gradient",
                                                 selected_rate=0.01), random=False),
    # the daemon's presets (seqd.core.learners.PRESETS), as "preset-<name>"; "bytes" is also seqd compress's model
    # (the bitwise model's newest, "bitwise" and "bitwise-3" too); the seed draws the units' graph and rates
    Entry("preset-bytes", BitsConfig, BitsLearner, closed=True),
    Entry("preset-bytes-12", OnlineConfig.bytes_default),  # the GLNN byte model: "bytes" until seqd 0.21
    Entry("preset-glnn", OnlineConfig),
    Entry("preset-ctw", CTWConfig, CTWLearner, random=False),
    Entry("preset-esn", ESNConfig, ESNLearner),
    Entry("preset-lstm", LSTMConfig, LSTMLearner),
    Entry("preset-gru", lambda: LSTMConfig(cell="gru"), LSTMLearner),
    Entry("preset-scornn", SCORNNConfig, SCORNNLearner),
    Entry("preset-enrnn", lambda: SCORNNConfig(short=24, clip=30.0, margin=0.1), SCORNNLearner),
    Entry("preset-rehearsal", rehearsal_preset, RehearsalLearner, closed=True),  # no block complete in a contract stream
    # seqd compress's levels whose models differ most from the default (the default byte model's face, LEVEL_MODELS)
    Entry("level-fast", lambda: level_config(1), BitsLearner, random=False, closed=True),  # no units: no draw
    # the bitwise model with tables of a few kilobytes: full sets of buckets, and a history ring that wraps
    Entry("bitwise-small-tables", lambda: BitsConfig(table_bits=11, history_bits=10, match_bits=10, number_bits=10),
          BitsLearner, closed=True),
    # the bitwise model of seqd 0.21 (bitwise-2: fixed tables, one bucket a context) and of 0.20 (bitwise-1: no
    # units, no runs), whose files and streams live on
    Entry("bitwise-2", lambda: BitsConfig.from_settings({**BITWISE_PRESETS["bitwise-2"], "table_bits": 12}),
          BitsLearner, closed=True),
    # the bitwise model of seqd 0.20 (preset bitwise-1: no units, no runs), whose files and streams live on
    Entry("bitwise-1", lambda: BitsConfig.from_settings({**BITWISE_PRESETS["bitwise-1"], "table_bits": 12}),
          BitsLearner, random=False, closed=True),
    # context-tree weighting (seed 000's sanity check): a small alphabet, and bytes with a pool that fills
    Entry("ctw-cap16", lambda: CTWConfig(alphabet_cap=16, depth=4), CTWLearner, random=False),
    Entry("ctw-bytes-small-pool", lambda: CTWConfig(alphabet_cap=256, depth=6, node_bits=10), CTWLearner,
          random=False),
    # the leaky echo-state network (seed 001): its reservoir drawn from the seed
    Entry("esn-cap16", lambda: ESNConfig(alphabet_cap=16, units=12, connections=3), ESNLearner),
    Entry("esn-bytes", lambda: ESNConfig(alphabet_cap=256, units=16, connections=4, leak=0.2), ESNLearner),
    # the LSTM (seed 001), trained by truncated back-propagation: its weights drawn from the seed; two layers
    # with a clipped gradient, and bytes
    Entry("lstm-cap16", lambda: LSTMConfig(alphabet_cap=16, cells=8, layers=2, horizon=7, clip=1.0), LSTMLearner),
    Entry("lstm-bytes", lambda: LSTMConfig(alphabet_cap=256, cells=12), LSTMLearner),
    Entry("gru-cap16", lambda: LSTMConfig(alphabet_cap=16, cell="gru", cells=8, layers=2, horizon=7), LSTMLearner),
    # seed 002's scoRNN: W orthogonal through the scaled Cayley transform of a trained skew-symmetric A
    Entry("scornn-cap16", lambda: SCORNNConfig(alphabet_cap=16, units=8, negatives=3, horizon=6), SCORNNLearner),
    # seed 002's ENRNN: a short-term state T / rho(T) beside the orthogonal one, coupled, and uncoupled with a margin
    Entry("enrnn-cap16", lambda: SCORNNConfig(alphabet_cap=16, units=8, short=3, margin=0.1, clip=5.0),
          SCORNNLearner),
    Entry("enrnn-coupled", lambda: SCORNNConfig(alphabet_cap=16, units=9, short=4, coupling=True, clip=5.0),
          SCORNNLearner),
    # seed 000's GLNN for each group of symbols read, rehearsing its buffer: blocks of 256 symbols, so that a
    # contract stream draws its networks from the first block, rehearses several times and fills the ring;
    # 5 groups of 16 symbols and 2 draws (the mixture), and bytes
    Entry("rehearsal-cap16", lambda: RehearsalConfig(alphabet_cap=16, units=3, degree=2, groups=5, block=256,
                                                     blocks=2, rehearsals=2), RehearsalLearner, closed=True),
    Entry("rehearsal-bytes", lambda: RehearsalConfig(alphabet_cap=256, units=2, degree=2, groups=2, draws=1,
                                                     block=128, blocks=3, rehearsals=1), RehearsalLearner,
          closed=True),
]

# the entries whose learner is the online GLNN (OnlineLearner), for the checks of its internals
ONLINE = [entry for entry in REGISTRY if entry.learner is OnlineLearner]


def log_bytes(n: int, seed: int = 0) -> bytes:
    """Log-like lines (dates, hosts, paths, numbers): repeats and small variations, as the byte models meet."""
    rng = np.random.default_rng(seed)
    hosts, paths = ["alpha", "beta", "gamma7"], ["/api/v1/items", "/login", "/static/app.js"]
    out = bytearray()
    while len(out) < n:
        out += (f"2026-03-{rng.integers(1, 29):02d} 12:{rng.integers(0, 60):02d}:{rng.integers(0, 60):02d} "
                f"{hosts[rng.integers(3)]} GET {paths[rng.integers(3)]}?id={rng.integers(0, 500)} "
                f"{[200, 200, 404, 302][rng.integers(4)]}\n").encode()
    return bytes(out[:n])


def symbols(alphabet_cap: int, n: int, seed: int = 0) -> np.ndarray:
    """A stream over ``[0, alphabet_cap)``: a repeated motif broken by noise, every symbol occurring early.

    Byte-sized alphabets (128 and more) get log-like text, which their context
    units are built for; smaller ones a motif over the whole alphabet with
    random substitutions, so that the alphabet fills up (and the escape
    retires) within the first windows while there is still something to learn.
    """
    if alphabet_cap >= 128:
        return np.frombuffer(log_bytes(n, seed), dtype=np.uint8).astype(np.int64)
    rng = np.random.default_rng(seed)
    motif = rng.permutation(alphabet_cap)
    x = np.resize(np.concatenate([motif, motif[: alphabet_cap // 2]]), n)
    noisy = rng.random(n) < 0.15
    x[noisy] = rng.integers(0, alphabet_cap, noisy.sum())
    return x.astype(np.int64)


def stream(entry: Entry, n: int = STREAM_LENGTH, seed: int = 0) -> np.ndarray:
    """The contract stream of ``entry``: ``n`` symbols of its alphabet (int64)."""
    return symbols(entry.config().alphabet_cap, n, seed)
