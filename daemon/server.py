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
loop answers what was waiting and publishes prediction events.

What a decoded request, a report, a tick of the clock or a stop comes to
is decided by :mod:`.completions`, as plain data (an ``Outcome``: replies,
streams for the workers, jobs for the sync and namespace threads, events);
this module carries it out with its sockets and queues, and otherwise only
starts, polls, reads, decodes, encodes, sends and stops.  Predicts waiting for a
position are kept by :mod:`.waiters`; the state directory is
:mod:`.state_dir`; a stream's states are :mod:`.lifecycle`.
``docs/daemon.md`` has the picture; ``docs/protocol.md`` the messages.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

import zmq
import zmq.utils.monitor
from prometheus_client import CollectorRegistry

from .. import __version__
from ..clients import protocol as P
from ..clients.protocol import Reply
from . import background
from .background import name_os_thread
from .budget import map_large_allocations
from .completions import Completions, Outcome
from .config import ServeConfig
from .health import Health
from .metrics import Telemetry, start_metrics_server
from .pending import AwaitSync, Pending
from .requests import Requests
from .state_dir import StateDirectory
from .streams import Stream
from .waiters import Waiters

log = logging.getLogger("seqd")

BURST = 256  # requests taken per turn of the loop before the logs are synced
HOUSEKEEPING_SECONDS = 0.25  # how often waiters are expired and periodic snapshots are looked for
PROGRESS_SECONDS = 5.0  # how often a long restore says how far it is
# pyzmq's flags as plain ints: combining its enum members builds a new Flag object each time, on every reply
_NOBLOCK, _SNDMORE, _POLLIN = int(zmq.NOBLOCK), int(zmq.SNDMORE), int(zmq.POLLIN)


