"""A stream's snapshots in the cluster: objects in JetStream's object store, behind a pointer that only moves
forward.

A snapshot of stream ``name`` taken after the record at log sequence ``seq``
is the object ``<name>/<seq>`` of ``seqd-snapshots``: the learner's bytes as
the single-machine daemon writes them (``daemon/snapshot_file.py``'s
format).  The key ``name`` of ``seqd-pointers`` then points at it
(:class:`Pointer`), moved by compare-and-set and only ever to a larger
sequence: a stale owner finishing an old snapshot late cannot move it back.
The pointer also carries what a new owner needs to go on: the digest of the
record at ``seq`` (the log's chain continues from it), the position after
it, and the stream's ``stream.json`` (the log's first record, its creation,
is compacted away in time).

Once the pointer has moved, the log below ``seq`` can be compacted
(``log.StreamLog.compact``) and older objects deleted.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgpack

from .engine import POINTERS_BUCKET, Engine, entry


@dataclass(frozen=True)
class Pointer:
    seq: int  # the log record the snapshot was taken after
    digest: bytes  # that record's digest (``records.digest``)
    position: int  # symbols learned
    meta: bytes  # the stream's stream.json
    size: int  # bytes of the snapshot

    @property
    def chain_start(self) -> tuple[bytes, int]:
        """Where the log's chain goes on from (``records.Chain``)."""
        return self.digest, self.position

    def encode(self) -> bytes:
        return msgpack.packb([1, self.seq, self.digest, self.position, self.meta, self.size], use_bin_type=True)

    @classmethod
    def decode(cls, data: bytes) -> "Pointer":
        try:
            version, seq, digest, position, meta, size = msgpack.unpackb(data, raw=False)
        except Exception as e:
            raise ValueError(f"not a snapshot pointer: {e}") from None
        if version != 1 or not all(isinstance(v, int) for v in (seq, position, size)) \
                or not isinstance(digest, bytes) or not isinstance(meta, bytes):
            raise ValueError("not a snapshot pointer of version 1")
        return cls(seq, digest, position, meta, size)


def object_name(name: str, seq: int) -> str:
    return f"{name}/{seq:020d}"


class Snapshots:
    """The streams' snapshots and their pointers."""

    def __init__(self, engine: Engine):
        self.engine = engine

    async def _open(self):
        return await self.engine.kv(POINTERS_BUCKET), await self.engine.snapshot_store()

    async def latest(self, name: str) -> Pointer | None:
        """The stream's latest snapshot's pointer, or None if it has none."""
        found = await entry(await self.engine.kv(POINTERS_BUCKET), name)
        return None if found is None else Pointer.decode(found.value)

    async def read(self, name: str, pointer: Pointer) -> bytes:
        """The snapshot ``pointer`` names."""
        store = await self.engine.snapshot_store()
        data = (await store.get(object_name(name, pointer.seq))).data or b""
        if len(data) != pointer.size:
            raise ValueError(f"snapshot {object_name(name, pointer.seq)} holds {len(data):,} bytes, its pointer "
                             f"says {pointer.size:,}")
        return data

    async def put(self, name: str, pointer: Pointer, data: bytes) -> bool:
        """Store a snapshot and move the pointer to it; False (and the object removed) if the pointer is at
        ``pointer.seq`` or beyond already.  The object the pointer left is deleted."""
        from nats.js.errors import KeyWrongLastSequenceError

        if len(data) != pointer.size:
            raise ValueError("a pointer's size is its snapshot's")
        kv, store = await self._open()
        await store.put(object_name(name, pointer.seq), data)
        while True:
            found = await entry(kv, name)
            current = None if found is None else Pointer.decode(found.value)
            if current is not None and current.seq >= pointer.seq:
                if current.seq > pointer.seq:  # (at the same sequence the object is the pointer's own)
                    await store.delete(object_name(name, pointer.seq))
                return False
            try:
                if found is None:
                    await kv.create(name, pointer.encode())
                else:
                    await kv.update(name, pointer.encode(), last=found.revision)
            except KeyWrongLastSequenceError:
                continue  # moved meanwhile: look again
            break
        if current is not None:
            await self._delete(store, name, current)
        return True

    async def forget(self, name: str) -> None:
        """A dropped stream's pointer and snapshot."""
        from nats.js.errors import KeyDeletedError, KeyNotFoundError

        kv, store = await self._open()
        pointer = await self.latest(name)
        try:
            await kv.purge(name)
        except (KeyNotFoundError, KeyDeletedError):
            pass
        if pointer is not None:
            await self._delete(store, name, pointer)

    @staticmethod
    async def _delete(store, name: str, pointer: Pointer) -> None:
        """The object a pointer named, once nothing points at it."""
        try:
            await store.delete(object_name(name, pointer.seq))
        except Exception:
            pass  # gone already; an orphan costs space, not correctness
