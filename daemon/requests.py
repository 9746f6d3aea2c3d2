"""What the daemon does with a request: a reply now, or a deferral saying what the reply waits for.

:meth:`Requests.handle` takes a decoded request (in a :class:`~.pending.Pending`)
and the daemon's streams, and returns either the
:class:`seqd.clients.protocol.Reply` to send at once or one of the four
deferrals of :mod:`.pending`:

* ``AwaitSync``: a published batch is in its stream's write-ahead log; it is
  acknowledged once a sync thread has fsynced the log (group commit);
* ``AwaitWorker``: a snapshot is queued; a worker answers it;
* ``AwaitPosition``: a predict waits in :class:`~.waiters.Waiters` for its
  stream to reach a position;
* ``AwaitNamespace``: a create or a drop waits for the namespace thread.

What a deferral asks of the I/O loop is decided by :mod:`.completions` and
carried out by :mod:`.server`, which hands the work to the thread named.
Nothing here touches a socket or a thread, so request handling is tested as
it is (``tests/test_requests.py``).
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable

import numpy as np

from .. import __version__
from ..clients import protocol as P
from ..clients.protocol import Reply, Request
from .budget import STREAM_BYTES, MemoryBudget
from .pending import (AwaitNamespace, AwaitPosition, AwaitRoom, AwaitSync, AwaitWorker, CreateJob, Deferral, DropJob,
                      Pending)
from .reports import Created, CreateFailed
from .config import ServeConfig
from .state_dir import StateDirectory
from .models import config_dict, is_earlier_preset, make_config
from .learner_store import most_bytes, resident_bytes
from .streams import Stream
from .waiters import Waiters

log = logging.getLogger("seqd")

MAX_QUEUED_BATCHES = 4096  # per stream: a flood of tiny batches is bounded too, not only its symbols
CREATE_RETRY_MS = 10  # what a request for a stream being created is told to wait
LEARN_RATE_HINT = 50_000  # symbols/s, to suggest how long a "busy" publisher should wait
BUSY_RETRY_MS = (10, 5000)  # the bounds of what a "busy" publisher is told to wait


def binary_size(n: int) -> str:
    """Bytes as an operator reads a memory figure: '48.0 MiB', '1.03 TiB' (binary multiples)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"


def stopping(req: Request) -> Reply:
    """The answer to a publish or a create that comes while the server stops."""
    return Reply.failure(req.id, P.SHUTTING_DOWN, f"the server is stopping; {req.op} again once it is back")


