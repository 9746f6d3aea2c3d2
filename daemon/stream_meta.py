"""A stream's ``stream.json``: its name, when it was created, and its model, written once at creation.

A restore trusts nothing in it (:func:`read`).  The file is parsed strictly
(a JSON object, no NaN or infinities, a bounded size); the name must be one
the protocol allows and the folder's own (a folder cannot claim another
stream's name); every setting must be of its type; and the configuration must
be one this daemon would create (:func:`~.models.check_served`) and fit its
memory (``max_state_bytes``), all before a single array is allocated.  What
fails is a :class:`BadStreamFile`, naming the file and the reason: that
stream is refused alone, and the others are served.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

from ..clients import protocol as P
from ..core.learners import MODELS, config_from, model_of, settings_of
from ..core.limits import strict_json
from .budget import STREAM_BYTES
from .learner_store import most_bytes
from .models import check_served

NAME = "stream.json"
MAX_BYTES = 1 << 16  # a stream.json is a few hundred bytes; a larger one is not ours


class BadStreamFile(ValueError):
    """A stream.json that a restore refuses; the message names the file and why."""


def encode(name: str, created: float, config) -> bytes:
    """The stream.json of a new stream."""
    meta = {"name": name, "created": created, "model": model_of(config).name, "config": settings_of(config)}
    return json.dumps(meta, indent=1).encode()


def read(directory: Path, max_state_bytes: int | None = None) -> tuple[str, float, object]:
    """(name, creation time, model configuration) of the stream in ``directory``; :class:`BadStreamFile` when its
    stream.json is missing, malformed, names another stream, or holds a model this daemon does not serve or
    that would take more than ``max_state_bytes`` (a stream's own bytes included) once grown."""
    path = directory / NAME
    try:
        with open(path, "rb") as f:
            body = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise BadStreamFile(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return parse(body, str(path), directory.name, max_state_bytes)


def parse(body: bytes, path: str, expected: str | None,
          max_state_bytes: int | None = None) -> tuple[str, float, object]:
    """:func:`read` of a stream.json's bytes from elsewhere (a cluster's log or snapshot pointer): ``path``
    names where they came from in the errors, and ``expected`` is the name they must hold (None: any)."""
    if len(body) > MAX_BYTES:
        raise BadStreamFile(f"{path}: larger than {MAX_BYTES} bytes, not a stream.json of seqd's")
    try:
        meta = strict_json(body)
    except ValueError as exc:  # (UnicodeDecodeError is a ValueError)
        raise BadStreamFile(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise BadStreamFile(f"{path}: holds {type(meta).__name__}, not an object")
    name = meta.get("name")
    if not isinstance(name, str) or not P.STREAM_NAME.fullmatch(name):
        raise BadStreamFile(f"{path}: its name {_shown(name)} is not a stream name the protocol allows")
    if expected is not None and name != expected:
        raise BadStreamFile(f"{path}: names stream {name!r}, but its folder is {expected!r}")
    created = meta.get("created")
    if isinstance(created, bool) or not isinstance(created, (int, float)) or not math.isfinite(created):
        raise BadStreamFile(f"{path}: its creation time {_shown(created)} is not a number")
    model = meta.get("model", "glnn")  # no model: a GLNN (before seqd 0.14)
    if model not in MODELS:
        raise BadStreamFile(f"{path}: model {_shown(model)} is none this daemon knows ({', '.join(MODELS)})")
    settings = meta.get("config")
    if not isinstance(settings, dict):
        raise BadStreamFile(f"{path}: its config is {_shown(settings)}, not an object of settings")
    try:
        _check_types(MODELS[model].config, settings)
        config = config_from(model, settings)
        check_served(config)
    except (ValueError, TypeError, OverflowError) as exc:
        raise BadStreamFile(f"{path}: {exc}") from None
    need = STREAM_BYTES + most_bytes(config)
    if max_state_bytes is not None and need > max_state_bytes:
        raise BadStreamFile(f"{path}: its model takes up to {need:,} bytes in memory, more than this server serves "
                            f"in all (max_state_bytes = {max_state_bytes:,})")
    return name, float(created), config


def _check_types(kind, settings: dict) -> None:
    """TypeError unless each of ``settings`` that ``kind`` knows has the type its field declares (a bool is not
    an int here, nor a float a string); unknown ones are left to the configuration's own refusal."""
    types = {f.name: f.type for f in dataclasses.fields(kind)}
    for key, value in settings.items():
        declared = types.get(key)
        if declared is None:
            continue
        allowed = [t.strip() for t in str(declared).split("|")]
        if value is None and "None" in allowed:
            continue
        if "bool" in allowed and isinstance(value, bool):
            continue
        if isinstance(value, bool):
            pass
        elif "int" in allowed and isinstance(value, int):
            continue
        elif "float" in allowed and isinstance(value, (int, float)):
            continue
        elif "str" in allowed and isinstance(value, str):
            continue
        elif any(t.startswith("tuple") for t in allowed) and isinstance(value, list) \
                and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            continue
        raise TypeError(f"setting {key} = {_shown(value)} is not of its type ({declared})")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 64 else text[:61] + "..."
