"""Prometheus telemetry: event counters kept as they happen, stream gauges read at scrape time.

Names follow the Prometheus conventions: a ``seqd_`` prefix, base units
(seconds, bits), ``_total`` on counters, histograms for durations.  Labels are
bounded: ``kind`` is a protocol operation (or ``invalid``), ``outcome`` is
``ok`` or a protocol error code, and ``stream`` appears only for the streams
the configuration selects (``[metrics] stream_labels``, patterns, and at most
``max_labelled_streams`` of them).

The registry is passed in (tests use their own); nothing registers itself as
a side effect of an import.  The collector reads the daemon through the few
callables it is given (the streams, how many are unavailable, which are
labelled), never through the server itself.
"""

from __future__ import annotations

import socket
import threading
from socketserver import ThreadingMixIn
from typing import TYPE_CHECKING, Callable, Iterable
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.process_collector import ProcessCollector

from .budget import STREAM_BYTES

if TYPE_CHECKING:
    from .health import Health
    from .streams import Stream

# request latencies, from 50 µs (a predict answered from a view) to 5 s
REQUEST_BUCKETS = (5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 5.0)
# waking a hibernated learner: reading, inflating and checking its snapshot
WAKE_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.175, 0.2, 0.3, 0.5, 1.0, 2.0, 5.0)
# learning one batch (up to models.CHUNK symbols at some 60,000 symbols/s)
LEARN_BUCKETS = (1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.25, 0.5, 1.0, 2.0)


def build_labels() -> dict[str, str]:
    """``seqd_build_info``'s labels: seqd's version, its byte preset, and Python's, NumPy's and Numba's."""
    import platform

    import numba
    import numpy

    from .. import __version__
    from ..core.faces import DEFAULT

    return {"version": __version__, "byte_preset": DEFAULT.versions.preset,
            "python": platform.python_version(), "numpy": numpy.__version__, "numba": numba.__version__}


class Telemetry:
    """The daemon's metrics, on ``registry``; the stream gauges read what :class:`StreamCollector` is given."""

    def __init__(self, registry: CollectorRegistry, *, streams: Callable[[], Iterable["Stream"]],
                 unavailable: Callable[[], int], labelled: Callable[[Iterable[str]], Iterable[str]],
                 state_limit: int | None = None):
        self.requests = Counter("seqd_requests", "Requests answered, by operation and outcome.",
                                ["kind", "outcome"], registry=registry)
        self.request_seconds = Histogram("seqd_request_duration_seconds",
                                         "Time from a request's arrival to its reply.", ["kind"],
                                         buckets=REQUEST_BUCKETS, registry=registry)
        self.learn_seconds = Histogram("seqd_learn_batch_duration_seconds", "Time a worker took to learn one batch.",
                                       buckets=LEARN_BUCKETS, registry=registry)
        self.symbols_accepted = Counter("seqd_symbols_accepted", "Symbols acknowledged (in a write-ahead log).",
                                        registry=registry)
        self.symbols_learned = Counter("seqd_symbols_learned", "Symbols learned, all streams together.",
                                       registry=registry)
        self.code_bits = Counter("seqd_code_length", "Prequential code length of the learned symbols, in bits; "
                                 "rate(seqd_code_length_total) / rate(seqd_symbols_learned_total) is the "
                                 "compression rate in bits per symbol.", registry=registry)
        self.snapshots = Counter("seqd_snapshots", "Stream snapshots written.", registry=registry)
        self.hibernations = Counter("seqd_hibernations", "Learners that went to their snapshots (idle, or to keep "
                                    "the learners within max_state_bytes).", registry=registry)
        self.wake_seconds = Histogram("seqd_wake_duration_seconds", "Bringing a hibernated learner back from its "
                                      "snapshot, before the batch that woke it is learned.",
                                      buckets=WAKE_BUCKETS, registry=registry)
        self.room_waits = Counter("seqd_room_waits", "Wakes and creations that found no room within "
                                  "max_state_bytes and waited for idle learners to hibernate.", registry=registry)
        self.restore_remaining = Gauge("seqd_restore_streams_remaining", "Streams still to restore at start "
                                       "(0 once every stream is restored or refused).", registry=registry)
        Info("seqd_build", "The running seqd: its version and the versions it computes with.",
             registry=registry).info(build_labels())
        self._request_children: dict[tuple[str, str], tuple] = {}  # (kind, outcome) -> their two children
        registry.register(StreamCollector(streams=streams, unavailable=unavailable, labelled=labelled))
        if state_limit is not None:
            Gauge("seqd_state_bytes_limit", "The streams' memory budget (max_state_bytes).",
                  registry=registry).set(state_limit)
        ProcessCollector(registry=registry)

    def request_done(self, kind: str, outcome: str, seconds: float) -> None:
        children = self._request_children.get((kind, outcome))
        if children is None:  # kinds and outcomes are bounded sets: so is this cache
            children = self._request_children[kind, outcome] = (self.requests.labels(kind, outcome),
                                                                  self.request_seconds.labels(kind))
        children[0].inc()
        children[1].observe(seconds)

    def batch_learned(self, stream: "Stream", symbols: int, bits: float, seconds: float) -> None:
        self.symbols_learned.inc(symbols)
        self.code_bits.inc(bits)
        self.learn_seconds.observe(seconds)

    def hibernated(self) -> None:
        self.hibernations.inc()

    def woken(self, seconds: float) -> None:
        self.wake_seconds.observe(seconds)


