"""A stream's snapshot file: the learner at some position, with the stream's statistics, behind a checksum.

Layout, version 2 (magic ``SEQDSNP\\x02``), all integers little-endian::

    magic (8 bytes) | stream position (u64) | length of the statistics (u32) | their crc32 (u32)
    statistics: length of a JSON header (u32) | {"code_bits": ..., "recent": n} | n recent code lengths (f64)
    the learner (``OnlineLearner.snapshot_parts`` / ``from_bytes``: a checksum of its own)

The statistics' crc32 starts from the stream position (its low 32 bits), so
a header moved onto another position fails it.  Version 1 (``SEQDSNP\\x01``) is still read: its
statistics are all JSON, the recent code lengths as numbers; encoding those
held the GIL for about 4 ms per snapshot.  A file of a version this daemon
does not know is refused by name, and left as it is.

This module knows the bytes; :class:`~.streams.Stream` decides when a
snapshot is written and where (a temporary file of its own name, renamed
over ``snapshot``), and :func:`write_durably` / :func:`write_atomically` are
how any of its files reach the disk.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from ..core.online import OnlineLearner
from . import wal

SNAPSHOT_MAGIC = b"SEQDSNP\x02"
SNAPSHOT_MAGIC_V1 = b"SEQDSNP\x01"  # still read: statistics all in JSON, the recent code lengths as numbers
_SNAP_HEAD = struct.Struct("<8sQII")  # magic, stream position, length and crc32 of the statistics
_STATS_HEAD = struct.Struct("<I")  # v2 statistics: length of their JSON, the JSON, then the recent code lengths


def head(position: int, code_bits: float, recent: np.ndarray) -> bytes:
    """The header and statistics of a version 2 snapshot at ``position``; the learner's parts follow."""
    # the recent code lengths as raw float64: as JSON numbers they took about 4 ms with the GIL held
    info = json.dumps({"code_bits": code_bits, "recent": len(recent)}).encode()
    extra = _STATS_HEAD.pack(len(info)) + info + recent.astype("<f8").tobytes()
    return _SNAP_HEAD.pack(SNAPSHOT_MAGIC, position, len(extra), zlib.crc32(extra, position)) + extra


def read(snap: Path, recent_length: int) -> tuple[int, float, np.ndarray, OnlineLearner]:
    """A snapshot of either version: its position, cumulative code length, the ``recent_length`` recent code
    lengths, and the learner.  ValueError naming the file when it is cut short, damaged, or of another
    version."""
    data = snap.read_bytes()
    if len(data) < _SNAP_HEAD.size:
        raise ValueError(f"{snap}: cut short")
    magic, position, size, crc = _SNAP_HEAD.unpack_from(data)
    end = _SNAP_HEAD.size + size
    if magic[:7] == SNAPSHOT_MAGIC[:7] and magic not in (SNAPSHOT_MAGIC, SNAPSHOT_MAGIC_V1):
        raise ValueError(f"{snap}: a stream snapshot of version {magic[7]}; this daemon reads versions "
                         f"{SNAPSHOT_MAGIC_V1[7]} and {SNAPSHOT_MAGIC[7]}")
    if (magic not in (SNAPSHOT_MAGIC, SNAPSHOT_MAGIC_V1) or len(data) < end
            or zlib.crc32(data[_SNAP_HEAD.size:end], position) != crc):
        raise ValueError(f"{snap}: not a seqd stream snapshot, or damaged")
    code_bits, recent = _read_statistics(magic, data[_SNAP_HEAD.size:end], snap, recent_length)
    return position, code_bits, recent, OnlineLearner.from_bytes(data[end:])


def _read_statistics(magic: bytes, stats: bytes, snap: Path, recent_length: int) -> tuple[float, np.ndarray]:
    """A snapshot's cumulative code length and recent code lengths, from either version's layout."""
    try:
        if magic == SNAPSHOT_MAGIC_V1:
            info = json.loads(stats)
            recent = np.asarray(info["recent"], dtype=np.float64)
        else:
            (n,) = _STATS_HEAD.unpack_from(stats)
            info = json.loads(stats[_STATS_HEAD.size:_STATS_HEAD.size + n])
            recent = np.frombuffer(stats, dtype="<f8", offset=_STATS_HEAD.size + n).astype(np.float64)
            if len(recent) != info["recent"]:
                raise ValueError(f"{len(recent)} recent code lengths, the header says {info['recent']}")
        if recent.shape != (recent_length,):
            raise ValueError(f"{recent.shape} recent code lengths, not ({recent_length},)")
        return float(info["code_bits"]), recent
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        raise ValueError(f"{snap}: its statistics are malformed ({exc})") from None


def write_durably(path: Path, *parts) -> Path:
    """Write the buffers one after the other to a new file at ``path``, and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, wal.PRIVATE_FILE)
    try:
        offset = 0
        for part in parts:
            offset = wal.write_all(fd, part, offset)
        os.fsync(fd)
    except BaseException:
        path.unlink(missing_ok=True)  # a snapshot is tens of megabytes: leave no partial one on a full disk
        raise
    finally:
        os.close(fd)
    return path


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a temporary file beside it, fsynced, renamed over it, the folder fsynced."""
    os.replace(write_durably(path.with_name(path.name + ".tmp"), data), path)
    wal.fsync_path(path.parent)
