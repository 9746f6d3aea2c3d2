"""What a ``.sqd`` reader accepts from a file it did not write, and the memory a file's model needs.

A header's CRC-32 catches damage, not intent: whoever writes a file can write
any JSON and a matching checksum.  So the reader trusts nothing in it.  The
header is parsed strictly (:func:`parse_meta`: known keys only, each of its
type; no NaN, no infinities), and the model it names is built only if every
setting is of its type and within its byte model's bounds (each model's
face holds them: ``online/face.py``, ``bits/face.py``; :func:`check_settings`).
The writer checks the same bounds (:func:`check_config`), so a reader never
refuses a file that this version of seqd wrote, and never runs a model that
it could not have written: the alphabet is bytes, the recurrent network and
its window are of a size that codes at a usable speed, and every context
order is one the hashing reaches in a few steps.

The tables' sizes (``context_bits``, ``table_bits``, ``history_bits``,
``match_bits``, ...) are left to the configurations' own bounds: they cost
memory, not time, and the memory is checked before anything is allocated
(:func:`check_memory`), from the array shapes of the learner's state at its
full size and the block buffers the header's block size implies.
``docs/format.md`` lists all of it.
"""

from __future__ import annotations

import dataclasses
import json
import math

from .faces import FACES, face_named, face_of
from .kit.face import Face

DEFAULT_MEMORY_LIMIT = 2 << 30  # the default model at its full size decodes in some 450 MiB, its largest level 650
MAX_BUILD_CHARS = 256  # the header's "build" text is quoted in error messages: a short line
LEARNERS = tuple(face.header_name for face in FACES)  # a header's "learner": a byte model's face
META_KEYS = {"preset": str, "config": dict, "block_size": int, "chain_size": int, "build": str, "learner": str}
REQUIRED_META = ("preset", "config", "block_size")


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number seqd writes")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is out of a float's range")
    return value


def strict_json(body: bytes):
    """JSON that seqd wrote, or a ValueError: no NaN, no infinities (nor numbers that overflow to one), not
    nested past the parser's depth.  A ``.sqd`` header's and a daemon's ``stream.json`` are read so."""
    try:
        return json.loads(body, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise ValueError("the JSON is nested too deeply") from None


def parse_meta(body: bytes) -> dict:
    """The header's JSON object, strictly: its known keys only, each of its type (a ValueError otherwise)."""
    meta = strict_json(body)
    if not isinstance(meta, dict):
        raise ValueError("the JSON is not an object")
    unknown = sorted(set(meta) - set(META_KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0][:40]!r} (a newer seqd's? upgrade seqd)")
    for key in REQUIRED_META:
        if key not in meta:
            raise ValueError(f"missing key {key!r}")
    for key, kind in META_KEYS.items():
        if key in meta and (not isinstance(meta[key], kind) or isinstance(meta[key], bool)):
            raise ValueError(f"{key} must be {'an integer' if kind is int else 'a ' + kind.__name__}")
    build = meta.get("build", "")
    if len(build) > MAX_BUILD_CHARS or not build.isprintable():
        raise ValueError(f"build must be a printable text of at most {MAX_BUILD_CHARS} characters")
    return meta


def check_settings(settings: dict, learner: str = "online"):
    """The model of a header's settings (its preset's, then its overrides), each checked by type and bound
    (its face's :class:`~.kit.face.Bounds`); ``learner`` is the header's (:data:`LEARNERS`).

    Raises a ValueError naming the first setting refused.
    """
    face = face_named(learner)
    names = {field.name for field in dataclasses.fields(face.config)}
    for key, value in settings.items():
        if key not in names:
            raise ValueError(f"unknown setting {str(key)[:40]!r}")
        face.bounds.check(key, value)
    return face.config.from_settings(settings)


def byte_face(config) -> Face:
    """The face of a byte model's configuration; a ValueError for any other model, which has no ``.sqd``
    format."""
    face = face_of(config)
    if face is None:
        raise ValueError(f"the .sqd container codes with seqd's byte models ("
                         f"{' or '.join(f.config.__name__ for f in FACES)}); a {type(config).__name__} model has "
                         "no .sqd format")
    return face


def learner_of(config) -> str:
    """The header's name of the learner of ``config`` (:data:`LEARNERS`)."""
    return byte_face(config).header_name


def check_config(config) -> None:
    """Refuse to write a model a reader would refuse (the writer's half of :func:`check_settings`)."""
    check_settings(json.loads(json.dumps(dataclasses.asdict(config))), learner_of(config))


def encoded_bound(config, n: int) -> int:
    """The most payload bytes a block of ``n`` bytes codes to with ``config``'s model."""
    return byte_face(config).coder.max_encoded_bytes(n)


def decoding_memory(config, block_size: int, learners: int = 1) -> tuple[int, int]:
    """(model bytes, block buffer bytes) that decoding a file needs with ``learners`` blocks at once.

    A learner's arrays at their full size (a model whose tables grow may take them all); a block needs its
    payload (at most :func:`encoded_bound`), its decoded bytes and their copy as ``bytes``.
    """
    model = byte_face(config).state_nbytes(config)
    return learners * model, learners * (encoded_bound(config, block_size) + 2 * block_size)


def check_memory(config, block_size: int, limit: int, name: str = "the file", learners: int = 1,
                 option: str = "memory_limit") -> None:
    """A ValueError, one line, when decoding needs more than ``limit`` bytes: the file, the need, the limit, the fix."""
    model, buffers = decoding_memory(config, block_size, learners)
    if model + buffers > limit:
        raise MemoryLimitError(
            f"{name}: decoding needs {_size(model + buffers)} of memory ({_size(model)} for the model"
            f"{f' × {learners}' if learners > 1 else ''}, {_size(buffers)} for blocks of {_size(block_size)}), "
            f"more than the limit of {_size(limit)}; if the file is trusted, raise the limit with {option}")


class MemoryLimitError(ValueError):
    """Decoding a file would need more memory than allowed."""


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
