"""The daemon's configuration: a TOML file (``seqd.toml``), every key optional, flags on top.

    >>> cfg = ServeConfig.load(text='[server]\\napi = "tcp://127.0.0.1:7800"', overrides={"metrics_port": 0})
    >>> cfg.api, cfg.pub, cfg.metrics_port
    ('tcp://127.0.0.1:7800', 'tcp://127.0.0.1:7711', 0)

Every default is below, with what it means; ``deploy/seqd.toml`` is the
documented example.  A key the daemon does not know is an error (a typo must
not silently leave a default in force).
"""

from __future__ import annotations

import fnmatch
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path


def default_state_dir() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(base, "seqd")


# section of the TOML file -> keys it holds (each key is a ServeConfig field)
SECTIONS = {
    "server": ("state_dir", "api", "pub", "metrics_host", "metrics_port", "workers", "worker_nice"),
    "limits": ("max_message_bytes", "max_batch_symbols", "max_streams", "max_queue_symbols", "max_state_bytes",
               "hibernate_after_seconds"),
    "durability": ("fsync", "snapshot_interval_seconds", "snapshot_interval_symbols"),
    "metrics": ("stream_labels", "max_labelled_streams"),
    "security": ("curve_secret_key_file", "curve_authorized_keys_dir"),
    # (a cluster's keys are its fields without their prefix: [cluster] servers = ... sets cluster_servers)
    "cluster": ("cluster_servers", "cluster_member", "cluster_partitions", "cluster_replicas", "cluster_lease_ttl",
                "cluster_warm"),
}
PREFIXED = {"cluster": "cluster_"}  # sections whose keys are their fields' names less a prefix
MAX_LABELLED_STREAMS = 256  # a hard ceiling on per-stream series, whatever the configuration says
SNAPSHOT_SYMBOLS = 1 << 22  # [durability] snapshot_interval_symbols's default
CLUSTER_SNAPSHOT_SYMBOLS = 1 << 18  # ... and a cluster replica's: it bounds a take-over's replay


