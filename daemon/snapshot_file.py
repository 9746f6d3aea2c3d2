"""A stream's snapshot file: the learner at some position, with the stream's statistics, behind a checksum.

Layout, version 4 (magic ``SEQDSNP\\x04``), all integers little-endian::

    magic (8 bytes) | stream position (u64) | length of the statistics (u32) | their crc32 (u32)
    statistics: length of a JSON header (u32) | {"code_bits": ..., "recent": n} | n recent code lengths (f64)
    the learner (its ``snapshot_parts`` / ``from_bytes``: a checksum of its own), as its non-zero
    words, deflated (:mod:`.sparse`); which learner, the stream's ``stream.json`` says (its model)

The statistics' crc32 starts from the stream position (its low 32 bits), so
a header moved onto another position fails it.  A byte stream's 58 MB
learner, whose tables are sized for any stream and hold mostly zeros, takes
a few hundred kilobytes after a few kilobytes of log, and writing or reading
it costs what its non-zero words do (:mod:`.sparse`).  Versions 3 (the same,
the learner deflated whole: some 80 ms each way whatever the stream), 2 (the
learner as it is) and 1 (``SEQDSNP\\x01``: statistics all in JSON, the
recent code lengths as numbers) are still read.  A file of a version this
daemon does not know is refused by name, and left as it is.

This module knows the bytes; :class:`~.streams.Stream` decides when a
snapshot is written and where (a temporary file of its own name, renamed
over ``snapshot``), and :func:`write_durably` / :func:`write_atomically` are
how any of its files reach the disk.
"""

from __future__ import annotations

import io
import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from ..core.online import OnlineLearner
from . import wal
from .sparse import Inflater, SparseReader

SNAPSHOT_MAGIC = b"SEQDSNP\x04"
SNAPSHOT_MAGIC_V3 = b"SEQDSNP\x03"  # still read: the learner deflated whole
SNAPSHOT_MAGIC_V2 = b"SEQDSNP\x02"  # still read: the learner as it is
SNAPSHOT_MAGIC_V1 = b"SEQDSNP\x01"  # still read: statistics all in JSON, the recent code lengths as numbers
_KNOWN = (SNAPSHOT_MAGIC_V1, SNAPSHOT_MAGIC_V2, SNAPSHOT_MAGIC_V3, SNAPSHOT_MAGIC)
_SNAP_HEAD = struct.Struct("<8sQII")  # magic, stream position, length and crc32 of the statistics
_STATS_HEAD = struct.Struct("<I")  # v2 statistics: length of their JSON, the JSON, then the recent code lengths


def head(position: int, code_bits: float, recent: np.ndarray, batches=()) -> bytes:
    """The header and statistics of a snapshot at ``position``; the learner follows, as
    :func:`~.sparse.encoded` gives it.  ``batches``: the recent batch ids (:mod:`.batch_ids`) of batches
    the snapshot holds, (id, start, end) each."""
    # the recent code lengths as raw float64: as JSON numbers they took about 4 ms with the GIL held
    info = {"code_bits": code_bits, "recent": len(recent)}
    if batches:  # (seqd 0.18 on; earlier readers ignore the key)
        info["batches"] = [[batch.hex(), start, end] for batch, start, end in batches]
    info = json.dumps(info).encode()
    extra = _STATS_HEAD.pack(len(info)) + info + recent.astype("<f8").tobytes()
    return _SNAP_HEAD.pack(SNAPSHOT_MAGIC, position, len(extra), zlib.crc32(extra, position)) + extra


def read(snap: Path, recent_length: int, max_learner_bytes: int | None = None, learner_type: type = OnlineLearner,
         history=None) -> tuple[int, float, np.ndarray, object, list]:
    """A snapshot of any version: its position, cumulative code length, the ``recent_length`` recent code
    lengths, the learner, of ``learner_type`` (the stream's model, ``core/learners.py``), and the batch ids it
    kept (see :func:`head`).  ValueError naming the file when it is cut short, damaged, of another version,
    or when its learner would inflate past ``max_learner_bytes``.  The learner is read and inflated a piece at
    a time, straight into its arrays (its ``from_stream``; versions 3 and 4): the file is never in memory whole.
    A learner whose history its snapshot leaves out reads it from ``history`` (the stream's
    :class:`~.history_file.HistoryFile`)."""
    with open(snap, "rb") as f:
        return _read(f, os.fstat(f.fileno()).st_size, snap, recent_length, max_learner_bytes, learner_type, history)


