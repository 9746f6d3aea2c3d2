"""A stream's log on JetStream: fenced, deduplicated, chained appends; replays that check every record.

Every stream's log is one subject of the ``SEQD_LOG`` stream
(``placement.subject_of``).  An append publishes one record
(``records.py``) with two headers:

* ``Nats-Expected-Last-Subject-Sequence``: the subject's last sequence as
  the writer knows it.  JetStream refuses the append (error 10071) if any
  other record came in since, so a replica that lost its lease and does not
  know it yet cannot add to a log another replica now writes: it gets
  :class:`Fenced` and must stop serving the stream.
* ``Nats-Msg-Id``: ``<stream>:<writer token>:<sequence it follows>``, the
  writer's token being its lease's revision (``ownership.Lease.token``).  JetStream
  checks the id before the condition, so an append retried after a lost
  acknowledgement settles as the first one (``duplicate``), and two owners
  never share an id: a stale owner's retry is fenced, not mistaken for the
  new owner's record.  Past the duplicate window (two minutes) a retry is
  fenced too, and :meth:`StreamLog.append` then reads the subject's last
  record: if it is this very record, the append had landed.

Compaction (:meth:`StreamLog.compact`) removes the records below a
snapshot's and keeps the record at it: purging a subject's last record would
reset the subject's last sequence to 0, after which every fenced append fails.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import AsyncIterator

from .engine import LOG_STREAM, WRONG_LAST_SEQUENCE, Engine, transient
from .placement import partition_subjects
from .records import BATCH, CREATE, DROP, NO_DIGEST, Chain, Record, digest

EXPECTED_LAST = "Nats-Expected-Last-Subject-Sequence"
MSG_ID = "Nats-Msg-Id"
APPEND_ATTEMPT = 2.0  # seconds an append waits for its acknowledgement before it is sent again (same id)
REPLAY_BATCH = 512  # records a replay asks for at a time
REPLAY_WAIT = 5.0  # seconds a replay waits for the next records before the engine is taken to fail
REPLAY_RETRY_FOR = 30.0  # seconds a replay keeps trying while the engine cannot answer
REPLAY_IDLE = 30.0  # seconds after which JetStream removes a replay's consumer its reader left behind


class Fenced(Exception):
    """Another writer appended to the stream's log since this one read its tail: this one must stop."""


@dataclass(frozen=True)
class Tail:
    """Where a stream's log ends: its last record's sequence, that record's digest, and the position after it."""

    seq: int
    digest: bytes
    position: int


