"""Loading a replica's streams (``replica.py``): from a snapshot and the log records after it, each checked by
the chain and learned as the first owner learned it (the same bits); a stream whose snapshot covers its whole
log taken up asleep (``residency.py``), its snapshot read back only when it wakes."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor

from ...core.learners import learner_for, model_of
from .. import snapshot_file, stream_meta
from ..learner_store import RECENT, learner_bound
from ..views import recent_after
from .engine import LOG_STREAM
from .log import StreamLog, StreamWriter, Tail
from .ownership import Lease
from .records import BATCH, CREATE, DROP, Chain, RecordError, digest
from .snapshots import Pointer, Snapshots
from .stream import ClusterStream, symbols_of


log = logging.getLogger("seqd")

LOAD_ATTEMPTS = 3  # reads of a stream whose snapshot pointer moves meanwhile (a late snapshot of its last owner)
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
    """Streams read from the engine: their snapshots (decoded on ``pool``) and logs (learned on ``learning``)."""

    def __init__(self, log: StreamLog, snapshots: Snapshots, pool: Executor, max_state_bytes: int,
                 learning: Executor | None = None):
        self.log, self.snapshots, self.pool, self.max_state_bytes = log, snapshots, pool, max_state_bytes
        self.learning = learning or pool  # where the records after a snapshot are learned

    async def load(self, name: str, subject: str, lease: Lease) -> ClusterStream | None:
        """A stream from its snapshot and log, or None if it was dropped (its remains are removed).

        The records after the snapshot are read, each checked by the chain, and learned as the first owner
        learned them (the same bits).

        A snapshot the last owner finished late (after its hand-off's deadline, or after a pause) may move the
        pointer and compact the log below it while this load reads the records: the chain then breaks where
        records went missing, and the load starts again from the newer snapshot (:data:`LOAD_ATTEMPTS`)."""
        for attempt in range(LOAD_ATTEMPTS):
            pointer = await self.snapshots.latest(name)
            try:
                return await self._load(name, subject, lease, pointer)
            except RecordError:
                newer = await self.snapshots.latest(name)
                if attempt + 1 == LOAD_ATTEMPTS or newer is None or (pointer is not None and newer.seq <= pointer.seq):
                    raise  # not the pointer moving: a log that is broken
                log.info("stream %s: its snapshot moved while its log was read (to record %d): read again from it",
                         name, newer.seq)

    async def _load(self, name: str, subject: str, lease: Lease, pointer: Pointer | None) -> ClusterStream | None:
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
        loop, replayed = asyncio.get_running_loop(), 0
        batch_ids = list(batches)
        async for seq, record in self.log.records(subject, after, chain):
            if record.kind == CREATE:
                _, created, config = stream_meta.parse(record.body, f"the log of {name}", name,
                                                       self.max_state_bytes)
                learner = learner_for(config)
            elif record.kind == BATCH:
                symbols = symbols_of(record.body, record.itemsize)
                bits = await loop.run_in_executor(self.learning, learner.learn, symbols)
                code_bits += float(bits.sum())
                recent = recent_after(recent, bits)
                if record.batch_id:
                    batch_ids.append((record.batch_id, record.position, record.end))
            elif record.kind == DROP:
                await self.remove(name, subject)
                return None
            tail = Tail(seq, digest(record.encode()), record.end)
            replayed += 1
        if learner is None:
            return None
        writer = StreamWriter(self.log, name, subject, tail, lease.token)
        return ClusterStream(name, created, config, writer, learner, learner.stats["symbols"], code_bits, recent,
                             batch_ids, snapshot_seq=pointer.seq if pointer is not None else 0, replayed=replayed)

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