class StreamCollector:
    """Reads the streams at scrape time (from the views the workers publish: no lock on a learner).

    ``streams()`` gives the streams served, ``unavailable()`` how many could
    not be restored, and ``labelled(names)`` the names that get series of their
    own (``ServeConfig.labelled``).
    """

    def __init__(self, *, streams: Callable[[], Iterable["Stream"]], unavailable: Callable[[], int],
                 labelled: Callable[[Iterable[str]], Iterable[str]]):
        self.streams = streams
        self.unavailable = unavailable
        self.labelled = labelled

    def describe(self):
        return []  # collected on every scrape; no fixed description

    def collect(self):
        streams = list(self.streams())
        yield GaugeMetricFamily("seqd_streams", "Streams being served.", value=len(streams))
        yield GaugeMetricFamily("seqd_streams_unavailable", "Streams whose files could not be restored.",
                                value=self.unavailable())
        yield GaugeMetricFamily("seqd_streams_repaired", "Streams whose damaged write-ahead log this start cut "
                                "where the damage began (seqd serve --repair); their stats say what was lost.",
                                value=sum(1 for s in streams if s.repaired is not None))
        yield GaugeMetricFamily("seqd_streams_torn_writes", "Streams whose log ended in a write a crash cut short, "
                                "dropped at this start (never acknowledged: nothing lost).",
                                value=sum(1 for s in streams if s.torn))
        yield GaugeMetricFamily("seqd_streams_broken", "Streams that refuse batches until a restart: their "
                                "write-ahead log failed (a write or an fsync), or their learning did.",
                                value=sum(1 for s in streams if s.broken))
        yield GaugeMetricFamily("seqd_queue_symbols", "Symbols accepted and not yet learned, all streams.",
                                value=sum(s.queued for s in streams))
        yield GaugeMetricFamily("seqd_state_bytes", "Memory held by the streams, counted against max_state_bytes: "
                                "the learners in memory (not hibernated) and every stream's view and statistics.",
                                value=sum(STREAM_BYTES + (s.learner_bytes if s.resident else 0) for s in streams))
        yield GaugeMetricFamily("seqd_streams_resident", "Streams whose learner is in memory; the others are "
                                "hibernated to their snapshots.", value=sum(1 for s in streams if s.resident))
        chosen = set(self.labelled(s.name for s in streams))
        labelled = [s for s in streams if s.name in chosen]
        learned = CounterMetricFamily("seqd_stream_symbols_learned", "Symbols a stream has learned.",
                                      labels=["stream"])
        code = CounterMetricFamily("seqd_stream_code_length", "A stream's prequential code length, in bits.",
                                   labels=["stream"])
        recent = GaugeMetricFamily("seqd_stream_code_length_per_symbol",
                                   "A stream's code length per symbol, in bits, over its last 4096 symbols.", labels=["stream"])
        queued = GaugeMetricFamily("seqd_stream_queue_symbols", "A stream's symbols waiting to be learned.",
                                   labels=["stream"])
        alphabet = GaugeMetricFamily("seqd_stream_alphabet_size", "Distinct symbols a stream has seen.",
                                     labels=["stream"])
        for s in labelled:
            stats = s.view.stats
            learned.add_metric([s.name], stats["position"])
            code.add_metric([s.name], stats["code_bits"])
            if stats["recent_bits_per_symbol"] is not None:
                recent.add_metric([s.name], stats["recent_bits_per_symbol"])
            queued.add_metric([s.name], s.queued)
            alphabet.add_metric([s.name], stats["alphabet_size"])
        yield from (learned, code, recent, queued, alphabet)


def start_metrics_server(registry: CollectorRegistry, host: str, port: int, health: "Health"):
    """Serve ``registry`` at http://host:port/metrics, and ``health`` at /healthz and /readyz, in a thread;
    every other path is 404.  Returns the HTTP server (``shutdown()``) and its thread."""
    metrics = make_wsgi_app(registry)

    def app(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return metrics(environ, start_response)
        if path in ("/healthz", "/readyz"):
            ok, text = health.live() if path == "/healthz" else health.ready()
            start_response("200 OK" if ok else "503 Service Unavailable",
                           [("Content-Type", "text/plain; charset=utf-8"), ("Cache-Control", "no-store")])
            return [text.encode()]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found: seqd serves /metrics, /healthz and /readyz here\n"]

    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]  # an IPv6 address binds as IPv6
    server_class = type("MetricsServer", (_ThreadingWSGIServer,), {"address_family": family})
    httpd = make_server(host, port, app, server_class, handler_class=_QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, name="seqd-metrics", daemon=True)
    thread.start()
    return httpd, thread


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """A scrape or a probe each in its own thread: a slow client holds up no other."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # scrapes and probes every few seconds: not for the log
        pass
