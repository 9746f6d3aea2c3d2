"""The daemon's I/O loop: one thread owns every socket, answers what it can at once, and hands the rest on.

The loop (:meth:`Server.serve`) takes the requests that are waiting (a
burst) and lets :mod:`.requests` decide each one: a reply, sent at once from
the streams' views, or a deferral.  Published batches are appended to their
write-ahead logs there; a sync thread then fsyncs each touched log once
(group commit) while the loop goes on answering, and only then are the
batches acknowledged and handed to the workers.  Workers run the Numba
kernels, which release the GIL, so the loop keeps answering while streams
learn; they, the sync thread and the namespace thread (:mod:`.background`)
report back with :mod:`.reports` on a queue and a wake-up socket, and the
loop answers what was waiting and publishes prediction events.  Predicts
waiting for a position are kept by :mod:`.waiters`; the state directory is
:mod:`.state_dir`; a stream's states are :mod:`.lifecycle`.
``docs/daemon.md`` has the picture; ``docs/protocol.md`` the messages.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

import zmq
from prometheus_client import CollectorRegistry

from .. import __version__
from ..clients import protocol as P
from ..clients.protocol import Reply
from . import background
from .background import name_os_thread
from .config import ServeConfig
from .metrics import Telemetry, start_metrics_server
from .reports import Created, CreateFailed, DropSynced, Faulted, Learned, SnapshotFailed, SnapshotWritten, Synced
from .requests import (AwaitNamespace, AwaitSync, AwaitWorker, Deferral, Pending, Requests, prediction,
                       stopping)
from .state_dir import StateDirectory
from .streams import Stream, config_dict
from .waiters import Waiters

log = logging.getLogger("seqd")

BURST = 256  # requests taken per turn of the loop before the logs are synced
EVENT_TOP = 5  # symbols in each prediction event
HOUSEKEEPING_SECONDS = 0.25  # how often waiters are expired and periodic snapshots are looked for
# pyzmq's flags as plain ints: combining its enum members builds a new Flag object each time, on every reply
_NOBLOCK, _SNDMORE, _POLLIN = int(zmq.NOBLOCK), int(zmq.SNDMORE), int(zmq.POLLIN)


class Server:
    def __init__(self, config: ServeConfig, *, registry: CollectorRegistry | None = None):
        self.config = config
        self.limits = P.Limits(max_message_bytes=config.max_message_bytes,
                               max_batch_symbols=config.max_batch_symbols)
        self.state = StateDirectory(config.state_dir)
        self.state_dir = self.state.path
        self.registry = registry if registry is not None else CollectorRegistry()
        self._stop = threading.Event()
        self.waiters = Waiters()  # predicts waiting for a position
        self.requests = Requests(config, self.state, self.waiters, stopping=self._stop.is_set)
        self.streams: dict[str, Stream] = self.requests.streams
        self.unavailable: dict[str, str] = self.requests.unavailable  # streams not restored: name -> why
        self._creating: dict[str, Pending] = self.requests.creating  # names being created -> the request
        self.telemetry = Telemetry(self.registry, streams=lambda: list(self.streams.values()),
                                   unavailable=lambda: len(self.unavailable), labelled=config.labelled)
        self._ready: queue.SimpleQueue = queue.SimpleQueue()  # streams with work, for the workers
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()  # reports of the background threads, for the loop
        self._workers: list[threading.Thread] = []
        self._sync_jobs: queue.SimpleQueue = queue.SimpleQueue()  # acknowledgements waiting for an fsync
        self._syncing = 0  # sync jobs under way
        self._name_jobs: queue.SimpleQueue = queue.SimpleQueue()  # creations and drops, for the namespace thread
        self._namer: threading.Thread | None = None
        self._ctx = zmq.Context()
        self._auth = None
        self._metrics_http = None
        self.api_endpoint = self.pub_endpoint = None
        self._router = self._pub = self._wake = None  # opened by start()
        self._syncer: threading.Thread | None = None

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
        self.state.lock()
        self.state.empty_trash()
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
        self._wake.bind(background.WAKE_ENDPOINT)
        for i in range(self.config.worker_count):
            t = threading.Thread(target=background.work, name=f"seqd-worker-{i}", daemon=True,
                                 args=(self._ready, self._outbox, self._ctx, self.config.worker_nice))
            t.start()
            self._workers.append(t)
        self._syncer = threading.Thread(target=background.sync, name="seqd-sync", daemon=True,
                                        args=(self._sync_jobs, self._outbox, self._ctx))
        self._syncer.start()
        self._namer = threading.Thread(target=background.namespace, name="seqd-namespace", daemon=True,
                                       args=(self._name_jobs, self._outbox, self._ctx, self.state.streams,
                                             self.config.fsync))
        self._namer.start()
        if self.config.metrics_port:
            try:
                self._metrics_http, thread = start_metrics_server(self.registry, self.config.metrics_host,
                                                                  self.config.metrics_port)
                name_os_thread("seqd-metrics", thread.native_id)
            except OSError as exc:
                raise ValueError(f"cannot serve metrics on {self.config.metrics_host}:{self.config.metrics_port}: "
                                 f"{exc.strerror or exc}") from None
        log.info("seqd %s serving %d stream(s): api %s, pub %s, metrics %s, state %s, %d worker(s)", __version__,
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
                timeout = max(0.0, min(next_housekeeping, self.waiters.next_deadline()) - now)
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
                    next_housekeeping = now + HOUSEKEEPING_SECONDS
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

    def _take_requests(self) -> None:
        """A burst of requests; batches are acknowledged after one sync per touched log."""
        acks: list[AwaitSync] = []
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
            pending = Pending(identity, req, t0)
            try:
                outcome = self.requests.handle(pending)
                reply = outcome if isinstance(outcome, Reply) else self._defer(outcome, acks)
            except P.ProtocolError as exc:
                reply = Reply.failure(req.id, exc.code, exc.message, exc.retry_after_ms)
            except Exception as exc:  # a fault of ours: the daemon must survive it, and say so
                log.exception("request %s %s failed", req.op, req.stream)
                reply = Reply.failure(req.id, P.INTERNAL, f"{type(exc).__name__}: {exc}")
            if reply is not None:
                self._reply(identity, reply, req.op, t0)
        if acks:
            self._commit(acks)

    def _defer(self, deferral: Deferral, acks: list[AwaitSync]) -> None:
        """Hand a deferred request to whoever answers it (the predicts waiting for a position are already
        in :attr:`waiters`)."""
        if isinstance(deferral, AwaitSync):
            acks.append(deferral)
        elif isinstance(deferral, AwaitWorker):
            if deferral.schedule is not None:
                self._ready.put(deferral.schedule)
        elif isinstance(deferral, AwaitNamespace):
            if deferral.schedule is not None:
                self._ready.put(deferral.schedule)
            for pending, reply, op in deferral.answers:
                self._reply(pending.identity, reply, op, pending.t0)
            self._name_jobs.put(deferral.job)

    def _commit(self, acks: list[AwaitSync]) -> None:
        """Group commit: one fsync per touched log, in the sync thread, while this loop goes on answering;
        the batches are acknowledged and queued when it reports back (:meth:`_acknowledge`)."""
        if not self.config.fsync:
            self._acknowledge(acks, {})
            return
        self._syncing += 1
        self._sync_jobs.put(tuple(acks))

    def _acknowledge(self, acks, failed: dict[str, str]) -> None:
        for ack in acks:
            pending, stream, symbols = ack.pending, ack.stream, ack.symbols
            req = pending.request
            stream.syncing -= len(symbols)
            stream.syncing_batches -= 1
            if stream.dropped:
                self._reply(pending.identity, Reply.failure(req.id, P.NO_SUCH_STREAM, f"stream {stream.name!r} was "
                            "dropped before this batch was acknowledged"), req.op, pending.t0)
                continue
            if stream.name in failed and not stream.broken:
                stream.mark_broken(failed[stream.name])
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

    # -- what the background threads did -------------------------------------------------------------
    def _take_reports(self) -> None:
        outbox = self._outbox
        while not outbox.empty():  # this loop is the only reader: what is there stays there
            report = outbox.get_nowait()
            try:
                self._on_report(report)
            except Exception:  # a fault of ours in the bookkeeping: log it, keep serving
                name = report.stream.name if hasattr(report, "stream") else getattr(report, "name", "-")
                log.exception("handling a %s report failed (stream %s)", type(report).__name__, name)

    def _on_report(self, report) -> None:
        if isinstance(report, Learned):
            stream = report.stream
            self.telemetry.batch_learned(stream, report.symbols, report.bits, report.seconds)
            if self.streams.get(stream.name) is stream:  # a dropped stream's last batch: its name may be reused
                self._publish_event(stream, report.symbols, report.bits)
                self._wake_waiters(stream)
        elif isinstance(report, (SnapshotWritten, SnapshotFailed)):
            self._snapshot_done(report, self.streams.get(report.stream.name) is report.stream)
        elif isinstance(report, Faulted):
            for r in report.orphans:
                self._reply(r.identity, Reply.failure(r.request.id, P.INTERNAL, report.stream.broken), "snapshot",
                            r.t0)
        elif isinstance(report, Synced):
            self._syncing -= 1
            self._acknowledge(report.acks, report.failed)
        elif isinstance(report, (Created, CreateFailed)):
            self._created(report)
        elif isinstance(report, DropSynced):
            self._dropped(report)

    def _created(self, report: Created | CreateFailed) -> None:
        """The namespace thread's report on a create: the stream is registered (or refused), and the request
        answered (a publish with ``create`` is published now)."""
        pending, failure = self.requests.created(report)
        self._answer_created(report.name, pending, failure)

    def _answer_created(self, name: str, pending: Pending, failure: tuple[str, str] | None) -> None:
        req, acks = pending.request, []
        if failure is not None:
            reply = Reply.failure(req.id, *failure)
        elif req.op == "create":
            reply = Reply.success(req.id, stream=name, created=True, config=config_dict(self.streams[name].config))
        elif self._stop.is_set():
            reply = stopping(req)
        else:
            outcome = self.requests.publish(pending, self.streams[name])
            reply = outcome if isinstance(outcome, Reply) else self._defer(outcome, acks)
        if reply is not None:
            self._reply(pending.identity, reply, req.op, pending.t0)
        if acks:
            self._commit(acks)

    def _dropped(self, report: DropSynced) -> None:
        """The namespace thread's report on a drop: answer it, saying whether the drop is durable."""
        pending, name, error = report.requester, report.stream.name, report.error
        if error is not None:
            log.error("stream %s: its drop may not survive a power loss: %s", name, error)
            reply = Reply.failure(pending.request.id, P.INTERNAL, f"stream {name!r} was dropped, but the folder's "
                                  f"removal could not be synced ({type(error).__name__}: {error}); after a power "
                                  "loss it may come back")
        else:
            reply = Reply.success(pending.request.id, stream=name, dropped=True)
        self._reply(pending.identity, reply, "drop", pending.t0)
        report.stream.forget()

    def _publish_event(self, stream: Stream, symbols: int, bits: float) -> None:
        view = stream.view
        event = P.Event(stream=stream.name, position=view.position, symbols=symbols, bits=bits,
                        top=tuple((s, p) for s, p in view.top(EVENT_TOP)), escape=view.escape)
        try:
            self._pub.send_multipart(P.encode_event(event), zmq.NOBLOCK)
        except zmq.ZMQError:
            pass

    def _wake_waiters(self, stream: Stream) -> None:
        for w in self.waiters.wake(stream.name, stream.view.position):
            self._reply(w.identity, prediction(w.request, stream), "predict", w.t0)

    def _expire_waiters(self, now: float) -> None:
        for w in self.waiters.expire(now):
            self._reply(w.identity, Reply.failure(w.request.id, P.TIMEOUT, f"stream {w.request.stream!r} did not "
                        f"reach position {w.request.min_position} within {w.request.wait_ms} ms"), "predict", w.t0)

    # -- snapshots -----------------------------------------------------------------------------------
    def _snapshot(self, stream: Stream, requester: Pending | None) -> None:
        if stream.request_snapshot(requester):
            self._ready.put(stream)

    def _snapshot_due(self, now: float) -> None:
        c = self.config
        for stream in self.streams.values():
            if stream.snapshot_pending or stream.broken:
                continue
            behind = stream.view.position - stream.snapshot_position
            if behind >= c.snapshot_interval_symbols or (
                    behind > 0 and now - stream.snapshot_time >= c.snapshot_interval_seconds):
                self._snapshot(stream, None)

    def _snapshot_done(self, report: SnapshotWritten | SnapshotFailed, current: bool) -> None:
        stream = report.stream
        if not current:
            def reply(r):
                return Reply.failure(r.request.id, P.NO_SUCH_STREAM, f"stream {stream.name!r} was dropped")
        elif isinstance(report, SnapshotFailed):
            result = report.error
            log.error("stream %s: snapshot failed (the log still holds everything; next try in %g s): %s",
                      stream.name, self.config.snapshot_interval_seconds, result)
            stream.snapshot_time = time.monotonic()

            def reply(r):
                return Reply.failure(r.request.id, P.INTERNAL, f"snapshot failed: {result}")
        else:
            result = report.position
            stream.snapshot_position = result
            try:
                stream.log.checkpoint(result)
            except OSError as exc:  # its fsync may be the one that failed: the log's durability is unknown
                stream.mark_broken(f"write-ahead log could not be synced or rotated: {exc}")
                log.error("stream %s: %s", stream.name, stream.broken)
            self.telemetry.snapshots.inc()

            def reply(r):
                return Reply.success(r.request.id, stream=stream.name, position=result)
        for r in report.requesters:
            self._reply(r.identity, reply(r), "snapshot", r.t0)

    # -- recovery ------------------------------------------------------------------------------------
    def _restore_streams(self) -> None:
        t0 = time.perf_counter()
        restored = self.state.restore(threads=self.config.worker_count, fsync=self.config.fsync)
        if not restored:
            return
        for path, result in restored:
            if isinstance(result, Stream):
                result.go_live()
                self.streams[result.name] = result
                result.stagger(self.config.snapshot_interval_seconds)
            else:
                why = f"{type(result).__name__}: {result}"
                self.unavailable[path.name] = why
                log.error("stream %s could not be restored (its files are left as they are): %s", path.name, why)
        log.info("restored %d stream(s) in %.1f s", len(self.streams), time.perf_counter() - t0)

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
        self.state.unlock()
