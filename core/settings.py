"""The type checks the baselines' configurations share (CTW, the echo-state network, the LSTM, the scoRNN): a
setting of the wrong type is a ValueError that names it, and each is stored as a plain int or float."""

from __future__ import annotations

import math

import numpy as np


def integers(config, *names: str) -> None:
    """Each of ``names`` is an integer (not a bool) on the frozen dataclass ``config``, stored as an int."""
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        object.__setattr__(config, name, int(value))


def numbers(config, *names: str) -> None:
    """Each of ``names`` is a finite number (not a bool) on the frozen dataclass ``config``, stored as a float."""
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        object.__setattr__(config, name, float(value))
