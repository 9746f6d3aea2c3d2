"""The daemon: one I/O loop on ZeroMQ, worker threads that learn, streams that survive restarts.

The I/O loop (:meth:`Server.serve`) owns every socket and appends to every
write-ahead log.  It takes the requests that are waiting (a burst), answers
what it can at once from the streams' views, and appends published batches to
their logs; a sync thread then fsyncs each touched log once (group commit)
while the loop goes on answering, and only then are the batches acknowledged
and handed to the workers.  Workers run the Numba kernels, which
release the GIL, so the loop keeps answering while streams learn; they report
back through a queue and a wake-up socket, and the loop publishes their
prediction events.  ``docs/daemon.md`` has the picture; ``docs/protocol.md``
the messages.
"""

from __future__ import annotations

import fcntl
import heapq
import logging
import os
import queue
import shutil
import threading
import time
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zmq
from prometheus_client import CollectorRegistry

from ..clients import protocol as P
from ..clients.protocol import Reply, Request
from . import wal
from .config import ServeConfig
from .metrics import Telemetry, start_metrics_server
from .streams import Stream, config_dict, make_config

log = logging.getLogger("seqd")

VERSION = "0.2.0"
BURST = 256  # requests taken per turn of the loop before the logs are synced
EVENT_TOP = 5  # symbols in each prediction event
MAX_WAITERS = 10_000  # predicts waiting for a position, all streams together
MAX_QUEUED_BATCHES = 4096  # per stream: a flood of tiny batches is bounded too, not only its symbols
CREATE_RETRY_MS = 10  # what a request for a stream being created is told to wait
LEARN_RATE_HINT = 50_000  # symbols/s, to suggest how long a "busy" publisher should wait
# pyzmq's flags as plain ints: combining its enum members builds a new Flag object each time, on every reply
_NOBLOCK, _SNDMORE, _POLLIN = int(zmq.NOBLOCK), int(zmq.SNDMORE), int(zmq.POLLIN)


@dataclass
class _Pending:
    """A request whose reply waits: for a sync, a worker, or a position to be learned."""

    identity: bytes
    request: Request
    t0: float
    deadline: float = 0.0  # a waiting predict: when it times out
    position: int = 0  # an accepted batch: the stream's length after it
    done: bool = False  # a waiting predict already answered (it stays in the deadline heap until it pops)

    def __lt__(self, other: "_Pending") -> bool:  # for the deadline heap
        return self.deadline < other.deadline


