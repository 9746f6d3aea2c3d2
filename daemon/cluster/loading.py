"""Loading a replica's streams (``replica.py``): from a snapshot and the log records after it, each checked by
the chain and queued to be learned as the first owner learned it (the same bits); a stream whose snapshot
covers its whole log taken up asleep (``residency.py``), its snapshot read back only when it wakes."""

from __future__ import annotations

import asyncio
from concurrent.futures import Executor

from ...core.learners import learner_for, model_of
from .. import snapshot_file, stream_meta
from ..learner_store import RECENT, learner_bound
from .engine import LOG_STREAM
from .log import StreamLog, StreamWriter, Tail
from .ownership import Lease
from .records import BATCH, CREATE, DROP, Chain, digest
from .snapshots import Pointer, Snapshots
from .stream import ClusterStream, symbols_of


WARM_TEXT = b"GET /index.html 200 0.012 user=alice\nPOST /api/items 201 0.034 user=bob\n" * 8


def warm_kernels(presets) -> None:
    """A learner of each preset built and fed a little (on a worker thread): its kernels loaded from the cache,
    or compiled on a first run, before the replica takes any partition over."""
    import numpy as np

    from ..models import make_config

    for preset in presets:
        learner = learner_for(make_config(preset, None))
        learner.learn(np.frombuffer(WARM_TEXT, dtype=np.uint8))
        learner.predict_proba_one()


class Loader:
    """Streams read from the engine: their snapshots and logs, learned on ``pool``."""

    def __init__(self, log: StreamLog, snapshots: Snapshots, pool: Executor, max_state_bytes: int):
        self.log, self.snapshots, self.pool, self.max_state_bytes = log, snapshots, pool, max_state_bytes
        self.records_read = 0  # log records read after a snapshot (or from a log's start), in all

    async def load(self, name: str, subject: str, lease: Lease) -> ClusterStream | None:
        """A stream from its snapshot and log, or None if it was dropped (its remains are removed).

        The records after the snapshot are read and checked by the chain here, but not learned: they are the
        stream's queue (``ClusterStream.queue_batch``), learned in order by the replica once it serves the
        stream, the same bits as its last owner's.  So a stream is served, its publishes appended and
        acknowledged, as soon as its log is read, however much of it is left to learn."""
        pointer = await self.snapshots.latest(name)
        learner, created, config, position, code_bits, recent, batches = None, 0.0, None, 0, 0.0, None, []
        if pointer is not None:
            _, created, config = stream_meta.parse(pointer.meta, f"the snapshot pointer of {name}", name,
                                                   self.max_state_bytes)
            tail = Tail(pointer.seq, pointer.digest, pointer.position)
            last = await self.log.last(subject)
            if last is not None and last[0] == pointer.seq:  # nothing after the snapshot: taken up asleep
                writer = StreamWriter(self.log, name, subject, tail, lease.token)
                return ClusterStream.asleep_at(name, created, config, writer, pointer.position, pointer.seq)
            position, code_bits, recent, learner, batches = await self.read_snapshot(name, pointer, config)
            chain, after = Chain(start=pointer.chain_start), pointer.seq
        else:
            chain, after, tail = Chain(), 0, None
        learned, pending = tail, []  # where the learner stands; the batches after it, with the tail after each
        batch_ids = list(batches)
        async for seq, record in self.log.records(subject, after, chain):
            if record.kind == CREATE:
                _, created, config = stream_meta.parse(record.body, f"the log of {name}", name,
                                                       self.max_state_bytes)
                learner = learner_for(config)
            elif record.kind == DROP:
                await self.remove(name, subject)
                return None
            tail = Tail(seq, digest(record.encode()), record.end)
            if record.kind == BATCH:
                pending.append((symbols_of(record.body, record.itemsize), tail))
                if record.batch_id:
                    batch_ids.append((record.batch_id, record.position, record.end))
            elif not pending:  # (the creation: the learner stands after it)
                learned = tail
            self.records_read += 1
        if learner is None:
            return None
        writer = StreamWriter(self.log, name, subject, tail, lease.token)
        stream = ClusterStream(name, created, config, writer, learner, position, code_bits, recent, batch_ids,
                               snapshot_seq=pointer.seq if pointer is not None else 0)
        stream.learned_tail = learned
        for symbols, after_it in pending:
            stream.queue_batch(symbols, after_it)
        return stream

    async def read_snapshot(self, name: str, pointer: Pointer, config):
        """(position, code_bits, recent, learner, batches) of the snapshot ``pointer`` names."""
        data = await self.snapshots.read(name, pointer)
        read = await asyncio.get_running_loop().run_in_executor(
            self.pool, lambda: snapshot_file.read_bytes(data, f"snapshot {name}/{pointer.seq}", RECENT,
                                                        learner_bound(config), model_of(config).learner))
        position, learner = read[0], read[3]
        if learner.config != config or position != pointer.position:
            raise ValueError(f"the snapshot of {name} does not match its pointer")
        return read

    async def read(self, stream: ClusterStream) -> None:
        """A hibernated stream's learner back from its snapshot (``Residency.wake``)."""
        pointer = await self.snapshots.latest(stream.name)
        if pointer is None or pointer.seq != stream.snapshot_seq:
            raise ValueError(f"stream {stream.name}: its snapshot pointer moved while it slept here")
        position, code_bits, recent, learner, batches = await self.read_snapshot(stream.name, pointer,
                                                                                  stream.config)
        stream.woken(learner, position, code_bits, recent, batches)

    async def remove(self, name: str, subject: str) -> None:
        await self.snapshots.forget(name)
        await self.log.js.purge_stream(LOG_STREAM, subject=subject)