def read_bytes(data: bytes, label: str, recent_length: int, max_learner_bytes: int | None = None,
               learner_type: type = OnlineLearner) -> tuple[int, float, np.ndarray, object, list]:
    """:func:`read` of a snapshot held in memory (a cluster's, from its object store), whole: its learner
    holds its own history.  ``label`` names it in the errors."""
    return _read(io.BytesIO(data), len(data), label, recent_length, max_learner_bytes, learner_type, None)


def _read(f, file_size: int, snap, recent_length: int, max_learner_bytes: int | None, learner_type: type,
          history) -> tuple[int, float, np.ndarray, object, list]:
    head = f.read(_SNAP_HEAD.size)
    if len(head) < _SNAP_HEAD.size:
        raise ValueError(f"{snap}: cut short")
    magic, position, size, crc = _SNAP_HEAD.unpack_from(head)
    if magic[:7] == SNAPSHOT_MAGIC[:7] and magic not in _KNOWN:
        raise ValueError(f"{snap}: a stream snapshot of version {magic[7]}; this daemon reads versions "
                         f"{', '.join(str(m[7]) for m in _KNOWN[:-1])} and {SNAPSHOT_MAGIC[7]}")
    if magic not in _KNOWN or size > file_size - _SNAP_HEAD.size:
        raise ValueError(f"{snap}: not a seqd stream snapshot, or damaged")
    stats = f.read(size)
    if len(stats) < size or zlib.crc32(stats, position) != crc:
        raise ValueError(f"{snap}: not a seqd stream snapshot, or damaged")
    code_bits, recent, batches = _read_statistics(magic, stats, snap, recent_length)
    if magic in (SNAPSHOT_MAGIC_V1, SNAPSHOT_MAGIC_V2):
        data = f.read()  # (a GLNN's learner, the only model then: it may keep its history elsewhere today)
        return position, code_bits, recent, learner_type.from_bytes(data, history), batches
    try:
        reader = (SparseReader(f, max_learner_bytes) if magic == SNAPSHOT_MAGIC
                  else Inflater(f, max_learner_bytes))
        if learner_type is not OnlineLearner and magic != SNAPSHOT_MAGIC:  # seqd 0.14 on: version 4 only
            raise ValueError(f"version {magic[7]} cannot hold a {learner_type.__name__}")
        learner = learner_type.from_stream(reader.read_into, reader.read, max_learner_bytes, history)
        if not reader.finished:
            raise ValueError("its learner is cut short, or followed by other bytes")
    except zlib.error as exc:
        raise ValueError(f"{snap}: its learner is damaged ({exc})") from None
    except ValueError as exc:
        raise ValueError(f"{snap}: {exc}") from None
    return position, code_bits, recent, learner, batches


def _read_statistics(magic: bytes, stats: bytes, snap: Path, recent_length: int) -> tuple[float, np.ndarray, list]:
    """A snapshot's cumulative code length, recent code lengths and batch ids, from any version's layout."""
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
        batches = [(bytes.fromhex(batch), start, end) for batch, start, end in info.get("batches", [])]
        if not all(0 < len(b) <= wal.MAX_BATCH_ID and type(s) is int and type(e) is int and 0 <= s < e
                   for b, s, e in batches):
            raise ValueError("a batch id or its positions are not what seqd writes")
        return float(info["code_bits"]), recent, batches
    except (ValueError, KeyError, TypeError, struct.error) as exc:
        raise ValueError(f"{snap}: its statistics are malformed ({exc})") from None


def write_durably(path: Path, *parts) -> Path:
    """Write the buffers one after the other to a new file at ``path``, and fsync it.  A part may also be an
    iterable of buffers (:func:`~.sparse.encoded`'s pieces), written as they come."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, wal.PRIVATE_FILE)
    try:
        offset = 0
        for part in parts:
            for piece in ([part] if isinstance(part, (bytes, bytearray, memoryview)) else part):
                offset = wal.write_all(fd, piece, offset)
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
