"""A replica of a seqd cluster: the streams of the partitions it holds leases for, served over NATS.

For each partition p its keeper (:mod:`.keeper`) gives it, the replica

1. loads every stream of p (``on_gain``): the snapshot its pointer names,
   then the log's records after it, each checked by the chain, learned as
   the first owner learned them (the same bits);
2. answers ``seqd.req.<p>`` (``clients/cluster.py``): a publish is appended
   to the stream's log (fenced by the lease's token, deduplicated by the
   message id) and acknowledged once JetStream has it, then learned; a
   batch id the stream has seen, here or from the log, is acknowledged
   again and not appended;
3. on a planned hand-off (``on_lose(p, planned=True)``), still serving,
   snapshots each stream's learner as it stands, if it learned anything
   since its last snapshot (and compacts the log below it), within
   :data:`HAND_OFF_SNAPSHOTS` seconds in all; then stops answering and lets
   the requests in flight finish, and the keeper releases the lease and
   tells the others.  The next owner replays the records after the
   snapshots.  On
   a lost lease it forgets p's streams at once (what it had not snapshotted
   is in the log).

A gained partition's streams load :data:`LOADS_AT_ONCE` at a time (their
reads of the engine overlap; their snapshots are decoded on a thread of
their own, their replays take turns on the workers).

A request for a partition this replica does not hold, or no longer holds
by its lease's deadline, is not answered: the owner answers, or nobody does
for a moment and the client sends it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from dataclasses import dataclass, field

import numpy as np
from prometheus_client import CollectorRegistry

from ... import __version__
from ...clients import cluster as C
from ...clients import protocol as P
from ...clients.protocol import Reply, Request
from ...core.learners import learner_for
from .. import stream_meta, wal
from ..config import ServeConfig
from ..health import WatchedPool
from ..learner_store import resident_bytes
from ..models import config_dict, make_config
from ..requests import prediction
from .engine import ClusterSettings, Engine, connect
from .keeper import PartitionKeeper
from .loading import Loader, warm_kernels
from .log import Fenced, StreamLog, StreamWriter
from .ownership import Lease
from .placement import name_of, partition_of, subject_of
from .residency import Residency
from .snapshots import Pointer, Snapshots
from .stream import ClusterStream, symbols_of
from .telemetry import ReplicaTelemetry, server_stats, stream_stats

log = logging.getLogger("seqd")

LEFT_SECONDS = 2.0  # a request for a partition that left this long ago or less is answered "busy, send again"
LOADS_AT_ONCE = 8  # a gained partition's streams loading at once: their requests to the engine overlap
HAND_OFF_SNAPSHOTS = 5.0  # seconds a planned hand-off gives its streams' snapshots before it goes on without
HAND_OFF_CATCH_UP = 3.0  # of which its learners may spend this long learning what was accepted before it
LEARN_RETRY = 1.0  # seconds before a learner that could not be read back is tried again (doubling to a minute)


@dataclass
class Held:
    """A partition this replica serves: the lease it was gained under (renewals are the keeper's), its streams,
    subscription and requests in flight."""

    lease: Lease
    streams: dict[str, ClusterStream] = field(default_factory=dict)
    subscription: object = None
    inflight: set = field(default_factory=set)


class Replica:
    """One replica: :meth:`run` until the stop event is set, then a planned departure."""

    def __init__(self, config: ServeConfig, settings: ClusterSettings, member: str | None = None):
        self.config, self.settings = config, settings
        self.member = member or f"{socket.gethostname().split('.')[0]}-{os.getpid()}"
        self.limits = P.Limits(max_message_bytes=config.max_message_bytes, max_batch_symbols=config.max_batch_symbols)
        self.pool = WatchedPool(max_workers=config.worker_count, thread_name_prefix="seqd-worker")
        # snapshots read back (a load, a wake) on a thread of their own, not behind other streams' batches
        self.reading = WatchedPool(max_workers=1, thread_name_prefix="seqd-read")
        self.held: dict[int, Held] = {}
        self.left: dict[int, float] = {}  # when each partition given up last left (monotonic)
        self.loading: dict[int, asyncio.Task] = {}  # partitions gained whose streams are loading
        self.started = time.time()
        self.engine: Engine | None = None
        self.keeper: PartitionKeeper | None = None
        self.residency = Residency(config.max_state_bytes, config.hibernate_after_seconds, self._snapshot,
                                   lambda stream: self.loader.read(stream))
        self.registry = CollectorRegistry()
        self.telemetry = ReplicaTelemetry(self.registry, self)

    # -- running ---------------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        metrics = None
        if self.config.metrics_port:  # first: a port taken stops the replica before it joins (/readyz: starting)
            from ..metrics import start_metrics_server
            metrics, _ = start_metrics_server(self.registry, self.config.metrics_host, self.config.metrics_port,
                                              self.telemetry)
        if self.config.cluster_warm:  # before joining: a take-over must not wait for kernels to compile or load
            t0 = time.monotonic()
            await asyncio.get_running_loop().run_in_executor(self.pool, warm_kernels, self.config.cluster_warm)
            log.info("replica %s: kernels of %s ready in %.1f s", self.member, ", ".join(self.config.cluster_warm),
                     time.monotonic() - t0)
        self.engine = await connect(self.settings, name=f"seqd-{self.member}")
        self.log, self.snapshots = StreamLog(self.engine), Snapshots(self.engine)
        self.loader = Loader(self.log, self.snapshots, self.reading, self.config.max_state_bytes, self.pool)
        nc = self.engine.nc
        self.keeper = PartitionKeeper(self.engine, self.member, {"version": __version__},
                                      on_gain=self.gain, on_lose=self.lose, on_released=self._released)
        control = [await nc.subscribe(C.ANY, queue=C.QUEUE_GROUP, cb=self._on_control),
                   await nc.subscribe(C.STATS, cb=self._on_control),
                   await nc.subscribe(C.KICK, cb=self._kick)]
        log.info("replica %s joining the cluster at %s (%d partitions)", self.member,
                 ", ".join(self.settings.servers), self.settings.partitions)
        self.telemetry.health.serving()
        keeping = asyncio.create_task(self.keeper.run(stop))
        ticking, beating = asyncio.create_task(self._tick()), asyncio.create_task(self._beat())
        await stop.wait()
        ticking.cancel()
        self.telemetry.health.stopping()
        await keeping
        await self.keeper.leave()
        if metrics is not None:
            metrics.shutdown()
        await nc.publish(C.KICK, b"")
        for sub in control:
            await sub.unsubscribe()
        await self.engine.close()
        beating.cancel()
        self.pool.shutdown()
        self.reading.shutdown()
        log.info("replica %s left the cluster", self.member)

    async def _beat(self) -> None:
        """The loop's turn for ``/healthz`` and the watchdog, four times a second, in a task that waits on nothing."""
        while True:
            self.telemetry.health.turned()
            await asyncio.sleep(0.25)

    async def _tick(self) -> None:
        """Every second: the snapshots due (``[durability]``'s ``snapshot_interval_symbols`` learned since a
        stream's last, or ``snapshot_interval_seconds`` passed with its learner moved), which bound what a
        take-over learns again after a crash; then the learners idle long enough hibernate."""
        while True:
            now = time.monotonic()
            for held in list(self.held.values()):
                for stream in list(held.streams.values()):
                    if not stream.learned_since_snapshot:
                        continue
                    if (stream.position - stream.snapshot_position >= self.config.snapshot_interval_symbols
                            or now - stream.snapshot_time >= self.config.snapshot_interval_seconds):
                        try:
                            await self._snapshot(stream)
                        except Exception as exc:  # the log holds everything: tried again at the next interval
                            stream.snapshot_time = now
                            log.warning("stream %s: snapshot failed: %s: %s", stream.name, type(exc).__name__, exc)
            await self.residency.idle_for(s for h in list(self.held.values()) for s in h.streams.values())
            await asyncio.sleep(1.0)

    async def _released(self, _partition: int) -> None:
        await self.engine.nc.publish(C.KICK, b"")

    async def _kick(self, _msg) -> None:
        self.keeper.wake()  # a partition was released: a planned move waits for no timer

    # -- partitions moving -------------------------------------------------------------------------
    async def gain(self, partition: int, lease: Lease) -> None:
        """Take the partition up: its streams load in a task of their own, so that the keeper's rounds (every
        lease's renewal) go on while a long replay runs; the partition is served once they are loaded."""
        self.loading[partition] = asyncio.create_task(self._take_up(partition, lease))

    async def _take_up(self, partition: int, lease: Lease) -> None:
        try:
            await self._load_partition(partition, lease)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # given back rather than held unserved; another round or replica tries again
            log.error("replica %s: partition %d could not be taken up: %s: %s", self.member, partition,
                      type(exc).__name__, exc)
            await self.keeper.give_back(partition)  # (lose() does not cancel the task it is called from)
        finally:
            self.loading.pop(partition, None)

    async def _load_partition(self, partition: int, lease: Lease) -> None:
        t0 = time.monotonic()
        held = Held(lease)
        loading = asyncio.Semaphore(LOADS_AT_ONCE)

        async def load(subject: str) -> None:
            async with loading:
                stream = await self.loader.load(name_of(subject), subject, lease)
            if stream is not None:
                held.streams[stream.name] = stream

        await asyncio.gather(*(load(subject) for subject in await self.log.subjects(partition)))
        for stream in held.streams.values():
            self.residency.serve(stream)
        self.held[partition] = held
        await self.residency.make_room(0)
        async def on_message(msg):  # each request in a task of its own: one waiting for the log holds up no other
            asyncio.create_task(self._on_request(partition, msg))

        held.subscription = await self.engine.nc.subscribe(C.request_subject(partition), cb=on_message)
        seconds = time.monotonic() - t0
        self.telemetry.stall.observe(seconds)
        log.info("replica %s serves partition %d: %d stream(s) loaded in %.2f s (%d log records replayed)",
                 self.member, partition, len(held.streams), seconds, sum(s.replayed for s in held.streams.values()))

    async def lose(self, partition: int, planned: bool) -> None:
        loading = self.loading.pop(partition, None)
        if loading is not None and loading is not asyncio.current_task():
            loading.cancel()
            await asyncio.gather(loading, return_exceptions=True)
            log.info("replica %s: partition %d moved while its streams were loading: the load stopped",
                     self.member, partition)
        held = self.held.get(partition)
        if held is None:
            return
        if planned:  # first, while still serving (the lease holds): the next owner learns only what comes after
            await self._snapshot_for_hand_off(partition, held)
        if self.held.get(partition) is not held:  # lost meanwhile (its lease, or a fenced append)
            return
        del self.held[partition]
        self.left[partition] = time.monotonic()
        for stream in held.streams.values():
            self.residency.forget(stream)
        if held.subscription is not None:  # (a request already on its way here goes to _on_request: "busy")
            with contextlib.suppress(Exception):
                await held.subscription.drain()
        others = held.inflight - {asyncio.current_task()}  # (a request that found itself fenced is one)
        if others:
            await asyncio.wait(list(others), timeout=self.settings.request_timeout)
        log.info("replica %s %s partition %d", self.member, "handed off" if planned else "lost", partition)

    async def _snapshot_for_hand_off(self, partition: int, held: Held) -> None:
        """A partition's streams snapshotted before its hand-off, appends going on, in :data:`HAND_OFF_SNAPSHOTS`
        s: the learners first learn what was accepted (:data:`HAND_OFF_CATCH_UP` s at most), so that the next owner
        has little to learn before it serves; what no snapshot holds by the deadline, it learns from the log."""
        async def every():
            await asyncio.gather(*(s.learned_to(s.accepted, HAND_OFF_CATCH_UP) for s in held.streams.values()
                                   if not s.asleep))
            for stream in list(held.streams.values()):
                try:
                    await self._snapshot(stream)
                except Exception as exc:  # the log holds it all: the next owner learns more of it
                    log.warning("stream %s: not snapshotted at hand-off: %s: %s", stream.name,
                                type(exc).__name__, exc)

        try:
            await asyncio.wait_for(every(), HAND_OFF_SNAPSHOTS)
        except asyncio.TimeoutError:
            log.info("replica %s: partition %d's snapshots took over %g s: handed off with what they reached",
                     self.member, partition, HAND_OFF_SNAPSHOTS)

    async def _snapshot(self, stream: ClusterStream) -> int:
        """Snapshot the learner as it stands, between two of its batches, if it has learned past its last
        snapshot, and compact the log below; returns the position snapshotted.  Appends go on meanwhile: the
        batches accepted and not yet learned stay in the log, after the snapshot.  One snapshot at a time per
        stream: two at the same record would write one object twice."""
        async with stream.snapshotting:
            async with stream.stepping:
                if not stream.learned_since_snapshot:
                    return stream.position
                tail = stream.learned_tail
                data = await asyncio.get_running_loop().run_in_executor(self.pool, stream.snapshot_bytes)
            meta = stream_meta.encode(stream.name, stream.created, stream.config)
            pointer = Pointer(tail.seq, tail.digest, tail.position, meta, len(data))
            if await self.snapshots.put(stream.name, pointer, data):
                await self.log.compact(stream.writer.subject, tail.seq)
            stream.snapshot_seq, stream.snapshot_position = tail.seq, tail.position
            stream.snapshot_time = time.monotonic()
            return tail.position

    # -- requests ----------------------------------------------------------------------------------
    async def _on_request(self, partition: int, msg) -> None:
        held = self.held.get(partition)
        if held is None or self.keeper.lease(partition) is None:
            # not ours (any more): the owner answers, or the client sends it again.  One that came just as the
            # partition left is answered "busy": the client sends it again at once, not after its attempt's time
            if msg.reply and time.monotonic() - self.left.get(partition, -LEFT_SECONDS) < LEFT_SECONDS:
                await msg.respond(P.encode_reply(Reply.failure(
                    P.request_id(msg.data), P.BUSY, f"partition {partition} is moving to another replica",
                    retry_after_ms=50)))
            return
        task = asyncio.current_task()
        held.inflight.add(task)
        try:
            try:
                req = P.decode_request(msg.data, self.limits)
                reply = await self._handle(partition, held, req)
            except P.ProtocolError as exc:
                reply = Reply.failure(P.request_id(msg.data), exc.code, exc.message, exc.retry_after_ms)
            except Fenced:
                log.warning("replica %s: partition %d was written by another replica: letting it go", self.member,
                            partition)
                await self.keeper.lose(partition, False)
                return
            except Exception as exc:
                log.exception("replica %s: a request failed", self.member)
                reply = Reply.failure(P.request_id(msg.data), P.INTERNAL, f"{type(exc).__name__}: {exc}")
            if msg.reply:
                await msg.respond(P.encode_reply(reply))
        finally:
            held.inflight.discard(task)

    async def _handle(self, partition: int, held: Held, req: Request) -> Reply:
        if req.stream is None or partition_of(req.stream, self.settings.partitions) != partition:
            raise P.ProtocolError(P.BAD_REQUEST, "this subject serves the streams of its own partition only")
        if req.op == "create" or (req.op == "publish" and req.create and req.stream not in held.streams):
            reply = await self._create(held, req)
            # (a publish that creates goes on if another request created the stream just before it)
            if req.op == "create" or not reply.ok and reply.code != P.STREAM_EXISTS:
                return reply
        stream = held.streams.get(req.stream)
        if stream is None:
            raise P.ProtocolError(P.NO_SUCH_STREAM, f"no stream named {req.stream!r}")
        if req.op == "publish":
            return await self._publish(stream, req)
        if req.op == "predict" and stream.view is None:
            await self.residency.wake(stream)  # taken up asleep: its snapshot read on its first prediction
        if req.op == "predict":
            if not await stream.learned_to(req.min_position, req.wait_ms / 1000):
                return Reply.failure(req.id, P.TIMEOUT, f"stream {stream.name!r} has learned "
                                     f"{stream.view.position} symbols, fewer than {req.min_position}")
            return prediction(req, stream)
        if req.op == "stats":
            return Reply.success(req.id, **stream_stats(self, stream, partition))
        if req.op == "snapshot":  # of everything accepted before it: its learner catches up first
            if not await stream.learned_to(stream.accepted, self.settings.request_timeout):
                return Reply.failure(req.id, P.BUSY, f"stream {stream.name!r} has {stream.queued} symbols still "
                                     "to learn; retry later", retry_after_ms=1000)
            return Reply.success(req.id, stream=stream.name, position=await self._snapshot(stream))
        if req.op == "drop":
            async with stream.lock:
                await stream.writer.drop()
                del held.streams[stream.name]
                self.residency.forget(stream)
            await self.loader.remove(stream.name, stream.writer.subject)
            return Reply.success(req.id, stream=stream.name, dropped=True)
        raise P.ProtocolError(P.UNKNOWN_OP, f"unknown operation {req.op!r}")

    async def _create(self, held: Held, req: Request) -> Reply:
        try:
            config = make_config(req.preset, req.config)
        except ValueError as exc:
            return Reply.failure(req.id, P.BAD_CONFIG, str(exc))
        existing = held.streams.get(req.stream)
        if existing is not None:
            if req.exist_ok and (req.config is None and req.preset is None or existing.config == config):
                return Reply.success(req.id, stream=req.stream, created=False, config=config_dict(existing.config))
            return Reply.failure(req.id, P.STREAM_EXISTS, f"stream {req.stream!r} exists")
        if sum(len(h.streams) for h in self.held.values()) >= self.config.max_streams:
            return Reply.failure(req.id, P.LIMIT, f"this replica holds at most {self.config.max_streams} streams")
        created = time.time()
        writer = StreamWriter(self.log, req.stream, subject_of(req.stream, self.settings.partitions), None,
                              held.lease.token)
        async with self.residency.room_for(resident_bytes(config)):
            learner = await asyncio.get_running_loop().run_in_executor(self.pool, learner_for, config)
        if req.stream in held.streams:  # created meanwhile by a request that overtook this one
            return await self._create(held, req)
        held.streams[req.stream] = stream = ClusterStream(req.stream, created, config, writer, learner, 0)
        self.residency.serve(stream)
        async with stream.lock:
            try:
                stream.learned_tail = await writer.create(stream_meta.encode(req.stream, created, config))
            except BaseException:
                held.streams.pop(req.stream, None)
                self.residency.forget(stream)
                raise
        log.info("stream %s created", req.stream)
        return Reply.success(req.id, stream=req.stream, created=True, config=config_dict(config))

    async def _publish(self, stream: ClusterStream, req: Request) -> Reply:
        symbols = (np.frombuffer(req.symbols, dtype=np.uint8) if isinstance(req.symbols, bytes)
                   else np.asarray(req.symbols, dtype=np.int64))
        cap = stream.config.alphabet_cap
        if int(symbols.max()) >= cap:
            return Reply.failure(req.id, P.BAD_SYMBOL, f"symbol {int(symbols.max())} is outside stream "
                                 f"{stream.name!r}'s alphabet [0, {cap})")
        if stream.queued + len(symbols) > self.config.max_queue_symbols:
            return Reply.failure(req.id, P.BUSY, f"stream {stream.name!r} has {stream.queued} symbols waiting to "
                                 "be learned; retry later", retry_after_ms=100)
        async with stream.appending():
            if stream.view is None:  # taken up asleep: the batch ids it has seen are in its snapshot
                await self.residency.wake(stream)
            if req.batch is not None and (seen := stream.batch_ids.get(req.batch)) is not None:
                return Reply.success(req.id, stream=stream.name, position=seen[1], queued=stream.queued, again=True)
            if req.position is not None and req.position != stream.accepted:
                return Reply.failure(req.id, P.CONFLICT, f"stream {stream.name!r} holds {stream.accepted} symbols, "
                                     f"not {req.position}")
            itemsize = wal.itemsize_for(cap)
            body = symbols.astype(np.uint8 if itemsize == 1 else "<u2").tobytes()
            start = stream.accepted
            t0 = time.perf_counter()
            tail = await stream.writer.batch(body, len(symbols), itemsize, req.batch or b"")
            self.telemetry.append.observe(time.perf_counter() - t0)
            if req.batch is not None:
                stream.batch_ids.add(req.batch, start, stream.accepted)
            stream.queue_batch(symbols_of(body, itemsize), tail)
            if stream.learning is None or stream.learning.done():
                stream.learning = asyncio.create_task(self._learn(stream))
            return Reply.success(req.id, stream=stream.name, position=stream.accepted, queued=stream.queued)

    async def _learn(self, stream: ClusterStream) -> None:
        """Learn the stream's queue in order, a batch at a time on the workers, for as long as this replica
        serves it.  A learner that cannot be read back from its snapshot is tried again, after
        :data:`LEARN_RETRY` seconds, doubling to a minute: a queue is never left behind with nobody at it."""
        loop, retry = asyncio.get_running_loop(), LEARN_RETRY
        while stream.queue and stream in self.residency.streams:
            try:
                await self.residency.wake(stream)
            except Exception as exc:  # the batches stay queued (and in the log)
                log.error("stream %s: its learner could not be read back (tried again in %g s): %s: %s", stream.name,
                          retry, type(exc).__name__, exc)
                await asyncio.sleep(retry)
                retry = min(2 * retry, 60.0)
                continue
            retry = LEARN_RETRY
            async with stream.stepping:
                symbols, tail = stream.queue[0]
                try:
                    bits = await loop.run_in_executor(self.pool, stream.learn, symbols)
                except Exception:  # a learner that failed mid-batch cannot go on: its log keeps every batch
                    log.exception("stream %s: its learner failed on a batch; it learns no more here (the log "
                                  "keeps its batches for the partition's next owner)", stream.name)
                    return
                stream.queue.pop(0)
                stream.learned_tail = tail
            stream.queued -= len(symbols)
            stream.last_active = time.monotonic()
            self.residency.grew(stream)
            try:
                await self.residency.make_room(0, keep=stream)
            except Exception as exc:  # another stream could not hibernate (its snapshot not written): said, and on
                log.warning("replica %s: no room made after stream %s's batch: %s: %s", self.member, stream.name,
                            type(exc).__name__, exc)
            view = stream.view
            event = P.Event(stream.name, view.position, len(symbols), bits,
                            tuple((int(s), float(p)) for s, p in view.top(5)), view.escape)
            try:
                await self.engine.nc.publish(C.event_subject(stream.name), C.encode_event(event))
            except Exception:
                pass  # an event is a courtesy: the stream's state is the log and the learner
            async with stream.learned:
                stream.learned.notify_all()

    async def _on_control(self, msg) -> None:
        try:
            req = P.decode_request(msg.data, self.limits)
            if req.op == "ping":
                reply = Reply.success(req.id, server="seqd", version=__version__, protocol=P.PROTOCOL_VERSION,
                                      member=self.member, partitions=self.settings.partitions)
            elif req.op == "stats" and req.stream is None:
                reply = Reply.success(req.id, **server_stats(self))
            else:
                return
        except P.ProtocolError as exc:
            reply = Reply.failure(P.request_id(msg.data), exc.code, exc.message)
        if msg.reply:
            await msg.respond(P.encode_reply(reply))


def serve(config: ServeConfig, settings: ClusterSettings, member: str | None = None) -> None:
    """Run a replica until SIGTERM or SIGINT, then hand its partitions over and exit."""
    import faulthandler
    import signal

    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` prints every thread's stack: what a stuck replica does

    async def main():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await Replica(config, settings, member).run(stop)

    asyncio.run(main())