class Server:
    def __init__(self, config: ServeConfig, *, registry: CollectorRegistry | None = None):
        self.config = config
        self.limits = P.Limits(max_message_bytes=config.max_message_bytes,
                               max_batch_symbols=config.max_batch_symbols)
        self.state_dir = Path(config.state_dir)
        self.registry = registry if registry is not None else CollectorRegistry()
        self.telemetry = Telemetry(self.registry, self)
        self.streams: dict[str, Stream] = {}
        self.unavailable: dict[str, str] = {}  # streams whose files could not be restored: name -> why
        self.started = time.time()
        self._ready: queue.SimpleQueue = queue.SimpleQueue()  # streams with work, for the workers
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()  # what workers did, for the loop
        self._waiters: dict[str, list[_Pending]] = {}  # waiting predicts by stream
        self._deadlines: list[_Pending] = []  # the same, as a heap by deadline
        self._waiting = 0
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self._sync_jobs: queue.SimpleQueue = queue.SimpleQueue()  # acknowledgements waiting for an fsync
        self._syncing = 0  # sync jobs under way
        self._name_jobs: queue.SimpleQueue = queue.SimpleQueue()  # creations and drops, for the namespace thread
        self._creating: dict[str, _Pending] = {}  # names being created -> the request to answer (others: busy)
        self._namer: threading.Thread | None = None
        self._ctx = zmq.Context()
        self._auth = None
        self._metrics_http = None
        self.api_endpoint = self.pub_endpoint = None
        self._router = self._pub = self._wake = None  # opened by start()
        self._syncer: threading.Thread | None = None
        self._lock_file = None

    # -- start and stop ----------------------------------------------------------------------
    def start(self) -> None:
        """Lock the state directory, restore every stream, bind the sockets, start the workers and the
        metrics endpoint.  A failure (ValueError, with the reason) leaves nothing open."""
        try:
            self._start()
        except BaseException:
            self._abort()
            raise

    def _start(self) -> None:
        (self.state_dir / "streams").mkdir(parents=True, exist_ok=True)
        self._lock_state_dir()
        self._empty_trash()
        self._restore_streams()
        self._router = self._ctx.socket(zmq.ROUTER)
        self._pub = self._ctx.socket(zmq.PUB)
        for sock in (self._router, self._pub):
            sock.setsockopt(zmq.LINGER, 1000)
        self._router.setsockopt(zmq.MAXMSGSIZE, self.config.max_message_bytes)
        self._configure_curve()
        for sock, name, endpoint in ((self._router, "API", self.config.api), (self._pub, "event", self.config.pub)):
            try:
                sock.bind(endpoint)
            except zmq.ZMQError as exc:
                raise ValueError(f"cannot bind the {name} socket to {endpoint}: {exc.strerror}") from None
        self.api_endpoint = self._router.getsockopt_string(zmq.LAST_ENDPOINT)
        self.pub_endpoint = self._pub.getsockopt_string(zmq.LAST_ENDPOINT)
        self._wake = self._ctx.socket(zmq.PULL)
        self._wake.bind("inproc://seqd-wake")
        for i in range(self.config.worker_count):
            t = threading.Thread(target=self._work, name=f"seqd-worker-{i}", daemon=True)
            t.start()
            self._workers.append(t)
        self._syncer = threading.Thread(target=self._sync, name="seqd-sync", daemon=True)
        self._syncer.start()
        self._namer = threading.Thread(target=self._namespace, name="seqd-namespace", daemon=True)
        self._namer.start()
        if self.config.metrics_port:
            try:
                self._metrics_http, thread = start_metrics_server(self.registry, self.config.metrics_host,
                                                                  self.config.metrics_port)
                name_os_thread("seqd-metrics", thread.native_id)
            except OSError as exc:
                raise ValueError(f"cannot serve metrics on {self.config.metrics_host}:{self.config.metrics_port}: "
                                 f"{exc.strerror or exc}") from None
        log.info("seqd %s serving %d stream(s): api %s, pub %s, metrics %s, state %s, %d worker(s)", VERSION,
                 len(self.streams), self.api_endpoint, self.pub_endpoint, self.metrics_url or "off", self.state_dir,
                 len(self._workers))

    @property
    def metrics_url(self) -> str | None:
        if not self._metrics_http:
            return None
        host, port = self._metrics_http.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def request_stop(self) -> None:
        """Begin an orderly stop (safe from a signal handler or another thread)."""
        self._stop.set()

    def _lock_state_dir(self) -> None:
        """One daemon per state directory: two writers would interleave their logs."""
        path = self.state_dir / "lock"
        self._lock_file = open(path, "a+")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock_file.seek(0)
            owner = self._lock_file.read().strip() or "unknown"
            self._lock_file.close()
            self._lock_file = None
            raise ValueError(f"state directory {self.state_dir} is in use by another seqd (pid {owner})") from None
        self._lock_file.seek(0)
        self._lock_file.truncate()
        self._lock_file.write(f"{os.getpid()}\n")
        self._lock_file.flush()

    def _abort(self) -> None:
        """Release what a failed start opened."""
        self._release()

    def _configure_curve(self) -> None:
        if not self.config.curve_secret_key_file:
            return
        import zmq.auth
        from zmq.auth.thread import ThreadAuthenticator
        public, secret = zmq.auth.load_certificate(self.config.curve_secret_key_file)
        if not secret:
            raise ValueError(f"{self.config.curve_secret_key_file} holds no secret key")
        self._auth = ThreadAuthenticator(self._ctx)
        self._auth.start()
        self._auth.configure_curve(domain="*", location=self.config.curve_authorized_keys_dir)
        for sock in (self._router, self._pub):
            sock.curve_secretkey, sock.curve_publickey, sock.curve_server = secret, public, True

    # -- the loop ------------------------------------------------------------------------------
    def serve(self) -> None:
        """Run until :meth:`request_stop`, then finish queued work, snapshot every stream, and return."""
        name_os_thread("seqd")  # the I/O loop; run as ``seqd serve``, the process takes this name too
        poller = zmq.Poller()
        poller.register(self._router, zmq.POLLIN)
        poller.register(self._wake, zmq.POLLIN)
        next_housekeeping = 0.0
        draining = snapshots_asked = False
        try:
            while True:
                now = time.monotonic()
                timeout = max(0.0, min(next_housekeeping, self._next_deadline()) - now)
                ready = dict(poller.poll(int(timeout * 1000) + 1))
                if self._wake in ready:
                    while self._wake.poll(0):
                        self._wake.recv()
                self._take_reports()
                if self._router in ready:
                    self._take_requests()
                now = time.monotonic()
                if now >= next_housekeeping:
                    self._expire_waiters(now)
                    self._snapshot_due(now)
                    next_housekeeping = now + 0.25
                if self._stop.is_set() and not draining:
                    draining = True
                    log.info("stopping: finishing queued work and writing snapshots")
                if draining and not snapshots_asked and self._syncing == 0 and not self._creating:
                    # every accepted batch is queued, every stream being created is in place
                    snapshots_asked = True
                    for stream in self.streams.values():
                        if stream.accepted > stream.snapshot_position and not stream.faulted:
                            self._snapshot(stream, None)
                if snapshots_asked and not any(s.scheduled for s in self.streams.values()):
                    self._take_reports()
                    break
        finally:
            self._close()

    def _next_deadline(self) -> float:
        if len(self._deadlines) > 2 * self._waiting + 64:  # answered predicts below the top: let them go
            self._deadlines = [w for w in self._deadlines if not w.done]
            heapq.heapify(self._deadlines)
        while self._deadlines and self._deadlines[0].done:
            heapq.heappop(self._deadlines)
        return self._deadlines[0].deadline if self._deadlines else float("inf")

    def _take_requests(self) -> None:
        """A burst of requests; batches are acknowledged after one sync per touched log."""
        acks: list[tuple[_Pending, Stream, np.ndarray]] = []
        router = self._router
        for _ in range(BURST):
            if not router.getsockopt(zmq.EVENTS) & _POLLIN:  # (a zmq.Again raised to end each burst costs more)
                break
            try:
                frames = router.recv_multipart(_NOBLOCK)
            except zmq.Again:
                break
            t0 = time.perf_counter()
            identity = frames[0]
            if len(frames) != 2:
                self._reply(identity, Reply.failure(0, P.BAD_REQUEST, f"a request is one frame, got "
                                                                      f"{len(frames) - 1}"), "invalid", t0)
                continue
            try:
                req = P.decode_request(frames[1], self.limits)
            except P.ProtocolError as exc:
                self._reply(identity, Reply.failure(P.request_id(frames[1]), exc.code, exc.message), "invalid", t0)
                continue
            pending = _Pending(identity, req, t0)
            try:
                reply = self._handle(pending, acks)
            except P.ProtocolError as exc:
                reply = Reply.failure(req.id, exc.code, exc.message, exc.retry_after_ms)
            except Exception as exc:  # a fault of ours: the daemon must survive it, and say so
                log.exception("request %s %s failed", req.op, req.stream)
                reply = Reply.failure(req.id, P.INTERNAL, f"{type(exc).__name__}: {exc}")
            if reply is not None:
                self._reply(identity, reply, req.op, t0)
        if acks:
            self._commit(acks)

    def _commit(self, acks) -> None:
        """Group commit: one fsync per touched log, in the sync thread, while this loop goes on answering;
        the batches are acknowledged and queued when it reports back (:meth:`_acknowledge`)."""
        if not self.config.fsync:
            self._acknowledge(acks, {})
            return
        self._syncing += 1
        self._sync_jobs.put(acks)

    def _sync(self) -> None:
        name_os_thread("seqd-sync")
        wake = self._ctx.socket(zmq.PUSH)
        wake.connect("inproc://seqd-wake")
        try:
            while (acks := self._sync_jobs.get()) is not None:
                failed: dict[str, str] = {}
                for stream in {id(s): s for _, s, _ in acks}.values():
                    try:
                        stream.log.sync()
                    except OSError as exc:
                        failed[stream.name] = f"write-ahead log could not be synced: {exc}"
                self._outbox.put(("synced", None, (acks, failed)))
                _poke(wake)
        finally:
            wake.close(linger=0)

    def _acknowledge(self, acks, failed: dict[str, str]) -> None:
        for pending, stream, symbols in acks:
            req = pending.request
            stream.syncing -= len(symbols)
            stream.syncing_batches -= 1
            if stream.dropped:
                self._reply(pending.identity, Reply.failure(req.id, P.NO_SUCH_STREAM, f"stream {stream.name!r} was "
                            "dropped before this batch was acknowledged"), req.op, pending.t0)
                continue
            if stream.name in failed and not stream.broken:
                stream.broken = failed[stream.name]
                log.error("stream %s: %s", stream.name, stream.broken)
            if stream.broken:  # and every batch after the failure: none may be learned past a hole
                self._reply(pending.identity, Reply.failure(req.id, P.INTERNAL, f"{stream.broken}; this batch may "
                            "or may not be in the log: after a restart, `accepted` in the stream's stats says"),
                            req.op, pending.t0)
                continue
            if stream.offer(pending.position - len(symbols), symbols):
                self._ready.put(stream)
            self.telemetry.symbols_accepted.inc(len(symbols))
            self._reply(pending.identity, Reply.success(req.id, stream=stream.name, position=pending.position,
                                                        queued=stream.queued), req.op, pending.t0)

    def _reply(self, identity: bytes, reply: Reply, op: str, t0: float) -> None:
        try:  # encoded before the first frame goes: a half-sent reply would take the next one's identity
            body = P.encode_reply(reply)
        except Exception as exc:  # a fault of ours (a value msgpack cannot carry): say so rather than die
            log.exception("the reply to a %s request could not be encoded", op)
            reply = Reply.failure(reply.id, P.INTERNAL, f"the reply could not be encoded: {type(exc).__name__}: {exc}")
            body = P.encode_reply(reply)
        outcome = "ok" if reply.ok else reply.code
        self.telemetry.request_done(op, outcome, time.perf_counter() - t0)
        try:  # a ROUTER drops, rather than blocks on, a reply it cannot route: the frames go together or not at all
            self._router.send(identity, _NOBLOCK | _SNDMORE)
            self._router.send(body, _NOBLOCK)
        except zmq.ZMQError:  # the client is gone or its queue is full: it will time out and retry
            pass

    # -- requests --------------------------------------------------------------------------------
    def _handle(self, pending: _Pending, acks: list) -> Reply | None:
        req = pending.request
        if req.op == "ping":
            return Reply.success(req.id, server="seqd", version=VERSION, protocol=P.PROTOCOL_VERSION)
        if req.op in ("create", "publish") and self._stop.is_set():
            return _stopping(req)
        if req.op == "create":
            return self._create(req, pending)
        if req.op == "stats" and req.stream is None:
            return Reply.success(req.id, **self.server_stats())
        if req.op == "publish" and req.create and req.stream not in self.streams and req.stream not in self._creating:
            # the publish is answered once the stream is there (:meth:`_created`), or with why it is not
            return self._create(Request(id=req.id, op="create", stream=req.stream), pending)
        stream = self._stream(req.stream)
        if req.op == "publish":
            return self._publish(pending, stream, acks)
        if req.op == "predict":
            if stream.view.position >= req.min_position:
                return self._prediction(req, stream)
            if req.wait_ms == 0:
                return Reply.failure(req.id, P.TIMEOUT, f"stream {stream.name!r} has learned "
                                     f"{stream.view.position} symbols, fewer than {req.min_position}")
            if self._waiting >= MAX_WAITERS:
                return Reply.failure(req.id, P.LIMIT, f"{MAX_WAITERS} predicts are already waiting for positions")
            pending.deadline = time.monotonic() + req.wait_ms / 1000
            self._waiters.setdefault(stream.name, []).append(pending)
            heapq.heappush(self._deadlines, pending)
            self._waiting += 1
            return None
        if req.op == "stats":
            return Reply.success(req.id, **self.stream_stats(stream))
        if req.op == "snapshot":
            if stream.faulted:
                return Reply.failure(req.id, P.INTERNAL, f"stream {stream.name!r} is not snapshotted: {stream.broken}")
            self._snapshot(stream, pending)
            return None
        if req.op == "drop":
            return self._drop(pending, stream)
        raise P.ProtocolError(P.UNKNOWN_OP, f"unknown operation {req.op!r}")  # unreachable: Request checks

    def _stream(self, name: str) -> Stream:
        stream = self.streams.get(name)
        if stream is None and name in self._creating:
            raise P.ProtocolError(P.BUSY, f"stream {name!r} is being created; retry", retry_after_ms=CREATE_RETRY_MS)
        if stream is None:
            if name in self.unavailable:
                raise P.ProtocolError(P.INTERNAL, f"stream {name!r} could not be restored: {self.unavailable[name]}")
            raise P.ProtocolError(P.NO_SUCH_STREAM, f"no stream named {name!r}")
        return stream

    def _create(self, req: Request, pending: _Pending) -> Reply | None:
        """Check a create and hand it to the namespace thread: its files and fsyncs never hold up this loop.

        ``pending`` (the create, or a publish with ``create``) is answered
        when the stream is in place, or with why it is not (:meth:`_created`);
        a refusal here is returned at once.
        """
        name = req.stream
        if name in self.unavailable:
            return Reply.failure(req.id, P.INTERNAL, f"stream {name!r} exists but could not be restored: "
                                                     f"{self.unavailable[name]}")
        try:
            config = make_config(req.preset, req.config)
        except ValueError as exc:
            return Reply.failure(req.id, P.BAD_CONFIG, str(exc))
        if name in self._creating:
            return Reply.failure(req.id, P.BUSY, f"stream {name!r} is being created; retry",
                                 retry_after_ms=CREATE_RETRY_MS)
        if name in self.streams:
            existing = self.streams[name]
            if req.exist_ok and (req.config is None and req.preset is None or existing.config == config):
                return Reply.success(req.id, stream=name, created=False, config=config_dict(existing.config))
            return Reply.failure(req.id, P.STREAM_EXISTS, f"stream {name!r} exists" +
                                 (" with another configuration" if req.exist_ok else ""))
        if len(self.streams) + len(self._creating) >= self.config.max_streams:
            return Reply.failure(req.id, P.LIMIT, f"this server holds at most {self.config.max_streams} streams")
        self._creating[name] = pending
        self._name_jobs.put(("create", name, config))
        return None

    def _created(self, name: str, result) -> None:
        """The namespace thread's report on a create: register the stream and answer the request (a publish
        with ``create`` is published now), or answer why there is no stream."""
        pending = self._creating.pop(name)
        failure = None
        try:
            if isinstance(result, Exception):
                log.error("stream %s could not be created: %s", name, result)
                failure = (P.INTERNAL, f"stream {name!r} could not be created: {type(result).__name__}: {result}")
                return
            stream = result
            used = sum(s.learner.state_bytes for s in self.streams.values())
            if used + stream.learner.state_bytes > self.config.max_state_bytes:
                failure = (P.LIMIT, f"a new stream of {stream.learner.state_bytes} bytes would take the learners "
                                    f"past max_state_bytes = {self.config.max_state_bytes}")
                try:
                    stream.log.close()
                finally:  # nothing may stay on disk to claim the name
                    shutil.rmtree(stream.directory, ignore_errors=True)
                return
            self.streams[name] = stream
            self._stagger(stream)
            log.info("stream %s created (%d bytes of state)", name, stream.learner.state_bytes)
        except Exception as exc:  # a fault of ours: whoever asked still gets an answer
            log.exception("stream %s: registering it failed", name)
            failure = failure or (P.INTERNAL, f"{type(exc).__name__}: {exc}")
        finally:
            self._answer_created(name, pending, failure)

    def _answer_created(self, name: str, pending: _Pending, failure: tuple[str, str] | None) -> None:
        req, acks = pending.request, []
        if failure is not None:
            reply = Reply.failure(req.id, *failure)
        elif req.op == "create":
            reply = Reply.success(req.id, stream=name, created=True, config=config_dict(self.streams[name].config))
        elif self._stop.is_set():
            reply = _stopping(req)
        else:
            reply = self._publish(pending, self.streams[name], acks)
        if reply is not None:
            self._reply(pending.identity, reply, req.op, pending.t0)
        if acks:
            self._commit(acks)

    def _namespace(self) -> None:
        """The namespace thread: the disk work of creating a stream (its folder, description, first log
        segment and their fsyncs) and of making a drop durable, in the order asked, off the I/O loop."""
        name_os_thread("seqd-namespace")
        wake = self._ctx.socket(zmq.PUSH)
        wake.connect("inproc://seqd-wake")
        streams_dir = self.state_dir / "streams"
        try:
            while (job := self._name_jobs.get()) is not None:
                kind, name, detail = job
                try:
                    if kind == "create":
                        result = Stream.create(name, streams_dir, detail, fsync=self.config.fsync)
                    else:  # "drop": the rename that took the folder away survives a power loss from now on
                        if self.config.fsync:
                            wal.fsync_path(streams_dir)
                        result = None
                except Exception as exc:  # disk full, say: reported to the requester
                    result = exc
                self._outbox.put(("created" if kind == "create" else "dropped", None, (name, detail, result)))
                _poke(wake)
        finally:
            wake.close(linger=0)

    def _publish(self, pending: _Pending, stream: Stream, acks: list) -> Reply | None:
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
        if req.position is not None and req.position != stream.accepted:
            return Reply.failure(req.id, P.CONFLICT, f"stream {stream.name!r} holds {stream.accepted} symbols, "
                                 f"not {req.position}")
        waiting = stream.queued + stream.syncing
        if (waiting + len(symbols) > self.config.max_queue_symbols
                or len(stream.queue) + stream.syncing_batches >= MAX_QUEUED_BATCHES):
            wait = int(1000 * waiting / LEARN_RATE_HINT)
            return Reply.failure(req.id, P.BUSY, f"stream {stream.name!r} has {waiting} symbols waiting to be "
                                 "learned; retry later", retry_after_ms=min(max(wait, 10), 5000))
        try:
            stream.log.append(symbols)
        except OSError as exc:
            stream.broken = f"write-ahead log could not be written: {exc}"
            log.error("stream %s: %s", stream.name, stream.broken)
            return Reply.failure(req.id, P.INTERNAL, stream.broken)
        pending.position = stream.accepted
        stream.syncing += len(symbols)
        stream.syncing_batches += 1
        acks.append((pending, stream, symbols if symbols.dtype == np.uint8 else symbols.astype(np.uint16)))
        return None

    def _prediction(self, req: Request, stream: Stream) -> Reply:
        view = stream.view
        result = dict(stream=stream.name, position=view.position, top=view.top(req.top or len(view.symbols)),
                      escape=view.escape, alphabet_size=len(view.symbols))
        if req.top == 0:
            result["distribution"] = view.distribution()
        return Reply.success(req.id, **result)

    def _drop(self, pending: _Pending, stream: Stream) -> None:
        """Move the stream's folder to the trash (a worker deletes it) and forget the stream; the drop is
        answered once the namespace thread has made the move durable (:meth:`_dropped`)."""
        trash = self.state_dir / "trash" / f"{stream.name}.{uuid.uuid4().hex}"
        trash.parent.mkdir(exist_ok=True)
        with stream.io_lock:  # not while a worker writes its snapshot: after this, it writes none
            os.replace(stream.directory, trash)
            schedule, orphans = stream.drop(trash)
        del self.streams[stream.name]
        try:
            stream.log.close()
        except OSError as exc:  # a log whose fsync failed (a broken stream): dropped all the same
            log.warning("stream %s: closing its log while dropping it: %s", stream.name, exc)
        if schedule:
            self._ready.put(stream)
        gone = f"stream {stream.name!r} was dropped"
        for requester in orphans:
            self._reply(requester.identity, Reply.failure(requester.request.id, P.NO_SUCH_STREAM, gone), "snapshot",
                        requester.t0)
        for waiter in self._waiters.pop(stream.name, []):
            if not waiter.done:
                waiter.done = True
                self._waiting -= 1
                self._reply(waiter.identity, Reply.failure(waiter.request.id, P.NO_SUCH_STREAM, gone), "predict",
                            waiter.t0)
        log.info("stream %s dropped", stream.name)
        self._name_jobs.put(("drop", stream.name, pending))
        return None

    def _dropped(self, name: str, pending: _Pending, result) -> None:
        if isinstance(result, Exception):
            log.error("stream %s: its drop may not survive a power loss: %s", name, result)
            reply = Reply.failure(pending.request.id, P.INTERNAL, f"stream {name!r} was dropped, but the folder's "
                                  f"removal could not be synced ({type(result).__name__}: {result}); after a power "
                                  "loss it may come back")
        else:
            reply = Reply.success(pending.request.id, stream=name, dropped=True)
        self._reply(pending.identity, reply, "drop", pending.t0)

    def _snapshot(self, stream: Stream, requester: _Pending | None) -> None:
        if stream.request_snapshot(requester):
            self._ready.put(stream)

    # -- statistics --------------------------------------------------------------------------------
    def stream_stats(self, stream: Stream) -> dict:
        view = stream.view
        return dict(view.stats, stream=stream.name, accepted=stream.accepted, queued=stream.queued,
                    config=config_dict(stream.config), state_bytes=stream.learner.state_bytes,
                    created=stream.created, uptime_seconds=time.time() - stream.started)

    def server_stats(self) -> dict:
        return dict(server="seqd", version=VERSION, uptime_seconds=time.time() - self.started,
                    streams=sorted(self.streams), queued=sum(s.queued for s in self.streams.values()),
                    symbols_learned=sum(s.view.position for s in self.streams.values()),
                    unavailable=dict(self.unavailable))

    # -- what the workers did ----------------------------------------------------------------------
    def _work(self) -> None:
        name_os_thread(threading.current_thread().name)
        nice = self.config.worker_nice
        if nice and hasattr(os, "setpriority"):  # Linux: a thread's own priority; the I/O loop comes first
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
            except OSError:
                pass
        wake = self._ctx.socket(zmq.PUSH)
        wake.connect("inproc://seqd-wake")
        try:
            while (stream := self._ready.get()) is not None:
                try:
                    kind, detail, more = stream.run_next()
                except Exception as exc:  # a learner that raised is in an unknown state: stop feeding it
                    log.exception("stream %s: worker failed", stream.name)
                    kind, detail, more = "fault", stream.fail(f"learning failed: {type(exc).__name__}: {exc}"), False
                if kind is not None:
                    self._outbox.put((kind, stream, detail))
                    _poke(wake)
                if more:
                    self._ready.put(stream)
        finally:
            wake.close(linger=0)

    def _take_reports(self) -> None:
        outbox = self._outbox
        while not outbox.empty():  # this loop is the only reader: what is there stays there
            kind, stream, detail = outbox.get_nowait()
            try:
                current = stream is not None and self.streams.get(stream.name) is stream
                if kind == "batch":
                    symbols, bits, seconds = detail
                    self.telemetry.batch_learned(stream, symbols, bits, seconds)
                    if current:  # a dropped stream's last batch: its name may belong to a new stream now
                        self._publish_event(stream, symbols, bits)
                        self._wake_waiters(stream)
                elif kind == "snapshot":
                    requesters, result = detail
                    self._snapshot_done(stream, requesters, result, current)
                elif kind == "fault":
                    for r in detail:
                        self._reply(r.identity, Reply.failure(r.request.id, P.INTERNAL, stream.broken), "snapshot",
                                    r.t0)
                elif kind == "synced":
                    self._syncing -= 1
                    self._acknowledge(*detail)
                elif kind == "created":
                    self._created(detail[0], detail[2])
                elif kind == "dropped":
                    self._dropped(*detail)
            except Exception:  # a fault of ours in the bookkeeping: log it, keep serving
                name = getattr(stream, "name", None) or (detail[0] if kind in ("created", "dropped") else "-")
                log.exception("handling a %s report failed (stream %s)", kind, name)

    def _publish_event(self, stream: Stream, symbols: int, bits: float) -> None:
        view = stream.view
        event = P.Event(stream=stream.name, position=view.position, symbols=symbols, bits=bits,
                        top=tuple((s, p) for s, p in view.top(EVENT_TOP)), escape=view.escape)
        try:
            self._pub.send_multipart(P.encode_event(event), zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def _wake_waiters(self, stream: Stream) -> None:
        waiters = self._waiters.get(stream.name)
        if not waiters:
            return
        position = stream.view.position
        keep = []
        for w in waiters:
            if w.done:
                continue
            if w.request.min_position <= position:
                w.done = True
                self._waiting -= 1
                self._reply(w.identity, self._prediction(w.request, stream), "predict", w.t0)
            else:
                keep.append(w)
        self._waiters[stream.name] = keep

    def _expire_waiters(self, now: float) -> None:
        while self._deadlines and self._deadlines[0].deadline <= now:
            w = heapq.heappop(self._deadlines)
            if w.done:
                continue
            w.done = True
            self._waiting -= 1
            waiters = self._waiters.get(w.request.stream)
            if waiters is not None:
                waiters.remove(w)
                if not waiters:
                    del self._waiters[w.request.stream]
            self._reply(w.identity, Reply.failure(w.request.id, P.TIMEOUT, f"stream {w.request.stream!r} did not "
                        f"reach position {w.request.min_position} within {w.request.wait_ms} ms"), "predict", w.t0)

    def _snapshot_due(self, now: float) -> None:
        c = self.config
        for stream in self.streams.values():
            if stream.snapshot_pending or stream.broken:
                continue
            behind = stream.view.position - stream.snapshot_position
            if behind >= c.snapshot_interval_symbols or (
                    behind > 0 and now - stream.snapshot_time >= c.snapshot_interval_seconds):
                self._snapshot(stream, None)

    def _stagger(self, stream: Stream) -> None:
        """Delay the stream's first periodic snapshot by a phase of its own in the interval, from its name.

        Streams created or restored together would otherwise fall due
        together, every ``snapshot_interval_seconds``, and write their
        snapshots (tens of megabytes each) in one burst that delays answers
        (``bench/snapshots.py``); spread over the interval, they come one at a
        time.  Delayed, never advanced: no stream is snapshotted more often.
        """
        phase = zlib.crc32(stream.name.encode()) / 2**32
        stream.snapshot_time += phase * self.config.snapshot_interval_seconds

    def _snapshot_done(self, stream: Stream, requesters: list[_Pending], result, current: bool) -> None:
        if not current:
            def reply(r):
                return Reply.failure(r.request.id, P.NO_SUCH_STREAM, f"stream {stream.name!r} was dropped")
        elif isinstance(result, Exception):
            log.error("stream %s: snapshot failed (the log still holds everything; next try in %g s): %s",
                      stream.name, self.config.snapshot_interval_seconds, result)
            stream.snapshot_time = time.monotonic()

            def reply(r):
                return Reply.failure(r.request.id, P.INTERNAL, f"snapshot failed: {result}")
        else:
            stream.snapshot_position = result
            try:
                stream.log.checkpoint(result)
            except OSError as exc:  # its fsync may be the one that failed: the log's durability is unknown
                if not stream.broken:
                    stream.broken = f"write-ahead log could not be synced or rotated: {exc}"
                log.error("stream %s: %s", stream.name, stream.broken)
            self.telemetry.snapshots.inc()

            def reply(r):
                return Reply.success(r.request.id, stream=stream.name, position=result)
        for r in requesters:
            self._reply(r.identity, reply(r), "snapshot", r.t0)

    # -- recovery ------------------------------------------------------------------------------------
    def _restore_streams(self) -> None:
        for unfinished in (self.state_dir / "streams").glob(".new-*"):  # a create that a crash interrupted
            shutil.rmtree(unfinished, ignore_errors=True)
        dirs = sorted(p for p in (self.state_dir / "streams").iterdir() if p.is_dir() and not p.name.startswith("."))
        if not dirs:
            return
        t0 = time.perf_counter()
        results: dict[Path, object] = {}

        def restore(path: Path) -> None:
            try:
                results[path] = Stream.open(path, fsync=self.config.fsync)
            except Exception as exc:
                results[path] = exc

        pending = list(dirs)
        threads = []
        for _ in range(min(self.config.worker_count, len(pending))):
            def run():
                while True:
                    try:
                        path = pending.pop()
                    except IndexError:
                        return
                    restore(path)
            t = threading.Thread(target=run)
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        for path in dirs:
            result = results[path]
            if isinstance(result, Stream):
                self.streams[result.name] = result
                self._stagger(result)
            else:
                why = f"{type(result).__name__}: {result}"
                self.unavailable[path.name] = why
                log.error("stream %s could not be restored (its files are left as they are): %s", path.name, why)
        log.info("restored %d stream(s) in %.1f s", len(self.streams), time.perf_counter() - t0)

    def _empty_trash(self) -> None:
        trash = self.state_dir / "trash"
        if trash.exists():
            shutil.rmtree(trash, ignore_errors=True)

    def _close(self) -> None:
        self._release()
        log.info("stopped")

    def _release(self) -> None:
        """Stop the threads and free whatever :meth:`start` opened, in order: the workers and the sync
        thread finish, their last reports are taken, the logs are synced and closed, the sockets go."""
        self._stop.set()  # a report taken below answers rather than starts work (as after a stop request)
        for _ in self._workers:
            self._ready.put(None)
        self._sync_jobs.put(None)
        self._name_jobs.put(None)
        for t in self._workers + [t for t in (self._syncer, self._namer) if t is not None]:
            t.join()
        self._take_reports()
        for stream in self.streams.values():
            try:
                stream.log.close()
            except OSError as exc:
                log.error("stream %s: closing its log: %s", stream.name, exc)
        if self._metrics_http:
            self._metrics_http.shutdown()
            self._metrics_http.server_close()
        if self._auth:
            self._auth.stop()
        for sock in (self._router, self._pub, self._wake):
            if sock is not None:
                sock.close()
        self._ctx.term()
        if self._lock_file:
            self._lock_file.close()


def _stopping(req: Request) -> Reply:
    """The answer to a publish or a create that comes while the server stops."""
    return Reply.failure(req.id, P.SHUTTING_DOWN, f"the server is stopping; {req.op} again once it is back")


def name_os_thread(name: str, native_id: int | None = None) -> None:
    """Name a thread of this process for the operating system (its first 15 bytes): the calling one, or
    the one with ``native_id``.  ``top -H``, ``ps -L`` and ``/proc/<pid>/task/*/comm`` then tell the I/O
    loop, the workers and the sync thread apart.  Linux only (``/proc``); elsewhere nothing happens."""
    tid = threading.get_native_id() if native_id is None else native_id
    try:
        Path(f"/proc/self/task/{tid}/comm").write_bytes(name.encode()[:15])
    except OSError:
        pass


def _poke(wake: zmq.Socket) -> None:
    """Wake the I/O loop.  A full pipe means wake-ups are already waiting to be read: this one may go."""
    try:
        wake.send(b"", zmq.NOBLOCK)
    except zmq.Again:
        pass