class Requests:
    """Request handling over the daemon's streams: the served ones (``streams``), those whose files could
    not be restored (``unavailable``: name -> why), those being created (``creating``: name -> the request
    to answer), and the predicts waiting for positions.  ``stopping`` says whether the server stops."""

    def __init__(self, config: ServeConfig, state: StateDirectory, waiters: Waiters, *,
                 stopping: Callable[[], bool]):
        self.config = config
        self.state = state
        self.waiters = waiters
        self.stopping = stopping
        self.streams: dict[str, Stream] = {}
        self.unavailable: dict[str, str] = {}
        self.creating: dict[str, Pending] = {}
        self.reserved: dict[str, int] = {}  # the memory of each stream being created, in bytes
        self.budget = MemoryBudget(config.max_state_bytes)  # the streams, their learners in memory and on their way
        self.started = time.time()

    def handle(self, pending: Pending) -> Reply | Deferral:
        """The reply to ``pending``'s request, or what it waits for; a ProtocolError is a refusal."""
        req = pending.request
        if req.op == "ping":
            return Reply.success(req.id, server="seqd", version=__version__, protocol=P.PROTOCOL_VERSION)
        if req.op in ("create", "publish") and self.stopping():
            return stopping(req)
        if req.op == "create":
            return self.create(req, pending)
        if req.op == "stats" and req.stream is None:
            return Reply.success(req.id, **self.server_stats())
        if req.op == "publish" and req.create and req.stream not in self.streams and req.stream not in self.creating:
            # the publish is answered once the stream is there (Completions), or with why it is not
            return self.create(Request(id=req.id, op="create", stream=req.stream), pending)
        stream = self.stream(req.stream)
        if req.op == "publish":
            return self.publish(pending, stream)
        if req.op == "predict":
            if stream.view.position >= req.min_position:
                return prediction(req, stream)
            if req.wait_ms == 0:
                return Reply.failure(req.id, P.TIMEOUT, f"stream {stream.name!r} has learned "
                                     f"{stream.view.position} symbols, fewer than {req.min_position}")
            why = self.waiters.refusal(pending.identity)
            if why is not None:
                return Reply.failure(req.id, P.LIMIT, why)
            self.waiters.add(pending, time.monotonic() + req.wait_ms / 1000)
            return AwaitPosition()
        if req.op == "stats":
            return Reply.success(req.id, **self.stream_stats(stream))
        if req.op == "snapshot":
            if stream.faulted:
                return Reply.failure(req.id, P.INTERNAL, f"stream {stream.name!r} is not snapshotted: {stream.broken}")
            return AwaitWorker(stream if stream.request_snapshot(pending) else None)
        if req.op == "drop":
            return self.drop(pending, stream)
        raise P.ProtocolError(P.UNKNOWN_OP, f"unknown operation {req.op!r}")  # unreachable: Request checks

    def stream(self, name: str) -> Stream:
        """The stream served as ``name``; ProtocolError when there is none (yet)."""
        stream = self.streams.get(name)
        if stream is None and name in self.creating:
            raise P.ProtocolError(P.BUSY, f"stream {name!r} is being created; retry", retry_after_ms=CREATE_RETRY_MS)
        if stream is None:
            if name in self.unavailable:
                raise P.ProtocolError(P.INTERNAL, f"stream {name!r} could not be restored: {self.unavailable[name]}")
            raise P.ProtocolError(P.NO_SUCH_STREAM, f"no stream named {name!r}")
        return stream

    def create(self, req: Request, pending: Pending) -> Reply | AwaitNamespace:
        """Check a create and hand it to the namespace thread: its files and fsyncs never hold up the loop.

        ``pending`` (the create, or a publish with ``create``) is answered
        when the stream is in place, or with why it is not (by
        :mod:`.completions`, on the namespace thread's report); a refusal
        here is returned at once.
        """
        name = req.stream
        if name in self.unavailable:
            return Reply.failure(req.id, P.INTERNAL, f"stream {name!r} exists but could not be restored: "
                                                     f"{self.unavailable[name]}")
        try:
            config = make_config(req.preset, req.config)
        except ValueError as exc:
            existing = self.streams.get(name)  # settings today's preset lacks may be those an earlier one had
            if req.exist_ok and existing is not None:
                if is_earlier_preset(existing.config, req.preset, req.config):
                    return Reply.success(req.id, stream=name, created=False, config=config_dict(existing.config))
                return Reply.failure(req.id, P.STREAM_EXISTS, f"stream {name!r} exists with another configuration")
            return Reply.failure(req.id, P.BAD_CONFIG, str(exc))
        if name in self.creating:
            return Reply.failure(req.id, P.BUSY, f"stream {name!r} is being created; retry",
                                 retry_after_ms=CREATE_RETRY_MS)
        if name in self.streams:
            existing = self.streams[name]
            if req.exist_ok and (req.config is None and req.preset is None or existing.config == config
                                 or is_earlier_preset(existing.config, req.preset, req.config)):
                return Reply.success(req.id, stream=name, created=False, config=config_dict(existing.config))
            return Reply.failure(req.id, P.STREAM_EXISTS, f"stream {name!r} exists" +
                                 (" with another configuration" if req.exist_ok else ""))
        if len(self.streams) + len(self.creating) >= self.config.max_streams:
            return Reply.failure(req.id, P.LIMIT, f"this server holds at most {self.config.max_streams} streams")
        need = STREAM_BYTES + resident_bytes(config)
        refusal = self._memory_refusal(name, need, STREAM_BYTES + most_bytes(config))
        if refusal is not None:
            return Reply.failure(req.id, *refusal)
        self.creating[name] = pending
        self.reserved[name] = need
        job = CreateJob(name, config, need)
        return AwaitNamespace(job) if self.budget.try_take(need) else AwaitRoom(job)

    def _memory_refusal(self, name: str, need: int, most: int | None = None) -> tuple[str, str] | None:
        """Why a new stream that holds ``need`` bytes in memory, and up to ``most`` as it grows, cannot be
        served, or None: checked before anything is allocated, against ``max_state_bytes`` less the streams'
        own bytes and the learners at work (:meth:`busy_bytes`), and those being created."""
        budget = self.config.max_state_bytes
        most = max(need, most or 0)
        if most > budget:  # no server state could ever hold it: the request is at fault, not the server
            return P.BAD_CONFIG, (f"stream {name!r} would hold {binary_size(most)} in memory, more than this "
                                  f"server serves in all (max_state_bytes = {binary_size(budget)}): use fewer units, "
                                  "a smaller degree, window or alphabet_cap, or smaller tables (context_bits, "
                                  "history_bits, match_bits)")
        used = self.busy_bytes() + sum(self.reserved.values())
        if used + need > budget:
            return P.LIMIT, (f"a new stream of {binary_size(need)} would take the streams past max_state_bytes "
                             f"= {binary_size(budget)} ({binary_size(used)} held by the streams and the learners "
                             "at work)")
        return None

    def busy_bytes(self) -> int:
        """The memory of the learners that cannot hibernate now: in memory and at work, or broken or faulted
        (those stay in memory).  Idle ones make room (``Completions.tick`` hibernates the least recently
        active while the learners take more than ``max_state_bytes``), and those already asked to are on
        their way out."""
        return STREAM_BYTES * len(self.streams) + sum(
            s.learner_bytes for s in self.streams.values()
            if s.resident and not s.hibernation_pending and (not s.idle or s.broken))

    def publish(self, pending: Pending, stream: Stream) -> Reply | AwaitSync:
        """Check a batch and append it to the stream's log; it is acknowledged after the log's fsync."""
        req = pending.request
        if stream.broken:
            return Reply.failure(req.id, P.INTERNAL, f"stream {stream.name!r} refuses batches until restart: "
                                                     f"{stream.broken}")
        if isinstance(req.symbols, bytes):
            symbols = np.frombuffer(req.symbols, dtype=np.uint8)
        else:
            symbols = np.asarray(req.symbols, dtype=np.int64)
        cap = stream.config.alphabet_cap
        if int(symbols.max()) >= cap:
            return Reply.failure(req.id, P.BAD_SYMBOL, f"symbol {int(symbols.max())} is outside stream "
                                 f"{stream.name!r}'s alphabet [0, {cap})")
        if req.batch is not None and (seen := stream.batch_ids.get(req.batch)) is not None:
            return self._again(req, stream, *seen)
        if req.position is not None and req.position != stream.accepted:
            return Reply.failure(req.id, P.CONFLICT, f"stream {stream.name!r} holds {stream.accepted} symbols, "
                                 f"not {req.position}")
        waiting = stream.queued + stream.syncing
        if (waiting + len(symbols) > self.config.max_queue_symbols
                or len(stream.queue) + stream.syncing_batches >= MAX_QUEUED_BATCHES):
            wait = int(1000 * waiting / LEARN_RATE_HINT)
            return Reply.failure(req.id, P.BUSY, f"stream {stream.name!r} has {waiting} symbols waiting to be "
                                 "learned; retry later", retry_after_ms=min(max(wait, BUSY_RETRY_MS[0]),
                                                                            BUSY_RETRY_MS[1]))
        try:
            start = stream.log.append(symbols, req.batch or b"")
        except OSError as exc:
            reason = stream.mark_broken(f"write-ahead log could not be written: {exc}")
            log.error("stream %s: %s", stream.name, reason)
            return Reply.failure(req.id, P.INTERNAL, reason)
        pending.position = stream.accepted
        if req.batch is not None:
            stream.batch_ids.add(req.batch, start, stream.accepted)
        stream.syncing += len(symbols)
        stream.syncing_batches += 1
        return AwaitSync(pending, stream, symbols if symbols.dtype == np.uint8 else symbols.astype(np.uint16))

    def _again(self, req: Request, stream: Stream, start: int, end: int) -> Reply:
        """A publish whose batch id the stream has seen: acknowledged as the first was, once it is durable (a
        retry may overtake the first's fsync: it is told to come back), and nothing is appended."""
        if end > stream.accepted - stream.syncing:
            return Reply.failure(req.id, P.BUSY, f"batch {req.batch.hex()} of stream {stream.name!r} is being "
                                 "written; retry", retry_after_ms=BUSY_RETRY_MS[0])
        return Reply.success(req.id, stream=stream.name, position=end, queued=stream.queued, again=True)

    def drop(self, pending: Pending, stream: Stream) -> AwaitNamespace:
        """Move the stream's folder to the trash (a worker deletes it) and forget the stream; the drop is
        answered once the namespace thread has made the move durable (:mod:`.completions`)."""
        trash = self.state.trash_for(stream.name)
        with stream.io_lock:  # not while a worker writes its snapshot: after this, it writes none
            os.replace(stream.directory, trash)
            schedule, orphans = stream.drop(trash)
        del self.streams[stream.name]
        try:
            stream.log.close()
        except OSError as exc:  # a log whose fsync failed (a broken stream): dropped all the same
            log.warning("stream %s: closing its log while dropping it: %s", stream.name, exc)
        gone = f"stream {stream.name!r} was dropped"
        answers = [(r, Reply.failure(r.request.id, P.NO_SUCH_STREAM, gone), "snapshot") for r in orphans]
        answers += [(w, Reply.failure(w.request.id, P.NO_SUCH_STREAM, gone), "predict")
                    for w in self.waiters.drop(stream.name)]
        log.info("stream %s dropped", stream.name)
        return AwaitNamespace(DropJob(stream, pending), stream if schedule else None, tuple(answers))

    def created(self, report: Created | CreateFailed) -> tuple[Pending, tuple[str, str] | None]:
        """The namespace thread's report on a create: the stream is registered, unless it failed on disk or
        would take the streams past ``max_state_bytes`` (its files are then removed).  Returns the request
        to answer and, when there is no stream, the error code and message to answer it with."""
        name = report.name
        pending = self.creating.pop(name)
        taken = self.reserved.pop(name)  # the room its job took from the budget: the stream's own count follows
        failure = None
        try:
            if isinstance(report, Created):
                report.stream.count_in(self.budget)
            self.budget.give(taken)
            if isinstance(report, CreateFailed):
                result = report.error
                log.error("stream %s could not be created: %s", name, result)
                failure = (P.INTERNAL, f"stream {name!r} could not be created: {type(result).__name__}: {result}")
                return pending, failure
            stream = report.stream
            used = self.busy_bytes()
            if used + STREAM_BYTES + stream.learner_bytes > self.config.max_state_bytes:
                failure = (P.LIMIT, f"a new stream of {STREAM_BYTES + stream.learner_bytes} bytes would take the "
                                    f"streams past max_state_bytes = {self.config.max_state_bytes}")
                stream.unmake()
                return pending, failure
            stream.go_live()
            self.streams[name] = stream
            stream.stagger(self.config.snapshot_interval_seconds)
            log.info("stream %s created (%d bytes of state)", name, stream.learner_bytes)
            return pending, None
        except Exception as exc:  # a fault of ours: whoever asked still gets an answer
            log.exception("stream %s: registering it failed", name)
            return pending, failure or (P.INTERNAL, f"{type(exc).__name__}: {exc}")

    def restore_streams(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Restore every stream of the state directory at start and serve it; a stream whose files cannot
        be restored is named in ``unavailable`` with why, and its files are left as they are (with
        ``repair`` in the configuration, a damaged log is cut where its damage starts instead)."""
        t0 = time.perf_counter()
        restored = self.state.restore(threads=self.config.worker_count, fsync=self.config.fsync,
                                      budget=self.config.max_state_bytes, repair=self.config.repair,
                                      progress=progress)
        if not restored:
            return
        for path, result in restored:
            if isinstance(result, Stream):
                result.count_in(self.budget)
                result.go_live()
                self.streams[result.name] = result
                result.stagger(self.config.snapshot_interval_seconds)
            else:
                self.unavailable[path.name] = result
                hint = ("; `seqd serve --repair` cuts the log where its damage starts and serves the rest"
                        if "LogDamage" in result else "")
                log.error("stream %s is out of service (its files are left as they are): %s%s", path.name, result,
                          hint)
        log.info("restored %d stream(s) in %.1f s (%d hibernated, %d out of service)", len(self.streams),
                 time.perf_counter() - t0, sum(1 for s in self.streams.values() if not s.resident),
                 len(self.unavailable))

    # -- statistics --------------------------------------------------------------------------------
    def stream_stats(self, stream: Stream) -> dict:
        view = stream.view
        return dict(view.stats, stream=stream.name, accepted=stream.accepted, queued=stream.queued,
                    config=config_dict(stream.config), state_bytes=stream.learner_bytes, resident=stream.resident,
                    created=stream.created, uptime_seconds=time.time() - stream.started,
                    state="broken" if stream.broken else "live", broken=stream.broken, repairs=stream.repairs)

    def server_stats(self) -> dict:
        return dict(server="seqd", version=__version__, uptime_seconds=time.time() - self.started,
                    streams=sorted(self.streams), queued=sum(s.queued for s in self.streams.values()),
                    symbols_learned=sum(s.view.position for s in self.streams.values()),
                    unavailable=dict(self.unavailable))


def prediction(req: Request, stream: Stream) -> Reply:
    """The answer to a predict from the stream's latest view."""
    view = stream.view
    result = dict(stream=stream.name, position=view.position, top=view.top(req.top or len(view.symbols)),
                  escape=view.escape, alphabet_size=len(view.symbols))
    if req.top == 0:
        result["distribution"] = view.distribution()
    return Reply.success(req.id, **result)