@dataclass(frozen=True)
class ServeConfig:
    # [server]
    state_dir: str = field(default_factory=default_state_dir)  # streams' snapshots and write-ahead logs
    api: str = "tcp://127.0.0.1:7710"  # ROUTER: requests from DEALER clients (loopback by default)
    pub: str = "tcp://127.0.0.1:7711"  # PUB: a prediction event per learned batch, by stream topic
    metrics_host: str = "127.0.0.1"
    metrics_port: int = 9710  # Prometheus text at http://metrics_host:metrics_port/metrics; 0: off
    workers: int = 0  # learning threads; 0: one per core
    worker_nice: int = 19  # learning threads' niceness (Linux, per thread): answers before learning on busy cores
    # [limits]
    max_message_bytes: int = 4 << 20  # larger frames are dropped by ZeroMQ itself (ZMQ_MAXMSGSIZE)
    max_batch_symbols: int = 1 << 20
    max_streams: int = 1024
    max_queue_symbols: int = 4 << 20  # per stream, accepted but not yet learned; beyond it: "busy"
    max_state_bytes: int = 8 << 30  # memory of the streams: the learners in memory (a byte stream's is about 58 MB)
    # and every stream's view (64 KiB); beyond it the least recently active idle learners hibernate (to their
    # snapshots) until they fit.  The process holds this and its base (about 165 MiB)
    hibernate_after_seconds: float = 600.0  # an idle stream's learner hibernates after this long anyway; 0: never
    # [durability]
    fsync: bool = True  # acknowledge a batch only once its write-ahead log record is on disk
    snapshot_interval_seconds: float = 300.0
    # also bounds the replay after a crash; None: 4 Mi symbols, or 256 Ki for a cluster replica, whose replay
    # after a crash is a take-over that clients wait for (a byte stream learns some 40-70 KB/s: about 5 s)
    snapshot_interval_symbols: int | None = None
    # [metrics]
    stream_labels: tuple[str, ...] = ("*",)  # names or glob patterns of streams with their own labelled series
    max_labelled_streams: int = 32  # at most this many (the first matching, by name): label sets stay bounded
    # [security]
    curve_secret_key_file: str | None = None  # a zmq.auth key file: enables CURVE on both sockets
    curve_authorized_keys_dir: str | None = None  # clients' public key files; required with CURVE
    # [cluster] (docs/cluster.md): with servers, `seqd serve` runs as a replica of the cluster on them
    cluster_servers: tuple[str, ...] = ()  # NATS URLs; empty: the single-machine daemon
    cluster_member: str | None = None  # this replica's id (default: host-pid)
    cluster_partitions: int = 16  # fixed when the cluster is created
    cluster_replicas: int = 3  # JetStream replicas of the log and the buckets: 1, 3 or 5
    cluster_lease_ttl: float = 15.0  # seconds: partition leases' and heartbeats' lifetime
    cluster_warm: tuple[str, ...] = ("bytes",)  # presets whose kernels a replica loads before it joins
    # (a flag only, `seqd serve --repair`, never in the file: an operator's decision for one start)
    repair: bool = False  # a damaged write-ahead log is cut where its damage starts, and its stream served

    def __post_init__(self):
        if self.snapshot_interval_symbols is None:
            object.__setattr__(self, "snapshot_interval_symbols",
                               CLUSTER_SNAPSHOT_SYMBOLS if self.cluster_servers else SNAPSHOT_SYMBOLS)
        if isinstance(self.cluster_warm, str):
            object.__setattr__(self, "cluster_warm", (self.cluster_warm,))
        object.__setattr__(self, "cluster_warm", tuple(self.cluster_warm))
        if not all(isinstance(p, str) for p in self.cluster_warm):
            raise ValueError(f"[cluster] warm must be a list of preset names, got {self.cluster_warm!r}")
        if isinstance(self.cluster_servers, str):
            object.__setattr__(self, "cluster_servers", tuple(u for u in self.cluster_servers.split(",") if u))
        object.__setattr__(self, "cluster_servers", tuple(self.cluster_servers))
        if not all(isinstance(u, str) and u.startswith(("nats://", "tls://")) for u in self.cluster_servers):
            raise ValueError(f"cluster servers must be nats:// URLs, got {list(self.cluster_servers)!r}")
        if isinstance(self.stream_labels, str):
            object.__setattr__(self, "stream_labels", (self.stream_labels,))
        object.__setattr__(self, "stream_labels", tuple(self.stream_labels))
        for name in ("max_message_bytes", "max_batch_symbols", "max_streams", "max_queue_symbols",
                     "max_state_bytes", "snapshot_interval_symbols"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.workers, int) or self.workers < 0:
            raise ValueError(f"workers must be a non-negative integer (0: one per core), got {self.workers!r}")
        if not isinstance(self.worker_nice, int) or not 0 <= self.worker_nice <= 19:
            raise ValueError(f"worker_nice must be in [0, 19], got {self.worker_nice!r}")
        if not isinstance(self.metrics_port, int) or not 0 <= self.metrics_port <= 65535:
            raise ValueError(f"metrics_port must be in [0, 65535], got {self.metrics_port!r}")
        if not self.snapshot_interval_seconds > 0:
            raise ValueError("snapshot_interval_seconds must be > 0")
        if not (isinstance(self.hibernate_after_seconds, (int, float)) and self.hibernate_after_seconds >= 0):
            raise ValueError(f"hibernate_after_seconds must be >= 0 (0: never), got {self.hibernate_after_seconds!r}")
        if self.max_queue_symbols < self.max_batch_symbols:
            raise ValueError("max_queue_symbols must be at least max_batch_symbols, or a full batch could never "
                             "be accepted")
        if not isinstance(self.max_labelled_streams, int) or not 0 <= self.max_labelled_streams <= MAX_LABELLED_STREAMS:
            raise ValueError(f"max_labelled_streams must be in [0, {MAX_LABELLED_STREAMS}] (Prometheus label sets "
                             f"must stay bounded), got {self.max_labelled_streams!r}")
        if not all(isinstance(p, str) for p in self.stream_labels):
            raise ValueError("stream_labels must be a list of stream names or glob patterns")
        if (self.curve_secret_key_file is None) != (self.curve_authorized_keys_dir is None):
            raise ValueError("CURVE needs both curve_secret_key_file and curve_authorized_keys_dir")
        for name in ("api", "pub"):
            if "://" not in getattr(self, name):
                raise ValueError(f"{name} must be a ZeroMQ endpoint with its transport, as in "
                                 f"tcp://{getattr(self, name)}; got {getattr(self, name)!r}")

    def labelled(self, names) -> list[str]:
        """The streams among ``names`` that get labelled series: matching ``stream_labels``, the first
        ``max_labelled_streams`` of them in name order."""
        chosen = [n for n in sorted(names) if any(fnmatch.fnmatchcase(n, p) for p in self.stream_labels)]
        return chosen[:self.max_labelled_streams]

    def cluster_settings(self):
        """The cluster's settings (``engine.ClusterSettings``), or None for the single-machine daemon."""
        if not self.cluster_servers:
            return None
        from .cluster.engine import ClusterSettings

        return ClusterSettings(self.cluster_servers, partitions=self.cluster_partitions,
                               replicas=self.cluster_replicas, lease_ttl=self.cluster_lease_ttl,
                               heartbeat_ttl=self.cluster_lease_ttl)

    @property
    def worker_count(self) -> int:
        return self.workers or os.cpu_count() or 1

    @classmethod
    def load(cls, path: str | os.PathLike | None = None, *, text: str | None = None,
             overrides: dict | None = None) -> "ServeConfig":
        """Defaults, then the TOML file (or ``text``), then ``overrides`` (flags; None values ignored)."""
        settings: dict = {}
        if path is not None:
            text = Path(path).read_text()
        if text is not None:
            source = str(path) if path is not None else "configuration"
            try:
                doc = tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{source}: {exc}") from None
            for section, table in doc.items():
                if section not in SECTIONS or not isinstance(table, dict):
                    raise ValueError(f"{source}: unknown section [{section}]; known: "
                                     f"{', '.join(f'[{s}]' for s in SECTIONS)}")
                prefix = PREFIXED.get(section, "")
                for key, value in table.items():
                    if prefix + key not in SECTIONS[section]:
                        raise ValueError(f"{source}: unknown key {key!r} in [{section}]; known: "
                                         f"{', '.join(k[len(prefix):] for k in SECTIONS[section])}")
                    settings[prefix + key] = value
        settings.update({k: v for k, v in (overrides or {}).items() if v is not None})
        known = {f.name for f in fields(cls)}
        for key in settings:
            if key not in known:
                raise ValueError(f"unknown setting {key!r}")
        config = cls(**settings)
        return replace(config, state_dir=os.path.expanduser(config.state_dir))
