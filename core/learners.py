"""Every model seqd learns with, by name: its configuration, its learner, and the presets built from them.

``seqd eval`` (a preset per run) and the daemon (a preset per stream, its
model's name kept in ``stream.json``) both choose here.  A model is a
configuration class (a frozen dataclass with ``alphabet_cap``) and the
learner class that takes it; every learner has the same interface
(``docs/architecture.md``: ``learn``, the prediction methods,
``to_bytes`` / ``from_bytes``, ``snapshot_parts``, ``stats``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .bits import BitsConfig, BitsLearner
from .bits.config import state_shapes as bits_shapes
from .faces import DEFAULT, FACES, face_of
from .ctw import CTWConfig, CTWLearner
from .ctw.config import state_shapes as ctw_shapes
from .esn import ESNConfig, ESNLearner
from .esn.config import state_shapes as esn_shapes
from .lstm import LSTMConfig, LSTMLearner
from .lstm.config import state_shapes as lstm_shapes
from .scornn import SCORNNConfig, SCORNNLearner
from .scornn.config import state_shapes as scornn_shapes
from .online import OnlineConfig, OnlineLearner
from .rehearsal import RehearsalConfig, RehearsalLearner
from .rehearsal.config import network_work, online_config, rehearsal_work
from .rehearsal.config import preset as rehearsal_preset
from .rehearsal.config import state_shapes as rehearsal_shapes
from .online.state import state_shapes as online_shapes


@dataclass(frozen=True)
class Model:
    """One model: its name, its configuration and learner classes, its state's shapes by configuration, and
    the multiply-adds it spends on a symbol (None: a few thousand at most, whatever the configuration)."""

    name: str
    config: type
    learner: type
    shapes: Callable  # config -> {array name: (shape, dtype)}
    work: Callable | None = None  # config -> multiply-adds per symbol, the order of


def _esn_work(c: ESNConfig) -> int:
    """The reservoir's sparse product, and the readout's softmax and writing step over every code."""
    return c.units * c.connections + 3 * (c.units + 1) * (c.alphabet_cap + 1)


def _scornn_work(c: SCORNNConfig) -> int:
    """W h forward and back, the softmax's three passes, and per window the Cayley transform and the skew
    gradient (some five q^3 for the q long-term units), and an ENRNN's eigenvalues and eigenvectors of T (some
    twenty m^3: Hessenberg form, QR sweeps, two complex solves), shared by the window's symbols."""
    n, m = c.units, c.short
    return 3 * n * n + 3 * (n + 1) * (c.alphabet_cap + 1) + (5 * (n - m) ** 3 + 20 * m ** 3) // c.horizon


def _lstm_work(c: LSTMConfig) -> int:
    """Each layer's gates forward and twice backward, and the softmax's forward, error and step."""
    gates = 3 if c.cell == "gru" else 4
    return 3 * c.layers * gates * c.cells * ((2 if c.layers > 1 else 1) * c.cells + 1) \
        + 3 * (c.layers * c.cells + 1) * (c.alphabet_cap + 1)


def _rehearsal_shapes(c: RehearsalConfig) -> dict:
    """The rehearsing GLNN's arrays and its online member's (a GLNN of its own, snapshotted after them)."""
    member = online_shapes(online_config(c)) if c.online else {}
    return {**rehearsal_shapes(c), **{"online." + name: shape for name, shape in member.items()}}


def _rehearsal_work(c: RehearsalConfig) -> int:
    """Every network's reading of the symbol, a group's softmaxes, and the rehearsals' share (the online member's
    GLNN is bounded, as the glnn model's)."""
    return (c.networks + c.draws) * network_work(c) + rehearsal_work(c)


# by name; "glnn" is seed 000's GLNN with the context units and their mixer (OnlineConfig), which every seqd
# before 0.14 served alone, so a stream.json without a model name holds one
MODELS = {model.name: model for model in (
    Model("glnn", OnlineConfig, OnlineLearner, online_shapes),
    Model("ctw", CTWConfig, CTWLearner, ctw_shapes),
    Model("bitwise", BitsConfig, BitsLearner, bits_shapes),
    Model("esn", ESNConfig, ESNLearner, esn_shapes, _esn_work),
    Model("lstm", LSTMConfig, LSTMLearner, lstm_shapes, _lstm_work),
    Model("scornn", SCORNNConfig, SCORNNLearner, scornn_shapes, _scornn_work),
    Model("rehearsal", RehearsalConfig, RehearsalLearner, _rehearsal_shapes, _rehearsal_work),
)}

