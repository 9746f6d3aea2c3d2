"""``seqd serve``: run the daemon until SIGTERM or SIGINT, then stop in order and exit 0."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from seqd.daemon.config import ServeConfig

log = logging.getLogger("seqd")


def configure(p: argparse.ArgumentParser) -> None:
    p.description = ("Run the seqd daemon. Settings come from the defaults, then --config FILE (TOML, see "
                     "deploy/seqd.toml), then these flags. SIGTERM or SIGINT: stop accepting, finish queued work, "
                     "snapshot every stream, exit 0 (a second signal exits at once; the write-ahead logs still hold "
                     "every acknowledged batch).")
    p.add_argument("--config", metavar="FILE", help="TOML configuration file")
    p.add_argument("--state-dir", metavar="DIR", help="streams' snapshots and write-ahead logs "
                                                      "(default: $XDG_STATE_HOME/seqd or ~/.local/state/seqd)")
    p.add_argument("--api", metavar="ENDPOINT", help="request socket (default tcp://127.0.0.1:7710)")
    p.add_argument("--pub", metavar="ENDPOINT", help="prediction events (default tcp://127.0.0.1:7711)")
    p.add_argument("--metrics-host", metavar="HOST", help="metrics HTTP address (default 127.0.0.1)")
    p.add_argument("--metrics-port", metavar="N", type=int, help="metrics HTTP port (default 9710; 0: off)")
    p.add_argument("--workers", metavar="N", type=int, help="learning threads (default: one per core)")
    p.add_argument("--no-fsync", dest="fsync", action="store_const", const=False,
                   help="acknowledge batches without waiting for the disk (faster; a machine crash may lose "
                        "acknowledged batches)")
    p.add_argument("--repair", action="store_true",
                   help="serve streams whose write-ahead log is damaged, cutting each log where its damage starts "
                        "(the symbols after it are lost; each repair is logged and shown in the stream's stats). "
                        "Without it such a stream is left out of service, its files untouched")
    p.add_argument("--demo", action="store_true",
                   help="also feed a built-in stream ('demo': seed 000's alphabet with insertions) through the "
                        "client library and print the daemon's live predictions and bits per symbol")
    cluster = p.add_argument_group("cluster (docs/cluster.md; needs pip install 'seqd[cluster]')")
    cluster.add_argument("--cluster", metavar="URLS",
                         help="run as a replica of the cluster on these NATS servers (comma-separated nats:// URLs; or "
                              "[cluster] servers in the file): "
                              "the streams live in JetStream, requests come over NATS, and --api, --pub and "
                              "--state-dir do not apply")
    cluster.add_argument("--member", metavar="ID", help="this replica's id in the cluster (default: host-pid)")
    cluster.add_argument("--partitions", metavar="N", type=int,
                         help="partitions, fixed when the cluster is created (default 16)")
    cluster.add_argument("--replicas", metavar="N", type=int,
                         help="JetStream replicas of the log and the buckets: 1, 3 or 5 (default 3)")
    cluster.add_argument("--lease-ttl", metavar="SECONDS", type=float,
                         help="partition leases' and heartbeats' lifetime (default 15; above the engine's fail-over)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    p.add_argument("--log-format", default="text", choices=("text", "json"),
                   help="text lines (default), or one JSON object per line for a log collector: "
                        "time, level, logger, message, and the thread and exception when there are")
    p.set_defaults(run=run)


class JsonLines(logging.Formatter):
    """A log record as one JSON object per line: what a collector (Loki, Elasticsearch, journald's JSON
    export) parses without a pattern."""

    def format(self, record: logging.LogRecord) -> str:
        import json
        from datetime import datetime, timezone

        line = {"time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
                "level": record.levelname.lower(), "logger": record.name, "message": record.getMessage(),
                "thread": record.threadName}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def run(args: argparse.Namespace) -> int:
    from seqd.daemon.server import Server  # imports zmq and the kernels: only when serving, not for --help

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if args.log_format == "json" else
                         logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=args.log_level.upper(), handlers=[handler])
    overrides = dict(state_dir=args.state_dir, api=args.api, pub=args.pub, metrics_host=args.metrics_host,
                     metrics_port=args.metrics_port, workers=args.workers, fsync=args.fsync,
                     repair=args.repair or None, cluster_servers=args.cluster, cluster_member=args.member,
                     cluster_partitions=args.partitions, cluster_replicas=args.replicas,
                     cluster_lease_ttl=args.lease_ttl)
    config = ServeConfig.load(args.config, overrides=overrides)
    settings = config.cluster_settings()  # ([cluster] servers, or --cluster)
    if settings is not None:
        from seqd.daemon.cluster.replica import serve

        print(f"seqd replica joining the cluster at {', '.join(settings.servers)}", file=sys.stderr, flush=True)
        serve(config, settings, config.cluster_member)
        return 0
    if args.demo:
        from . import serve_demo
        first = serve_demo.first_run()  # before the daemon compiles anything
    server = Server(config)
    server.start()
    if args.log_format == "text":  # (the log says the same; with JSON lines, nothing but JSON on stderr)
        print(f"seqd serving: api {server.api_endpoint}, events {server.pub_endpoint}, "
              f"metrics {server.metrics_url or 'off'}, state {config.state_dir}", file=sys.stderr, flush=True)

    def on_signal(signum, _frame):
        if server._stop.is_set():
            log.warning("second %s: exiting now (the write-ahead logs hold every acknowledged batch)",
                        signal.Signals(signum).name)
            os._exit(1)
        server.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.demo:
        serve_demo.start(server.api_endpoint, server.metrics_url, server._stop, first)
    server.serve()
    return 0
