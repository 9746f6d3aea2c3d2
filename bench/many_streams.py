"""Many streams on one daemon: learners hibernate so that memory stays within ``max_state_bytes``.

    python bench/many_streams.py                          # 2,000 byte streams, 4 GiB budget; writes docs
    python bench/many_streams.py --streams 200 --budget-mib 1024 --no-write

``seqd serve`` (a separate process, ``max_state_bytes`` = the budget) gets
``--streams`` byte streams, each created by its first publish: a slice of
the logs of ``../shared/data/logs`` (``--slice`` bytes from its own offset).
Then Zipf-distributed traffic (``--requests``, exponent ``--zipf``): each
request picks a stream by rank, publishes the next ``--batch`` bytes of its
slice's continuation and waits until it is learned, or asks for a
prediction.  Throughout, the daemon's resident memory is sampled from
``/proc``, and its peak is held against the budget above the daemon's
base: its memory with no stream, once a first stream has loaded the
kernels (measured after a stream is created, fed and dropped).  The
latencies of predicts (answered from the views, whether the learner is in
memory or not) and of publish-until-learned are measured client-side, and the wakes' durations are read from the daemon's
``seqd_wake_duration_seconds``.  At the end every stream's statistics are
compared with an in-process learner fed the same bytes, and the idle cost
(disk per stream, memory per hibernated stream) is reported.  Bounded by
``--streams`` and ``--requests``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import log_files  # noqa: E402
from common import command_line, machine, report, serve_in, wait_until_serving  # noqa: E402
from soak import dir_bytes, rss_bytes  # noqa: E402

from seqd.clients.client import Client  # noqa: E402
from seqd.core.container import default_config  # noqa: E402  (a byte stream's model: the default byte model's)
from seqd.core.learners import learner_for  # noqa: E402
from seqd.daemon.budget import STREAM_BYTES  # noqa: E402
from seqd.daemon.learner_store import resident_bytes  # noqa: E402

MIB = 1 << 20


def percentile(values, q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def histogram_quantile(metrics: str, name: str, q: float) -> tuple[float, int]:
    """The ``q`` quantile of a Prometheus histogram (the upper bound of the bucket it falls in), and its count."""
    buckets = [(float(s.labels["le"]), s.value) for family in text_string_to_metric_families(metrics)
               for s in family.samples if s.name == f"{name}_bucket"]
    total = buckets[-1][1] if buckets else 0
    for bound, count in buckets:
        if count >= q * total:
            return bound, int(total)
    return float("nan"), int(total)


class Sampler(threading.Thread):
    """The daemon's resident memory, every ``every`` seconds: the highest seen, and the last."""

    def __init__(self, pid: int, every: float = 0.2):
        super().__init__(daemon=True)
        self.pid, self.every, self.peak, self.last = pid, every, 0, 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                self.last = rss_bytes(self.pid)
                self.peak = max(self.peak, self.last)
            except (OSError, RuntimeError):
                return
            self.stop.wait(self.every)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--budget-mib", type=int, default=4096, help="max_state_bytes, MiB (default 4096)")
    parser.add_argument("--slice", type=int, default=4096, help="bytes each stream is created with")
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=256, help="bytes per publish in the traffic")
    parser.add_argument("--zipf", type=float, default=1.1, help="exponent of the streams' popularity")
    parser.add_argument("--publish-share", type=float, default=0.3, help="share of requests that publish")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    files = log_files()
    if not files:
        print("bench/many_streams.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    corpus = b"".join(f.read_bytes() for f in files)
    rng = np.random.default_rng(0)
    offsets = rng.integers(0, len(corpus) - 4 * MIB // 8, args.streams)
    names = [f"s{i:05d}" for i in range(args.streams)]
    sent = {n: 0 for n in names}  # bytes of its own continuation each stream has been sent
    batches = {n: [] for n in names}  # and in which batches (the daemon sums each batch's code length)

    def piece(i: int, start: int, n: int) -> bytes:
        at = int(offsets[i]) + start
        return corpus[at:at + n]

    budget = args.budget_mib * MIB
    learner_bytes = resident_bytes(default_config())  # a new learner's memory (it grows as it learns)
    with tempfile.TemporaryDirectory() as tmp:
        proc, api, port, state = serve_in(Path(tmp), f"[limits]\nmax_streams = {args.streams + 10}\n"
                                          f"max_state_bytes = {budget}\nhibernate_after_seconds = 0\n"
                                          "[durability]\nfsync = false\n")
        sampler = None
        try:
            with Client(api, timeout=120) as c:
                wait_until_serving(c)
                start_rss = rss_bytes(proc.pid)
                # the base: the daemon with its kernels loaded (by a first stream, then dropped) and no stream
                c.predict("warm-up", min_position=c.publish("warm-up", piece(0, 0, args.slice), create=True).position,
                          wait=600)
                c.drop("warm-up")
                time.sleep(1.0)
                base_rss = rss_bytes(proc.pid)
                sampler = Sampler(proc.pid)
                sampler.start()
                t0 = time.perf_counter()
                for i, n in enumerate(names):
                    position = c.publish(n, piece(i, 0, args.slice), create=True).position
                    sent[n] = args.slice
                    batches[n].append(args.slice)
                    c.predict(n, min_position=position, wait=600)
                    if (i + 1) % 250 == 0:
                        print(f"{i + 1} streams created, rss {sampler.last / MIB:.0f} MiB, "
                              f"{time.perf_counter() - t0:.0f} s", flush=True)
                fill_seconds = time.perf_counter() - t0
                weights = 1.0 / np.arange(1, args.streams + 1) ** args.zipf
                picks = rng.choice(args.streams, size=args.requests, p=weights / weights.sum())
                publishes = rng.random(args.requests) < args.publish_share
                predict_ms, learn_ms = [], []
                t1 = time.perf_counter()
                for k, (i, publish) in enumerate(zip(picks, publishes)):
                    n = names[i]
                    if publish:
                        s = time.perf_counter()
                        position = c.publish(n, piece(i, sent[n], args.batch)).position
                        batches[n].append(len(piece(i, sent[n], args.batch)))
                        sent[n] += args.batch
                        c.predict(n, min_position=position, wait=600)
                        learn_ms.append(1000 * (time.perf_counter() - s))
                    else:
                        s = time.perf_counter()
                        c.predict(n, top=5)
                        predict_ms.append(1000 * (time.perf_counter() - s))
                traffic_seconds = time.perf_counter() - t1
                metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
                stats = {n: c.stats(n) for n in names}
                resident = sum(1 for st in stats.values() if st.resident)
                end_rss = rss_bytes(proc.pid)
        finally:
            if sampler is not None:
                sampler.stop.set()
            proc.terminate()
            proc.wait(120)
        disk = dir_bytes(state / "streams")
    wake_p50, wakes = histogram_quantile(metrics, "seqd_wake_duration_seconds", 0.5)
    wake_p99, _ = histogram_quantile(metrics, "seqd_wake_duration_seconds", 0.99)
    hibernations = next((s.value for family in text_string_to_metric_families(metrics) for s in family.samples
                         if s.name == "seqd_hibernations_total"), 0.0)
    print("checking every stream against an in-process learner ...", flush=True)
    equal = 0
    for i, n in enumerate(names):
        learner = learner_for(default_config())
        bits, at = 0.0, 0
        for size in batches[n]:  # batch by batch, summed as the daemon sums them
            bits += float(learner.learn(piece(i, at, size)).sum())
            at += size
        st = stats[n]
        equal += int(st.position == at and st.code_bits == bits)
    hibernated = args.streams - resident
    in_memory = sum(st.state_bytes for st in stats.values() if st.resident)  # the learners as they have grown
    largest = max(st.state_bytes for st in stats.values())
    per_hibernated = max(0.0, (end_rss - base_rss - in_memory) / max(hibernated, 1))
    over = sampler.peak - base_rss - budget
    rows = [
        ("streams", f"{args.streams:,}"),
        ("learner of each (bytes preset, with its recent code lengths): new, the largest at the end",
         f"{learner_bytes / MIB:.1f} MiB, {largest / MIB:.1f} MiB"),
        ("budget (max_state_bytes)", f"{args.budget_mib:,} MiB: {(budget - args.streams * STREAM_BYTES) // learner_bytes}"
                                     f" new learners beside the streams' own {STREAM_BYTES // 1024} KiB each"),
        ("daemon resident memory: at start, base (kernels loaded, no stream), peak, at the end",
         f"{start_rss / MIB:,.0f} / {base_rss / MIB:,.0f} / {sampler.peak / MIB:,.0f} / {end_rss / MIB:,.0f} MiB"),
        ("peak less the base, against the budget", f"{(sampler.peak - base_rss) / MIB:,.0f} MiB: "
                                                   + (f"{-over / MIB:,.0f} MiB within it" if over <= 0 else
                                                      f"over it by {over / MIB:,.0f} MiB")),
        ("learners in memory at the end", f"{resident:,}"),
        ("hibernations, wakes", f"{hibernations:,.0f}, {wakes:,}"),
        ("creating and filling the streams", f"{fill_seconds:,.0f} s ({args.slice:,} bytes each)"),
        ("Zipf traffic", f"{args.requests:,} requests (exponent {args.zipf}, {args.publish_share:.0%} publishes of "
                         f"{args.batch} bytes) in {traffic_seconds:,.0f} s"),
        ("predict latency p50 / p99 (client, from the views)", f"{percentile(predict_ms, 50):.2f} / "
                                                               f"{percentile(predict_ms, 99):.2f} ms"),
        ("publish until learned p50 / p99 (client; includes wakes)", f"{percentile(learn_ms, 50):.1f} / "
                                                                     f"{percentile(learn_ms, 99):.1f} ms"),
        ("wake p50 / p99 (daemon, bucket bounds)", f"≤ {1000 * wake_p50:.0f} / ≤ {1000 * wake_p99:.0f} ms"),
        ("idle stream on disk (snapshot and log)", f"{disk / args.streams / 1024:,.0f} KiB"),
        ("hibernated stream in memory (rss less the base and the learners, per stream)", f"{per_hibernated / 1024:,.0f} KiB"),
        ("streams whose statistics equal an in-process learner's", f"{equal:,} of {args.streams:,}"),
    ]
    table = ["| | |", "|---|---:|", *(f"| {k} | {v} |" for k, v in rows)]
    text = (f"Command: `{command_line('many_streams.py', argv)}`  \nMachine: {machine()}\n\n" + "\n".join(table)
            + "\n\nOne daemon (`seqd serve`, a separate process, fsync off), its learners bounded by "
              "`max_state_bytes`; the least recently active idle ones hibernate to their snapshots "
              "(`docs/daemon.md`, \"Hibernation\").")
    report("many_streams", text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