def _version_of(face, preset: str) -> Callable:
    """A byte model's frozen preset, as a builder that takes changes to it."""
    return lambda **changes: face.preset(preset, **changes)


# preset name -> (model name, how the preset builds its configuration from settings)
PRESETS: dict[str, tuple[str, Callable]] = {
    "bytes": (DEFAULT.model, DEFAULT.preset),  # the byte model: today's default one's newest preset (core/faces.py)
    "glnn": ("glnn", OnlineConfig),  # seed 000's GLNN alone
    "bitwise": ("bitwise", BitsConfig),  # the bitwise byte model's newest preset (today's "bytes")
    "ctw": ("ctw", CTWConfig),  # context-tree weighting (seed 000's sanity check)
    "esn": ("esn", ESNConfig),  # a leaky echo-state network (seed 001)
    "lstm": ("lstm", LSTMConfig),  # an LSTM trained by truncated back-propagation (seed 001)
    "gru": ("lstm", functools.partial(LSTMConfig, cell="gru")),  # gated recurrent units, the same way
    "scornn": ("scornn", SCORNNConfig),  # seed 002's orthogonal RNN, W by the scaled Cayley transform
    # seed 002's ENRNN (eq. 2.80, uncoupled): the scoRNN's 40 long-term units and 24 short-term ones, W^(S)
    # normalised to spectral radius 1/1.1 (margin 0.1: never reset online, a radius of 1 let the state grow
    # until the softmax underflowed), clipped (online its T diverges unclipped; 30 chosen on Apache's first
    # 30 kB, docs/benchmarks.md)
    "enrnn": ("scornn", functools.partial(SCORNNConfig, short=24, clip=30.0, margin=0.1)),
    # seed 000's batch GLNN for each group of symbols read, trained by rehearsing the stream's last blocks: the
    # online learner that learns distant XOR (core/rehearsal); for small alphabets (16 by default)
    "rehearsal": ("rehearsal", rehearsal_preset),
    # each byte model's newest version by its frozen name: "bitwise-3" (today's "bytes") and "bytes-12" (the GLNN
    # byte model's last, "bytes" until seqd 0.21); seqd eval and compress also take the older ones (faces.py)
    **{face.versions.preset: (face.model, _version_of(face, face.versions.preset)) for face in FACES},
}


def model_of(config) -> Model:
    """The model whose configuration ``config`` is."""
    for model in MODELS.values():
        if type(config) is model.config:
            return model
    raise TypeError(f"{type(config).__name__} is not the configuration of any seqd model")


def settings_of(config) -> dict:
    """``config``'s settings as JSON can hold them (tuples as lists)."""
    return {name: list(value) if isinstance(value, tuple) else value
            for name, value in dataclasses.asdict(config).items()}


def config_from(model: str, settings: dict):
    """The configuration stored as ``model``'s ``settings``: ValueError when the model or a setting is unknown.
    The byte models' (the GLNN's and the bitwise one's) take the settings an earlier seqd did not write as that
    seqd had them."""
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}; known: {', '.join(MODELS)}")
    kind = MODELS[model].config
    try:  # a byte model's configuration reads what an earlier seqd wrote (its from_settings)
        return kind.from_settings(settings) if hasattr(kind, "from_settings") else kind(**settings)
    except TypeError as exc:
        raise ValueError(f"{model} settings are invalid: {exc}") from None


def learner_for(config):
    """A fresh learner of ``config``."""
    return model_of(config).learner(config)


def work_per_symbol(config) -> int | None:
    """The order of the multiply-adds a learner of ``config`` spends on a symbol; None where that is small
    whatever the configuration (the GLNN's bounded network, CTW's path through its tree)."""
    work = model_of(config).work
    return None if work is None else work(config)


def state_nbytes(config) -> int:
    """The bytes of a learner's arrays for ``config``, without allocating them."""
    return sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in model_of(config).shapes(config).values())


def first_resident_nbytes(config) -> int:
    """The memory a new learner of ``config`` takes (its ``resident_bytes``), without making one: its arrays'
    bytes, less for a byte model whose history and tables grow with its stream (its face says)."""
    face = face_of(config)
    return state_nbytes(config) if face is None else face.first_resident(config)


def keeps_ring(config) -> bool:
    """Whether a learner of ``config`` keeps a ring of the symbols it has seen (a byte model's history), which a
    daemon stream's snapshots leave to its history file."""
    face = face_of(config)
    return face is not None and face.keeps_ring(config)
