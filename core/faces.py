"""Every byte model seqd knows, by its face (``kit/face.py``): today's default first, then the frozen ones.

The container, the limits, the learners' registry, the command line and the daemon look a model up here,
by its configuration or by the name a file or a stream gives it, and never ask which model they hold.
"""

from __future__ import annotations

from .bits.face import FACE as BITWISE
from .kit.face import Face
from .online.face import FACE as GLNN

FACES: tuple[Face, ...] = (BITWISE, GLNN)
DEFAULT = BITWISE  # the byte model of `seqd compress`, `seqd eval` and a daemon's `bytes` stream


# What a daemon stream's preset "bytes" has meant, oldest first: the GLNN byte model's defaults from bytes-2 (the
# first a stream held) to bytes-12, then the bitwise model's from bitwise-3 on.
BYTES_PRESETS = tuple((GLNN, row.preset) for row in GLNN.versions.rows[GLNN.versions.served_from:]) \
    + tuple((BITWISE, row.preset) for row in BITWISE.versions.rows
            if row.preset not in ("bitwise-1", "bitwise-2"))


def face_of(config) -> Face | None:
    """The face of ``config``'s model, or None for a model that is not a byte model (CTW, an LSTM, ...)."""
    for face in FACES:
        if type(config) is face.config:
            return face
    return None


def face_named(header_name: str) -> Face:
    """The face a ``.sqd`` header's "learner" names; a ValueError for one this seqd does not know."""
    for face in FACES:
        if face.header_name == header_name:
            return face
    raise ValueError(f"learner {str(header_name)[:40]!r} is not one this seqd knows: upgrade seqd")


def face_of_preset(preset: str) -> Face | None:
    """The face whose table of versions holds ``preset`` ("bytes-12", "bitwise-3", ...), or None."""
    for face in FACES:
        if preset in face.versions.presets:
            return face
    return None