class Server:
    """One daemon over one state directory: :meth:`start`, then :meth:`serve` until :meth:`request_stop`."""

    def __init__(self, config: ServeConfig, *, registry: CollectorRegistry | None = None):
        self.config = config
        self.limits = P.Limits(max_message_bytes=config.max_message_bytes,
                               max_batch_symbols=config.max_batch_symbols)
        self.state = StateDirectory(config.state_dir)
        self.state_dir = self.state.path
        self.registry = registry if registry is not None else CollectorRegistry()
        self._stop = threading.Event()
        self.health = Health()  # /healthz, /readyz and systemd's notify protocol
        self.waiters = Waiters()  # predicts waiting for a position
        self.requests = Requests(config, self.state, self.waiters, stopping=self._stop.is_set)
        self.streams: dict[str, Stream] = self.requests.streams
        self.unavailable: dict[str, str] = self.requests.unavailable  # streams not restored: name -> why
        self.telemetry = Telemetry(self.registry, streams=lambda: list(self.streams.values()),
                                   unavailable=lambda: len(self.unavailable), labelled=config.labelled,
                                   state_limit=config.max_state_bytes)
        self.completions = Completions(config, self.requests, self.telemetry, stopping=self._stop.is_set)
        self._ready: queue.SimpleQueue = queue.SimpleQueue()  # streams with work, for the workers
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()  # reports of the background threads, for the loop
        self._workers: list[threading.Thread] = []
        self._sync_jobs: queue.SimpleQueue = queue.SimpleQueue()  # acknowledgements waiting for an fsync
        self._name_jobs: queue.SimpleQueue = queue.SimpleQueue()  # creations and drops, for the namespace thread
        self._namer: threading.Thread | None = None
        self._ctx = zmq.Context()
        self._auth = None
        self._metrics_http = None
        self.api_endpoint = self.pub_endpoint = None
        self._router = self._pub = self._wake = self._closed = None  # opened by start()
        self._syncer: threading.Thread | None = None

    # -- start and stop ----------------------------------------------------------------------
    def start(self) -> None:
        """Lock the state directory, restore every stream, bind the sockets, start the workers and the
        metrics endpoint.  A failure (ValueError, with the reason) leaves nothing open."""
        try:
            self._start()
        except BaseException:
            self._release()  # what a failed start opened
            raise

    def _start(self) -> None:
        map_large_allocations()  # before the restore's snapshots are read
        self.state.lock()
        self.state.empty_trash()
        self._start_metrics()  # first: the probes say how far the restore is
        self.requests.restore_streams(progress=self._restore_progress())
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
        # the API socket's closed connections, to free the places of the predicts that waited over them
        self._closed = self._router.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        for i in range(self.config.worker_count):
            self._workers.append(_started(background.work, f"seqd-worker-{i}", self._ready, self._outbox, self._ctx,
                                          self.config.worker_nice))
        self._syncer = _started(background.sync, "seqd-sync", self._sync_jobs, self._outbox, self._ctx)
        self._namer = _started(background.namespace, "seqd-namespace", self._name_jobs, self._outbox, self._ctx,
                               self.state.streams, self.config.fsync)
        log.info("seqd %s serving %d stream(s): api %s, pub %s, metrics %s, state %s, %d worker(s)", __version__,
                 len(self.streams), self.api_endpoint, self.pub_endpoint, self.metrics_url or "off", self.state_dir,
                 len(self._workers))

    def _start_metrics(self) -> None:
        if not self.config.metrics_port:
            return
        try:
            self._metrics_http, thread = start_metrics_server(self.registry, self.config.metrics_host,
                                                              self.config.metrics_port, self.health)
            name_os_thread("seqd-metrics", thread.native_id)
        except OSError as exc:
            raise ValueError(f"cannot serve metrics on {self.config.metrics_host}:{self.config.metrics_port}: "
                             f"{exc.strerror or exc}") from None

    def _restore_progress(self):
        """What the restore calls as it opens streams: the health probes and the metric follow each one; a log
        line comes every :data:`PROGRESS_SECONDS`, and at the end."""
        t0 = time.monotonic()
        said = [t0]

        def progress(done: int, total: int) -> None:
            self.health.restoring(done, total)
            self.telemetry.restore_remaining.set(total - done)
            now = time.monotonic()
            if now - said[0] >= PROGRESS_SECONDS or (done == total and now - t0 >= PROGRESS_SECONDS):
                said[0] = now
                log.info("restoring streams: %d of %d (%.0f s)", done, total, now - t0)

        return progress

    @property
    def metrics_url(self) -> str | None:
        if not self._metrics_http:
            return None
        host, port = self._metrics_http.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def request_stop(self) -> None:
        """Begin an orderly stop (safe from a signal handler or another thread)."""
        self._stop.set()

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
        poller.register(self._closed, zmq.POLLIN)
        next_housekeeping = 0.0
        self.health.serving()
        try:
            while True:
                self.health.turned()
                now = time.monotonic()
                timeout = max(0.0, min(next_housekeeping, self.waiters.next_deadline()) - now)
                ready = dict(poller.poll(int(timeout * 1000) + 1))
                if self._wake in ready:
                    while self._wake.poll(0):
                        self._wake.recv()
                self._take_reports()
                if self._closed in ready:  # before the requests: a descriptor may be reused at once
                    self._take_closed_connections()
                if self._router in ready:
                    self._take_requests()
                now = time.monotonic()
                if now >= next_housekeeping:
                    self._carry_out(self.completions.tick(now))
                    next_housekeeping = now + HOUSEKEEPING_SECONDS
                if self._stop.is_set():
                    self.health.stopping()
                    outcome, finished = self.completions.wind_down()
                    self._carry_out(outcome)
                    if finished:
                        self._take_reports()
                        break
        finally:
            self._release()
            log.info("stopped")

    def _take_requests(self) -> None:
        """A burst of requests; batches are acknowledged after one sync per touched log."""
        acks: list[AwaitSync] = []
        router = self._router
        for _ in range(BURST):
            if not router.getsockopt(zmq.EVENTS) & _POLLIN:  # (a zmq.Again raised to end each burst costs more)
                break
            try:
                frames = router.recv_multipart(_NOBLOCK, copy=False)
            except zmq.Again:
                break
            t0 = time.perf_counter()
            identity = frames[0].bytes
            connection = _connection(frames[0])
            frames = [identity] + [f.bytes for f in frames[1:]]
            if len(frames) != 2:
                self._reply(identity, Reply.failure(0, P.BAD_REQUEST, f"a request is one frame, got "
                                                                      f"{len(frames) - 1}"), "invalid", t0)
                continue
            try:
                req = P.decode_request(frames[1], self.limits)
            except P.ProtocolError as exc:
                self._reply(identity, Reply.failure(P.request_id(frames[1]), exc.code, exc.message), "invalid", t0)
                continue
            self._carry_out(self.completions.request(Pending(identity, req, t0, connection=connection), acks))
        if acks:
            self._carry_out(self.completions.commit(acks))

    def _take_closed_connections(self) -> None:
        """The API socket's monitor says which connections closed: their waiting predicts are released."""
        while self._closed.poll(0):
            event = zmq.utils.monitor.recv_monitor_message(self._closed)
            if event["event"] == zmq.EVENT_DISCONNECTED:
                self._carry_out(self.completions.disconnected(int(event["value"])))

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

    def _carry_out(self, outcome: Outcome) -> None:
        """Do what :mod:`.completions` decided, in the order :class:`~.completions.Outcome` gives."""
        for stream in outcome.schedule:
            self._ready.put(stream)
        for event in outcome.events:
            try:
                self._pub.send_multipart(P.encode_event(event), zmq.NOBLOCK)
            except zmq.ZMQError:
                pass
        for pending, reply, op in outcome.replies:
            self._reply(pending.identity, reply, op, pending.t0)
        for acks in outcome.syncs:
            self._sync_jobs.put(acks)
        for job in outcome.jobs:
            self._name_jobs.put(job)

    def _take_reports(self) -> None:
        outbox = self._outbox
        while not outbox.empty():  # this loop is the only reader: what is there stays there
            report = outbox.get_nowait()
            try:
                self._carry_out(self.completions.report(report))
            except Exception:  # a fault of ours in carrying it out: log it, keep serving the other reports
                log.exception("carrying out what a %s report meant failed", type(report).__name__)

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
        if self._closed is not None:
            self._router.disable_monitor()
            self._closed.close()
        for sock in (self._router, self._pub, self._wake):
            if sock is not None:
                sock.close()
        self._ctx.term()
        self.state.unlock()


def _connection(frame: zmq.Frame) -> int:
    """The descriptor of the connection a request came over (what the socket monitor names when it
    closes), or -1 where libzmq does not say."""
    try:
        return int(frame.get(zmq.SRCFD))
    except (zmq.ZMQError, AttributeError, TypeError):
        return -1


def _started(target, name: str, *args) -> threading.Thread:
    """A background thread (:mod:`.background`), started."""
    thread = threading.Thread(target=target, name=name, daemon=True, args=args)
    thread.start()
    return thread
