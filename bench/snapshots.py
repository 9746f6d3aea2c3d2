"""Predict latency while the daemon writes snapshots: a quiet phase, then every stream snapshotted in turn.

    python bench/snapshots.py                 # writes its table into docs/benchmarks.md
    python bench/snapshots.py --no-write --rounds 1

``seqd serve`` runs as its own process with its defaults.  Each of
``--streams`` streams (one log of ``../shared/data/logs`` each, its first
``--bytes`` bytes) is created and learned; a byte-stream learner's state is
tens of megabytes whatever the stream's length, so each snapshot writes that
much.  Then, in each round, a querying client in a process of its own asks
for predictions ``--qps`` times a second, round robin over the streams: for
``--quiet`` seconds with nothing else happening, then while another client
asks every stream for a snapshot, one after the other (each written by a
worker thread, fsync'ed and renamed into place, the write-ahead log rotated).
Only the predicts sent within each phase count.  The two phases' latencies
are the comparison: what writing snapshots costs the answers.  The run is
bounded: every wait has a timeout.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import log_files  # noqa: E402
from common import command_line, free_port, machine, report, serve_process  # noqa: E402
from load import Background, _querier  # noqa: E402

from seqd.clients.client import Client  # noqa: E402


def _phase(api: str, names: list[str], qps: float, timeout: float, work) -> tuple[np.ndarray, float]:
    """Latencies (ms) of the predicts a querier in its own process sent while ``work()`` ran; and work's
    seconds.  Predicts sent before ``work()`` began or after it ended are not counted."""
    querier = Background((_querier, api, names, qps, timeout))
    try:
        querier.wait_ready(timeout)  # the querier is connected and past its first, slower request
        t0 = time.perf_counter()
        work()
        t1 = time.perf_counter()
    finally:
        rows = querier.finish(timeout)
    during = (rows[:, 0] >= t0) & (rows[:, 0] < t1)
    return rows[during, 1] * 1e3, t1 - t0


def run(streams: dict[str, bytes], rounds: int, qps: float, quiet: float, timeout: float) -> dict:
    api, pub, metrics = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}", free_port()
    with tempfile.TemporaryDirectory() as state:
        proc = serve_process(state, api, pub, metrics)
        try:
            with Client(api, timeout=timeout) as c:
                c.ping()
                for name, data in streams.items():
                    c.publish(name, data, create=True)
                for name, data in streams.items():
                    c.predict(name, min_position=len(data), wait=timeout)
                state_bytes = c.stats(next(iter(streams))).state_bytes
            names = list(streams)
            quiet_lat, busy_lat, seconds = [], [], []

            def snapshots():
                with Client(api, timeout=timeout) as s:
                    for name in names:
                        s.snapshot(name)

            for k in range(rounds):
                print(f"round {k + 1}/{rounds}: quiet, then {len(names)} snapshots ...", file=sys.stderr)
                lat, _ = _phase(api, names, qps, timeout, lambda: time.sleep(quiet))
                quiet_lat.append(lat)
                lat, took = _phase(api, names, qps, timeout, snapshots)
                busy_lat.append(lat)
                seconds.append(took)
            return dict(quiet=np.concatenate(quiet_lat), busy=np.concatenate(busy_lat), seconds=seconds,
                        state_bytes=state_bytes)
        finally:
            proc.terminate()
            proc.wait(120)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=8, help="streams, one log each (default 8)")
    parser.add_argument("--bytes", type=int, default=20_000, help="bytes of each log learned first (default 20000)")
    parser.add_argument("--qps", type=float, default=500.0, help="predicts per second (default 500)")
    parser.add_argument("--quiet", type=float, default=2.0, help="seconds of the quiet phase (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of (quiet, snapshots) (default 3)")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    files = log_files()[:args.streams]
    if len(files) < args.streams:
        print(f"bench/snapshots.py: needs {args.streams} logs in ../shared/data/logs, found {len(files)}",
              file=sys.stderr)
        return 1
    streams = {f.stem.split("_")[0].lower(): f.read_bytes()[:args.bytes] for f in files}
    r = run(streams, args.rounds, args.qps, args.quiet, args.timeout)

    def row(what: str, lat: np.ndarray) -> str:
        p50, p99, p999 = np.percentile(lat, [50, 99, 99.9])
        return (f"| {what} | {len(lat):,} | {p50:.3f} | {p99:.3f} | {p999:.2f} | {lat.max():.2f} | "
                f"{(lat > 2).mean():.2%} |")

    body = "\n".join([
        f"Command: `{command_line('snapshots.py')}`  ",
        f"Machine: {machine()}",
        "",
        f"{len(streams)} streams of {r['state_bytes'] / 2**20:.1f} MiB of learner state each (default byte-stream "
        f"model), `seqd serve` defaults; predicts (top 5) at {args.qps:g} per second, {args.rounds} rounds.",
        "",
        "| phase | predicts | p50 (ms) | p99 (ms) | p99.9 (ms) | max (ms) | over 2 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row(f"quiet, {args.quiet:g} s a round", r["quiet"]),
        row(f"while the {len(streams)} streams are snapshotted in turn", r["busy"]),
        "",
        f"Writing the {len(streams)} snapshots took " + ", ".join(f"{s:.2f} s" for s in r["seconds"])
        + " in the rounds.",
    ])
    report("snapshot_stall", body, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
