"""A replica's telemetry: Prometheus series of its partitions and moves, and ``/readyz`` (``docs/cluster.md``).

| series | what |
|---|---|
| ``seqd_cluster_partitions_owned`` | partitions this replica serves now |
| ``seqd_cluster_partitions_wanted`` | partitions rendezvous hashing gives it among the live members |
| ``seqd_cluster_members`` | live members the last round saw |
| ``seqd_cluster_streams`` | streams of the partitions it serves |
| ``seqd_cluster_streams_resident`` | streams whose learner is in memory (``residency.py``) |
| ``seqd_cluster_memory_bytes`` | what the streams hold, against ``[limits] max_state_bytes`` |
| ``seqd_cluster_hibernations_total``, ``seqd_cluster_wakes_total`` | streams put to sleep, and woken |
| ``seqd_cluster_moves_total`` | partitions gained after its first round |
| ``seqd_cluster_lease_renewals_total`` | leases renewed |
| ``seqd_cluster_move_stall_seconds`` | each gained partition's load (snapshots read, logs replayed) |
| ``seqd_cluster_log_append_seconds`` | each publish's append to the JetStream log, acknowledgement included |
| ``seqd_cluster_loop_longest_gap_seconds`` | the longest time between two turns of the event loop (``/healthz``) |
| ``seqd_cluster_worker_job_seconds`` | how long the longest-running worker job (a batch, a snapshot) has run |
| ``seqd_cluster_append_blocked_seconds`` | how long the longest append in progress has held its stream back |

``/readyz`` is true once the replica serves every partition it should
(``wanted`` ⊆ ``owned``), and false while it holds no lease it needs, or
while it is joining (connected, its keeper's first round not finished) or
leaving; ``/healthz`` is true while its event loop turns (a task of its own
beats four times a second, so snapshots, loads and hand-offs never hold it
back) and no worker has run one job for ``WORKER_STALL_SECONDS``.  Both, and
systemd's notify protocol, are the single-machine daemon's
(``daemon/health.py``), told by the replica: connected, each tick of its
loop, the stop.
"""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from ... import __version__
from ...core.learners import model_of
from ..health import Health
from ..models import config_dict


class ReplicaTelemetry:
    """The series above, read from the replica when scraped; the histograms observed as things happen."""

    def __init__(self, registry: CollectorRegistry, replica):
        self.replica = replica
        self.stall = Histogram("seqd_cluster_move_stall_seconds", "Seconds a gained partition took to load",
                               buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30), registry=registry)
        self.append = Histogram("seqd_cluster_log_append_seconds", "Seconds a publish's log append took",
                                buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5),
                                registry=registry)
        registry.register(self)
        self.health = Health(workers=replica.pool)

    def describe(self):
        return []

    def collect(self):
        r, keeper = self.replica, self.replica.keeper
        yield GaugeMetricFamily("seqd_cluster_partitions_owned", "Partitions this replica serves",
                                value=len(r.held))
        yield GaugeMetricFamily("seqd_cluster_partitions_wanted", "Partitions placement gives this replica",
                                value=len(keeper.wanted) if keeper else 0)
        yield GaugeMetricFamily("seqd_cluster_members", "Live members seen by the last round",
                                value=len(keeper.live) if keeper else 0)
        yield GaugeMetricFamily("seqd_cluster_streams", "Streams of the partitions served",
                                value=sum(len(h.streams) for h in list(r.held.values())))
        yield GaugeMetricFamily("seqd_cluster_streams_resident", "Streams whose learner is in memory",
                                value=r.residency.resident)
        yield GaugeMetricFamily("seqd_cluster_memory_bytes", "Bytes the streams hold, against max_state_bytes",
                                value=r.residency.budget.held)
        yield CounterMetricFamily("seqd_cluster_hibernations", "Streams put to sleep",
                                  value=r.residency.hibernations)
        yield CounterMetricFamily("seqd_cluster_wakes", "Streams woken: their learner read back from the snapshot",
                                  value=r.residency.wakes)
        yield CounterMetricFamily("seqd_cluster_moves", "Partitions gained after the first round",
                                  value=keeper.moves if keeper else 0)
        yield CounterMetricFamily("seqd_cluster_lease_renewals", "Leases renewed",
                                  value=keeper.renewals if keeper else 0)
        yield GaugeMetricFamily("seqd_cluster_loop_longest_gap_seconds",
                                "The longest time between two turns of the event loop (/healthz: stuck past 10 s)",
                                value=self.health.longest_gap)
        yield GaugeMetricFamily("seqd_cluster_worker_job_seconds", "How long the longest-running worker job has run",
                                value=r.pool.longest()[0])
        yield GaugeMetricFamily("seqd_cluster_append_blocked_seconds",
                                "How long the longest append in progress has held its stream's appends back",
                                value=max((s.appending_for() for h in list(r.held.values())
                                           for s in h.streams.values()), default=0.0))

    # the probes (daemon/metrics.py's start_metrics_server asks these two)
    def live(self) -> tuple[bool, str]:
        return self.health.live()

    def ready(self) -> tuple[bool, str]:
        ready, why = self.health.ready()  # starting (not connected), stopping, or a loop that does not turn
        if not ready:
            return False, why.replace("stopping", "leaving")
        keeper = self.replica.keeper
        if keeper is None or keeper.rounds == 0:
            return False, "joining\n"
        missing = sorted(set(keeper.wanted) - set(self.replica.held))
        if missing:
            return False, f"not serving partition(s) {', '.join(map(str, missing))} placement gives it\n"
        return True, "ok\n"


# what a replica says of a stream and of itself (``stats`` requests)
def stream_stats(replica, stream, partition: int) -> dict:
    known = (stream.view.stats if stream.view is not None  # (taken up asleep: what the pointer says)
             else dict(position=stream.position, alphabet_cap=stream.config.alphabet_cap,
                       model=model_of(stream.config).name))
    return dict(known, stream=stream.name, accepted=stream.accepted, queued=stream.queued,
                config=config_dict(stream.config), created=stream.created, resident=not stream.asleep,
                state_bytes=stream.counted or None,
                state="hibernated" if stream.asleep else "live", broken=None, partition=partition,
                appending_seconds=round(stream.appending_for(), 3),
                member=replica.member, uptime_seconds=time.time() - replica.started)


def server_stats(replica) -> dict:
    r, keeper = replica, replica.keeper
    streams = [s for h in r.held.values() for s in h.streams.values()]
    return dict(server="seqd", version=__version__, uptime_seconds=time.time() - r.started,
                streams=sorted(s.name for s in streams), queued=sum(s.queued for s in streams),
                symbols_learned=sum(s.position for s in streams), unavailable={},
                resident=sum(1 for s in streams if not s.asleep), memory_bytes=r.residency.budget.held,
                memory_peak_bytes=r.residency.peak,
                memory_limit_bytes=r.config.max_state_bytes, member=r.member,
                partitions=sorted(r.held), members=len(keeper.live) if keeper is not None else 0,
                moves=keeper.moves if keeper is not None else 0)
