"""A byte model's face: everything the rest of seqd needs to know of it, in one record.

seqd keeps more than one byte model: today's, and the earlier ones whose
files and streams must go on decoding and learning forever.  Each registers
one :class:`Face` (``online/face.py``, ``bits/face.py``; the registry is
``core/faces.py``): its names, its configuration and learner, its table of
versions (the presets), the ``.sqd`` formats its files are written and read
in, the bounds a reader holds its settings to, its coder, and the memory its
state takes.  The container, the limits, the learners' registry, the
command line and the daemon look the face up rather than ask which model
they hold, so a new byte model is a new face and nothing else changes.

This module is the type, the bounds' checks and the coder's interface; it
imports no model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .versions import VersionTable


@dataclass(frozen=True)
class Bounds:
    """What a reader accepts of a model's settings from a file it did not write (``core/limits.py``): each
    integer and float setting's inclusive bounds, the choices of a text setting, the switches, the settings that
    may be null, and for a list of integers its longest length and each element's bounds.  A setting of the
    model missing here is refused: a model's tests keep its configuration and its bounds in step."""

    ints: dict
    floats: dict
    choices: dict = field(default_factory=dict)
    bools: tuple = ()
    nullable: tuple = ()
    lists: dict = field(default_factory=dict)  # name -> (longest, lowest element, highest element)

    def check(self, key: str, value) -> None:
        """A ValueError naming ``key`` unless ``value`` is of its type and within its bounds."""
        if key in self.nullable and value is None:
            return
        if key in self.ints:
            lo, hi = self.ints[key]
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{key} must be an integer, got {show(value)}")
            if not lo <= value <= hi:
                if key == "alphabet_cap":
                    raise ValueError(f"the container codes bytes: alphabet_cap must be 256, got {show(value)}")
                raise ValueError(f"{key} must be in [{lo}, {hi}], got {show(value)}")
        elif key in self.floats:
            lo, hi = self.floats[key]
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"{key} must be a number, got {show(value)}")
            if not lo <= value <= hi:  # NaN fails this too
                raise ValueError(f"{key} must be in [{lo:g}, {hi:g}], got {show(value)}")
        elif key in self.choices:
            if value not in self.choices[key] or not isinstance(value, str):
                raise ValueError(f"{key} must be one of {', '.join(self.choices[key])}, got {show(value)}")
        elif key in self.bools:
            if not isinstance(value, bool):
                raise ValueError(f"{key} must be true or false, got {show(value)}")
        elif key in self.lists:
            longest, lo, hi = self.lists[key]
            if not isinstance(value, (list, tuple)) or len(value) > longest:
                raise ValueError(f"{key} must be a list of at most {longest} values, got {show(value)}")
            for item in value:
                if not isinstance(item, int) or isinstance(item, bool) or not lo <= item <= hi:
                    raise ValueError(f"{key} must be integers in [{lo}, {hi}], got {show(item)}")
        else:  # a setting of the model that these bounds do not know: its tests keep the two in step
            raise ValueError(f"setting {key!r} has no bound")

    def names(self) -> set:
        return set(self.ints) | set(self.floats) | set(self.choices) | set(self.bools) | set(self.nullable) \
            | set(self.lists)


class Unbuildable(ValueError):
    """A file names a model this seqd no longer builds: an older seqd decodes it (the message says which)."""


def show(value) -> str:
    """A value as an error message quotes it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Coder:
    """A byte model's coding of one block: the arithmetic coder and the learner run together, so that the
    decoder rebuilds the encoder's model symbol by symbol (``core/container.py`` drives it).

    ``encode(learner, x, out)`` codes the bytes ``x`` (int64) into ``out`` and learns them, as often as the
    caller has bytes; ``written()`` is the payload's length so far; ``finish(out)`` ends the payload and
    returns its length.  ``start(data)`` begins decoding a payload, ``decode(learner, data, out)`` decodes
    ``len(out)`` bytes into ``out`` (int64), learning each, and returns how many it decoded before the
    payload ran out.  ``max_encoded_bytes(n)`` bounds any block of n bytes' payload.

    ``arithmetic`` is the module of the arithmetic coder's state (``encoder_state()``, ``decoder_state(data)``,
    ``finish(state, out)``, the index ``POS`` of the bytes written); a model gives ``encode``, ``decode`` and
    ``max_encoded_bytes``."""

    def __init__(self, arithmetic):
        self._arithmetic = arithmetic
        self._state = arithmetic.encoder_state()

    def encode(self, learner, x: np.ndarray, out: np.ndarray) -> None:
        raise NotImplementedError

    def written(self) -> int:
        return int(self._state[self._arithmetic.POS])

    def finish(self, out: np.ndarray) -> int:
        return self._arithmetic.finish(self._state, out)

    def start(self, data: np.ndarray) -> None:
        self._state = self._arithmetic.decoder_state(data)

    def decode(self, learner, data: np.ndarray, out: np.ndarray) -> int:
        raise NotImplementedError

    @staticmethod
    def max_encoded_bytes(n: int) -> int:
        raise NotImplementedError


@dataclass(frozen=True)
class Face:
    """One byte model, as the rest of seqd sees it (this module's docstring)."""

    model: str  # its name among seqd's models: stream.json's "model", core/learners.py's MODELS
    header_name: str  # what a .sqd header's "learner" calls it ("online" when a header names none: formats 1-3)
    config: type  # its configuration (a frozen dataclass with from_settings)
    learner: type  # its learner class
    versions: VersionTable  # its presets, oldest first; the last is what it writes today
    writes: int  # the .sqd format version its files are written in
    reads: tuple  # the format versions of the files it codes
    bounds: Bounds  # what a reader accepts of its settings
    coder: Callable  # config -> a Coder for one block
    state_nbytes: Callable  # config -> the bytes of its arrays at their full size
    first_resident: Callable  # config -> the bytes a new learner takes (less where its tables grow)
    keeps_ring: Callable  # config -> whether its learner keeps a history ring (a daemon stream's history file)
    check_header: Callable  # (format version, preset, config) -> None, or a ValueError: what its history forbids
    solo: Callable  # config -> a learner for a process that learns one stream (seqd compress, seqd eval): it may
    # trade memory for speed where a daemon of many streams would not
    levels: dict = field(default_factory=dict)  # seqd compress's levels by name: each the newest preset's changes
    level_names: dict = field(default_factory=dict)  # the levels 1..9, each a name of ``levels``

    def preset(self, name: str | None = None, **changes):
        """Preset ``name`` (the newest by default) with ``changes``: its configuration."""
        settings = self.versions.presets[name or self.versions.preset]
        return self.config.from_settings({**settings, **changes})