class StreamLog:
    """The streams' logs of one cluster."""

    def __init__(self, engine: Engine):
        self.js = engine.js

    async def last(self, subject: str) -> tuple[int, bytes] | None:
        """The subject's last record, (sequence, bytes), or None if it has none."""
        from nats.js.errors import NotFoundError

        try:
            msg = await self.js.get_msg(LOG_STREAM, subject=subject)
        except NotFoundError:
            return None
        return msg.seq, msg.data or b""

    async def append(self, subject: str, encoded: bytes, expected: int, msg_id: str, *,
                     retry_for: float = 30.0) -> int:
        """Append one record after sequence ``expected`` (0: the subject has none); returns its sequence.
        :class:`Fenced` if another record came first.

        While the engine cannot answer (a node failing over, the connection re-established) the same
        message is sent again, with the same id, for up to ``retry_for`` seconds; then the last error is
        raised and nothing may be assumed about the append (the caller must not acknowledge it)."""
        from nats.js.errors import APIError

        deadline = asyncio.get_running_loop().time() + retry_for
        delay = 0.05
        while True:
            try:
                ack = await self.js.publish(subject, encoded, stream=LOG_STREAM, timeout=APPEND_ATTEMPT,
                                            headers={EXPECTED_LAST: str(expected), MSG_ID: msg_id})
                return ack.seq
            except APIError as e:
                if e.err_code == WRONG_LAST_SEQUENCE:
                    last = await self.last(subject)
                    if last is not None and last[1] == encoded:  # it had landed: its acknowledgement was lost
                        return last[0]
                    raise Fenced(f"{subject}: another writer appended after sequence {expected}") from None
                if not transient(e) or asyncio.get_running_loop().time() > deadline:
                    raise
            except Exception as e:
                if not transient(e) or asyncio.get_running_loop().time() > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def records(self, subject: str, after: int, chain: Chain) -> AsyncIterator[tuple[int, Record]]:
        """The subject's records after sequence ``after`` up to its last, each checked by ``chain``
        (``RecordError`` at the first that does not follow).

        They come through a consumer of their own (in memory, on one node, removed at the end or
        :data:`REPLAY_IDLE` seconds after its reader went away), :data:`REPLAY_BATCH` records a request: a
        take-over replays a partition's streams in a few requests each, not one per record.  While the engine
        cannot answer (a node failing over) a new consumer goes on from the next record, for up to
        :data:`REPLAY_RETRY_FOR` seconds."""
        import uuid

        from nats.js import api

        last = await self.last(subject)
        if last is None or last[0] <= after:
            return
        end, seq, delay = last[0], after, 0.05
        deadline = asyncio.get_running_loop().time() + REPLAY_RETRY_FOR
        while seq < end:
            name = f"seqd-replay-{uuid.uuid4().hex}"
            try:
                await self.js.add_consumer(LOG_STREAM, config=api.ConsumerConfig(
                    name=name, filter_subject=subject, deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE,
                    opt_start_seq=seq + 1, ack_policy=api.AckPolicy.NONE, mem_storage=True, num_replicas=1,
                    inactive_threshold=REPLAY_IDLE))
                reader = await self.js.pull_subscribe_bind(consumer=name, stream=LOG_STREAM)
                while seq < end:
                    for msg in await reader.fetch(REPLAY_BATCH, timeout=REPLAY_WAIT):
                        seq = msg.metadata.sequence.stream
                        yield seq, chain.check(msg.data or b"", seq)
                await reader.unsubscribe()
            except Exception as e:  # the engine failing over: a new consumer from the next record
                if not transient(e) or asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
            finally:
                try:
                    await self.js.delete_consumer(LOG_STREAM, name)
                except Exception:
                    pass  # it goes by itself once idle

    async def compact(self, subject: str, keep: int) -> None:
        """Remove the subject's records below sequence ``keep``, keeping the record at ``keep`` and after."""
        await self.js.purge_stream(LOG_STREAM, subject=subject, seq=keep)

    async def subjects(self, partition: int) -> list[str]:
        """The subjects of the streams in ``partition`` that have a log."""
        info = await self.js.stream_info(LOG_STREAM, subjects_filter=partition_subjects(partition))
        return sorted((info.state.subjects or {}).keys())


class StreamWriter:
    """The one writer of a stream's log: its tail, and the appends that move it (each fenced, deduplicated and
    chained).  ``token`` is the writer's lease revision, which makes its message ids its own."""

    def __init__(self, log: StreamLog, name: str, subject: str, tail: Tail | None, token: int):
        self.log, self.name, self.subject, self.token = log, name, subject, token
        self.tail = tail  # None: the log has no record yet

    @property
    def position(self) -> int:
        return self.tail.position if self.tail is not None else 0

    async def _append(self, record: Record) -> Tail:
        encoded = record.encode()
        expected = self.tail.seq if self.tail is not None else 0
        seq = await self.log.append(self.subject, encoded, expected, f"{self.name}:{self.token}:{expected}")
        self.tail = Tail(seq, digest(encoded), record.end)
        return self.tail

    def _previous(self) -> bytes:
        return self.tail.digest if self.tail is not None else NO_DIGEST

    async def create(self, meta: bytes) -> Tail:
        """The log's first record: the stream's ``stream.json``."""
        if self.tail is not None:
            raise ValueError(f"stream {self.name!r} already has a log")
        return await self._append(Record(CREATE, 0, previous=self._previous(), body=meta))

    async def batch(self, body: bytes, count: int, itemsize: int, batch_id: bytes = b"") -> Tail:
        """A batch of ``count`` symbols at the log's position."""
        return await self._append(Record(BATCH, self.position, count, itemsize, batch_id, self._previous(), body))

    async def drop(self) -> Tail:
        return await self._append(Record(DROP, self.position, previous=self._previous()))
