"""The records of a stream's log on JetStream, each chained to the one before it.

A record is a msgpack array::

    [version, kind, position, count, itemsize, batch_id, previous, body]

* ``version``: 1.
* ``kind``: :data:`CREATE` (the stream's ``stream.json``, its model, in
  ``body``: always the subject's first record), :data:`BATCH` (``count``
  symbols accepted at ``position``, ``itemsize`` bytes each, little-endian,
  in ``body``; ``batch_id`` the publisher's id or empty) or :data:`DROP`
  (the stream was dropped; nothing may follow).
* ``position``: symbols accepted before this record; a batch's is the one
  before it plus its count, so positions are contiguous (a replay checks).
* ``previous``: the digest of the record before it on the subject (16 zero
  bytes for the first): ``blake2b(that record's encoded bytes, digest_size
  = 16)``.  A replay recomputes each digest and compares, so a record missing,
  reordered or altered anywhere in the chain is found at the first record
  after it.  After compaction the chain starts at the kept record, whose
  digest the snapshot's pointer holds (``snapshots.Pointer``).

A decoder never trusts a record: :func:`decode` bounds every field and says
what is wrong with one that is not a record.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import msgpack

from ..wal import MAX_BATCH_ID  # the bound both kinds of log hold a batch id to

VERSION = 1
CREATE, BATCH, DROP = 1, 2, 3
KINDS = (CREATE, BATCH, DROP)
NO_DIGEST = bytes(16)
MAX_RECORD = 64 << 20  # bytes: far above a batch's limit (the protocol's), below anything absurd


class RecordError(ValueError):
    """A log message that is not a record seqd wrote, or one out of its chain."""


@dataclass(frozen=True)
class Record:
    kind: int
    position: int
    count: int = 0
    itemsize: int = 1
    batch_id: bytes = b""
    previous: bytes = NO_DIGEST
    body: bytes = b""

    def encode(self) -> bytes:
        return msgpack.packb([VERSION, self.kind, self.position, self.count, self.itemsize, self.batch_id,
                              self.previous, self.body], use_bin_type=True)

    @property
    def end(self) -> int:
        """The position after this record."""
        return self.position + self.count


def digest(encoded: bytes) -> bytes:
    """The digest a record's successor names as its ``previous``."""
    return hashlib.blake2b(encoded, digest_size=16).digest()


def decode(data: bytes) -> Record:
    """The record ``data`` holds, every field checked; :class:`RecordError` if it holds none."""
    if len(data) > MAX_RECORD:
        raise RecordError(f"a record of {len(data):,} bytes is larger than {MAX_RECORD:,}")
    try:
        fields = msgpack.unpackb(data, raw=False, strict_map_key=True, max_bin_len=MAX_RECORD,
                                 max_str_len=256, max_array_len=16, max_map_len=0)
    except Exception as e:
        raise RecordError(f"not a msgpack record: {e}") from None
    if not isinstance(fields, list) or len(fields) != 8:
        raise RecordError("a record is an array of 8 fields")
    version, kind, position, count, itemsize, batch_id, previous, body = fields
    if version != VERSION:
        raise RecordError(f"record version {version!r}: this seqd reads version {VERSION}")
    if kind not in KINDS:
        raise RecordError(f"unknown record kind {kind!r}")
    for label, value in (("position", position), ("count", count)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise RecordError(f"a record's {label} must be a non-negative integer, got {value!r}")
    if itemsize not in (1, 2):
        raise RecordError(f"a record's symbols take 1 or 2 bytes, got {itemsize!r}")
    if not isinstance(batch_id, bytes) or len(batch_id) > MAX_BATCH_ID:
        raise RecordError(f"a batch id is at most {MAX_BATCH_ID} bytes")
    if not isinstance(previous, bytes) or len(previous) != 16:
        raise RecordError("a record's previous digest is 16 bytes")
    if not isinstance(body, bytes):
        raise RecordError("a record's body is bytes")
    if kind == BATCH and len(body) != count * itemsize:
        raise RecordError(f"a batch of {count} symbols of {itemsize} bytes holds {len(body)} bytes")
    if kind != BATCH and count:
        raise RecordError("only a batch holds symbols")
    return Record(kind, position, count, itemsize, batch_id, previous, body)


class Chain:
    """Checks records one after another: each names the one before it, and positions are contiguous.

    ``start`` is the digest and position the chain goes on from (a snapshot's kept record), or None for a
    subject's first record, which must be the stream's creation."""

    def __init__(self, start: tuple[bytes, int] | None = None):
        self.digest, self.position = start if start is not None else (NO_DIGEST, 0)
        self.first = start is None
        self.dropped = False

    def check(self, encoded: bytes, seq: int) -> Record:
        """The record at sequence ``seq`` (its bytes ``encoded``), checked against the chain and added to it."""
        try:
            record = decode(encoded)
        except RecordError as e:
            raise RecordError(f"log sequence {seq}: {e}") from None
        if record.previous != self.digest:
            raise RecordError(f"log sequence {seq} does not follow the record before it: a record is missing, "
                              "or the log was written by something else")
        if self.dropped:
            raise RecordError(f"log sequence {seq} follows the stream's drop")
        if self.first and record.kind != CREATE:
            raise RecordError(f"log sequence {seq}: a stream's log starts with its creation")
        if not self.first and record.kind == CREATE:
            raise RecordError(f"log sequence {seq}: a second creation")
        if record.position != self.position:
            raise RecordError(f"log sequence {seq} is at position {record.position}, the chain at {self.position}")
        self.first = False
        self.digest = digest(encoded)
        self.position = record.end
        self.dropped = record.kind == DROP
        return record
