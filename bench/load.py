"""The daemon under load, on loopback: 8 publishing clients and 1 querying client, against the in-process learner.

    python bench/load.py                 # writes its table into docs/benchmarks.md
    python bench/load.py --no-write --bytes 50000
    python bench/load.py --capacity      # one busy stream against two on the daemon: aggregate learning rate

``seqd serve`` runs as its own process, with its defaults (one learning
thread per core, every batch fsync'ed before it is acknowledged).  Eight
client threads each publish one log of ``../shared/data/logs`` (its first
``--bytes`` bytes) to a stream of its own, in batches of ``--batch`` bytes,
as conditional appends, waiting out "busy" replies; one more client, in a
process of its own, asks for predictions (top 5) round robin over the
streams, ``--qps`` requests per second (0: as fast as answers come), until
every stream has learned everything.

Ingest rate is symbols learned per second of wall clock, from the first
publish to the moment the last stream has learned its last symbol.  The
reference is the same streams, in the same batches, learned in one process
by as many threads as the daemon has workers (the Numba kernels release the
GIL): what the daemon adds on top of learning is the ratio.  The machines
this runs on are shared and noisy, so ``--repeat`` rounds are run, each an
in-process run beside a daemon run, and the median round is reported with
every round's ratio.  The run is bounded: the logs are finite, and every
wait has a timeout.

``--floor`` adds a third run to each round: the in-process learners again,
at the daemon's worker niceness, while two other processes play ZeroMQ
ping-pong over loopback at the querier's rate (a bare ROUTER echoing a
DEALER, no seqd code).  That is what serving ``--qps`` requests a second
costs learning on this machine before the daemon does any work of its own:
the best ratio any loopback ZeroMQ server could reach here, and the best
latency.
"""

from __future__ import annotations

import argparse
import itertools
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import log_files  # noqa: E402
from common import command_line, free_port, machine, report, serve_process  # noqa: E402

from seqd.clients.client import Client  # noqa: E402
from seqd.core.container import default_config  # noqa: E402  (a byte stream's model)
from seqd.core.learners import learner_for  # noqa: E402
from seqd.daemon.config import ServeConfig  # noqa: E402

PUBLISHERS = 8


def in_process(streams: dict[str, bytes], batch: int, threads: int, nice: int = 0) -> tuple[float, float]:
    """Wall-clock and CPU seconds for ``threads`` threads to learn every stream, batch by batch.

    With ``nice``, each thread lowers its own priority as the daemon's
    learning threads do (``worker_nice``): it matters only when other
    processes want the cores too (:func:`floor_run`).
    """
    learners = {name: learner_for(default_config()) for name in streams}
    learners[next(iter(streams))].learn(b"warm up the compiled kernels")
    learners = {name: learner_for(default_config()) for name in streams}
    names = list(streams)
    lock = threading.Lock()

    def work():
        if nice:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
        while True:
            with lock:
                if not names:
                    return
                name = names.pop(0)
            data = streams[name]
            for i in range(0, len(data), batch):
                learners[name].learn(data[i:i + batch])

    t0, c0 = time.perf_counter(), time.process_time()
    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return time.perf_counter() - t0, time.process_time() - c0


class Background:
    """Processes of their own (spawned, as real clients are), stopped together.

    Each job is ``(target, *args)``; the target is called with ``stop`` and
    ``ready`` (Events) and ``out`` (a Queue) after its arguments.  One job
    sets ``ready`` once it is doing its work (:meth:`wait_ready`: a spawned
    Python process spends half a second of CPU importing before that, which
    must not fall into a measurement), and puts its rows in ``out`` when
    stopped (:meth:`finish` returns them).
    """

    def __init__(self, *jobs: tuple):
        mp = multiprocessing.get_context("spawn")
        self.stop, self.ready, self._out = mp.Event(), mp.Event(), mp.Queue()
        self._procs = [mp.Process(target=target, args=(*args, self.stop, self.ready, self._out))
                       for target, *args in jobs]
        for p in self._procs:
            p.start()

    def wait_ready(self, timeout: float) -> None:
        if not self.ready.wait(timeout):
            self.finish(timeout, rows=False)
            raise RuntimeError(f"the background processes did not start working within {timeout:g} s")

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def finish(self, timeout: float, rows: bool = True) -> np.ndarray | None:
        """Stop every process; the reporting job's ``(sent, seconds)`` rows, as an array of shape (n, 2)
        (with ``rows=False``, for jobs of which none reports: nothing).  Once finished, it returns no rows."""
        if self.stop.is_set():
            return np.empty((0, 2)) if rows else None
        self.stop.set()
        got = self._out.get(timeout=timeout) if rows else None
        for p in self._procs:
            p.join(timeout)
        return None if got is None else np.array(got, dtype=float).reshape(-1, 2)


def _paced(ask, qps: float, stop, ready, out) -> None:
    """Call ``ask()`` ``qps`` times a second (0: back to back) until ``stop``, setting ``ready`` after the
    first call; then put in ``out`` one ``(sent, seconds)`` row per call.  ``sent`` is ``time.perf_counter()``, on Linux the system-wide
    monotonic clock, so the parent process can select rows by its own readings of it."""
    rows = []
    k, start = 0, time.perf_counter()
    while not stop.is_set():
        t = time.perf_counter()
        ask()
        rows.append((t, time.perf_counter() - t))
        ready.set()
        k += 1
        if qps:
            stop.wait(max(0.0, start + k / qps - time.perf_counter()))
    out.put(rows)


def _querier(api: str, names: list[str], qps: float, timeout: float, stop, ready, out) -> None:
    """The querying client: predictions (top 5), round robin over the streams."""
    streams = itertools.cycle(names)
    with Client(api, timeout=timeout) as c:
        _paced(lambda: c.predict(next(streams), top=5), qps, stop, ready, out)


def _echo(address: str, stop, ready, out) -> None:
    """A bare ZeroMQ ROUTER that sends every message back: the cheapest server there is."""
    import zmq
    with zmq.Context() as ctx, ctx.socket(zmq.ROUTER) as sock:
        sock.bind(address)
        while not stop.is_set():
            if sock.poll(100):
                sock.send_multipart(sock.recv_multipart())


def _ping(address: str, qps: float, stop, ready, out) -> None:
    """The querier's pace against :func:`_echo`, with raw ZeroMQ and a request's size."""
    import zmq
    with zmq.Context() as ctx, ctx.socket(zmq.DEALER) as sock:
        sock.connect(address)

        _paced(lambda: bare_request(sock, 10.0), qps, stop, ready, out)


def bare_request(sock, timeout: float) -> None:
    """One round trip of a request's size with :func:`_echo` over a DEALER ``sock``: no seqd code."""
    sock.send(bytes(64))
    if not sock.poll(int(timeout * 1000)):
        raise RuntimeError("the echo process stopped answering")
    sock.recv()


def floor_run(streams: dict[str, bytes], batch: int, threads: int, nice: int, qps: float, timeout: float) -> dict:
    """:func:`in_process` at the daemon's worker niceness, while two other processes play ZeroMQ ping-pong at
    ``qps`` round trips a second."""
    address = f"tcp://127.0.0.1:{free_port()}"
    pingpong = Background((_echo, address), (_ping, address, qps))
    try:
        pingpong.wait_ready(timeout)  # both processes up and exchanging
        seconds, cpu = in_process(streams, batch, threads, nice)
    finally:
        latencies = pingpong.finish(timeout)[:, 1] * 1e3
    return dict(seconds=seconds, cpu=cpu, p99=np.percentile(latencies, 99))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    return _stat_seconds(Path(f"/proc/{pid}/stat"))


def _stat_seconds(stat: Path) -> float:
    """User + system CPU seconds from a process's or a thread's ``stat`` file."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


THREAD_GROUPS = (("learning", "seqd-worker-"), ("I/O loop", "seqd"), ("ZeroMQ I/O", "ZMQbg/"))


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Each thread of a process: its name and its user + system CPU seconds so far (Linux /proc)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = ((task / "comm").read_text().strip(), _stat_seconds(task / "stat"))
        except OSError:  # the thread has just ended
            continue
    return out


def machine_cpu() -> tuple[float, float]:
    """The machine's busy and stolen CPU seconds so far, all cores (Linux /proc/stat): busy is user, nice,
    system, irq and softirq time; stolen is time the hypervisor gave the virtual CPUs to someone else."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    return sum(fields[i] for i in (0, 1, 2, 5, 6)) / tick, (fields[7] if len(fields) > 7 else 0) / tick


def cpu_by_group(before: dict, after: dict) -> dict[str, float]:
    """CPU seconds spent between two :func:`thread_cpu` readings, by :data:`THREAD_GROUPS` (the daemon
    names its threads), the rest as "other" (threads that ended in between are not counted)."""
    groups = {name: 0.0 for name, _ in THREAD_GROUPS} | {"other": 0.0}
    for tid, (comm, seconds) in after.items():
        spent = seconds - before.get(tid, (comm, 0.0))[1]
        group = next((name for name, prefix in THREAD_GROUPS
                      if comm == prefix or (prefix.endswith(("-", "/")) and comm.startswith(prefix))), "other")
        groups[group] += spent
    return groups


def daemon_run(streams: dict[str, bytes], batch: int, timeout: float, qps: float, fsync: bool = True,
               config: str | None = None) -> dict:
    api, pub, metrics = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}", free_port()
    with tempfile.TemporaryDirectory() as state:
        proc = serve_process(state, api, pub, metrics, *([] if fsync else ["--no-fsync"]),
                             *(["--config", config] if config else []))
        try:
            with Client(api, timeout=60) as c:
                c.ping()
                for name in streams:
                    c.create(name)
                c.publish("warm-up", b"warm up the compiled kernels", create=True)
                c.predict("warm-up", min_position=28, wait=60)
                c.drop("warm-up")
            result = _load(api, streams, batch, timeout, qps, proc.pid)
            result["server_predict"] = _server_latency(metrics, "predict")
            return result
        finally:
            proc.terminate()
            proc.wait(120)


def _server_latency(port: int, kind: str) -> dict[float, float]:
    """The daemon's own view: share of ``kind`` requests answered within each histogram bucket."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    buckets = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            if s.name == "seqd_request_duration_seconds_bucket" and s.labels.get("kind") == kind:
                buckets[float(s.labels["le"])] = s.value
    total = buckets.get(float("inf"), 0) or 1
    return {le: n / total for le, n in sorted(buckets.items())}


def _load(api: str, streams: dict[str, bytes], batch: int, timeout: float, qps: float, pid: int) -> dict:
    """Publish every stream while querying; the rates, latencies and the CPU spent (the daemon's, by thread
    group, and the machine's) from the first publish to the last symbol learned."""
    errors: list[BaseException] = []
    publish_seconds: list[float] = []

    def publisher(name: str, data: bytes):
        try:
            with Client(api, timeout=timeout) as c:
                position = 0
                for i in range(0, len(data), batch):
                    t = time.perf_counter()
                    position = c.publish(name, data[i:i + batch], position=position).position
                    publish_seconds.append(time.perf_counter() - t)
        except BaseException as exc:  # reported after the run
            errors.append(exc)

    querier = Background((_querier, api, list(streams), qps, timeout))
    total = sum(len(d) for d in streams.values())
    pubs = [threading.Thread(target=publisher, args=item) for item in streams.items()]
    try:
        querier.wait_ready(timeout)  # the querier's start-up is not part of the load
        cpu0, threads0, (busy0, stolen0) = cpu_seconds(pid), thread_cpu(pid), machine_cpu()
        t0 = time.perf_counter()
        for t in pubs:
            t.start()
        for t in pubs:
            t.join()
        with Client(api, timeout=timeout) as c:
            for name, data in streams.items():
                c.predict(name, min_position=len(data), wait=timeout)
        t1 = time.perf_counter()
        seconds = t1 - t0
        cpu, threads, (busy, stolen) = cpu_seconds(pid) - cpu0, cpu_by_group(threads0, thread_cpu(pid)), machine_cpu()
    finally:
        rows = querier.finish(timeout)
    lat = rows[(rows[:, 0] >= t0) & (rows[:, 0] < t1), 1] * 1e3  # the predicts sent during the load
    if errors:
        raise errors[0]
    pub = np.array(publish_seconds) * 1e3
    return dict(seconds=seconds, rate=total / seconds, predicts=len(lat), p50=np.percentile(lat, 50),
                p99=np.percentile(lat, 99), pmax=lat.max(), publishes=len(pub), pub_p50=np.percentile(pub, 50),
                pub_p99=np.percentile(pub, 99), cpu=cpu, threads=threads, machine=busy - busy0, stolen=stolen - stolen0)


def _cpu_account(run: dict, ref_cpu: float, cores: int) -> str:
    """Where the machine's CPU went while the daemon ingested, in one round."""
    t = run["threads"]
    rest = run["machine"] - run["cpu"]
    idle = run["seconds"] * cores - run["machine"] - run["stolen"]
    return (f"Where the machine's {run['seconds'] * cores:.1f} CPU seconds went in that round "
            f"({run['seconds']:.2f} s × {cores} cores): the daemon's learning threads {t['learning']:.2f} s "
            f"(the in-process learners: {ref_cpu:.2f} s), its I/O loop {t['I/O loop']:.2f} s, ZeroMQ's I/O thread "
            f"{t['ZeroMQ I/O']:.2f} s, its other threads {t['other']:.2f} s; the clients and everything else on "
            f"the machine {rest:.2f} s; idle {idle:.2f} s; stolen by the hypervisor {run['stolen']:.2f} s.")


def capacity(args) -> str:
    """One busy stream, then two, on the daemon and in process: does a second core double the learning?

    Both streams carry the same log (the first of ``../shared/data/logs``, its first ``--bytes`` bytes), so
    the two runs learn the same symbols per stream; each round runs one stream, then two, on the daemon
    (``seqd serve`` defaults: one learning thread per core) and in process (one thread per stream).  The
    querying client asks ``--qps`` predictions a second, as in the load test.
    """
    files = log_files()
    if not files:
        return "No logs: ../shared/data/logs is absent here."
    data = files[0].read_bytes()[:args.bytes]
    one, two = {"a": data}, {"a": data, "b": data}
    rows = []
    for k in range(args.repeat):
        print(f"round {k + 1}/{args.repeat}: 1 stream, then 2, in process and on the daemon ...", file=sys.stderr)
        ref1, _ = in_process(one, args.batch, 1)
        ref2, _ = in_process(two, args.batch, 2)
        run1 = daemon_run(one, args.batch, args.timeout, args.qps, args.fsync, args.config)
        run2 = daemon_run(two, args.batch, args.timeout, args.qps, args.fsync, args.config)
        rows.append({"in1": len(data) / ref1, "in2": 2 * len(data) / ref2, "d1": run1["rate"], "d2": run2["rate"]})
    scale = lambda r, a, b: r[b] / r[a]  # noqa: E731
    order = np.argsort([scale(r, "d1", "d2") for r in rows])
    med = rows[int(order[len(order) // 2])]
    return "\n".join([
        f"Command: `{command_line('load.py')}`  ",
        f"Machine: {machine()}",
        "",
        f"The first {len(data):,} bytes of {files[0].name} as one stream, then as two streams at once; batches of "
        f"{args.batch} symbols, the default byte model, `seqd serve` defaults ({os.cpu_count()} learning threads, "
        f"fsync {'on' if args.fsync else 'off'}), a querier at {args.qps:g} predictions a second; wall clock.",
        "",
        "| | 1 stream (symbols/s) | 2 streams (symbols/s, together) | 2 over 1 |",
        "|---|---:|---:|---:|",
        f"| in process, a thread per stream | {med['in1']:,.0f} | {med['in2']:,.0f} | "
        f"{scale(med, 'in1', 'in2'):.2f}× |",
        f"| daemon | {med['d1']:,.0f} | {med['d2']:,.0f} | **{scale(med, 'd1', 'd2'):.2f}×** |",
        "",
        f"The median of {args.repeat} rounds (by the daemon's ratio) is shown; the daemon's ratio in each round: "
        + ", ".join(f"{scale(r, 'd1', 'd2'):.2f}×" for r in rows) + "; in process: "
        + ", ".join(f"{scale(r, 'in1', 'in2'):.2f}×" for r in rows) + ".",
    ])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", type=int, default=150_000, help="bytes of each log to publish (default 150000)")
    parser.add_argument("--batch", type=int, default=4096, help="symbols per publish (default 4096)")
    parser.add_argument("--qps", type=float, default=500.0,
                        help="predict requests per second of the querying client (default 500; 0: as fast as "
                             "answers come)")
    parser.add_argument("--no-fsync", dest="fsync", action="store_false",
                        help="run the daemon with --no-fsync (acknowledge before the disk has the batch)")
    parser.add_argument("--config", metavar="FILE", help="a seqd.toml for the daemon (default: none, the defaults)")
    parser.add_argument("--repeat", type=int, default=3, metavar="K",
                        help="rounds of (in-process, daemon), paired; the table shows the median round (default 3)")
    parser.add_argument("--floor", action="store_true",
                        help="also learn in-process beside a bare ZeroMQ ping-pong at --qps in each round (the best "
                             "ratio any loopback ZeroMQ server could reach on this machine)")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    parser.add_argument("--capacity", action="store_true",
                        help="instead: one busy stream against two, on the daemon and in process (capacity)")
    args = parser.parse_args(argv)
    if args.capacity:
        report("daemon_capacity", capacity(args), not args.no_write)
        return 0
    files = log_files()[:PUBLISHERS]
    if len(files) < PUBLISHERS:
        print(f"bench/load.py: needs {PUBLISHERS} logs in ../shared/data/logs, found {len(files)}", file=sys.stderr)
        return 1
    streams = {f.stem.split("_")[0].lower(): f.read_bytes()[:args.bytes] for f in files}
    total = sum(len(d) for d in streams.values())
    workers = os.cpu_count() or 1
    nice = ServeConfig.load(args.config).worker_nice
    refs, runs, floors = [], [], []
    for k in range(args.repeat):  # paired: each daemon run beside an in-process run, on the machine as it is then
        print(f"round {k + 1}/{args.repeat}: in-process, {len(streams)} streams, {total} symbols, "
              f"{workers} threads ...", file=sys.stderr)
        refs.append(in_process(streams, args.batch, workers))
        if args.floor:
            print(f"round {k + 1}/{args.repeat}: in-process beside a ZeroMQ ping-pong at {args.qps:g}/s ...",
                  file=sys.stderr)
            floors.append(floor_run(streams, args.batch, workers, nice, args.qps, args.timeout))
        print(f"round {k + 1}/{args.repeat}: daemon, {PUBLISHERS} publishers + 1 querier ...", file=sys.stderr)
        runs.append(daemon_run(streams, args.batch, args.timeout, args.qps, args.fsync, args.config))
    ratios = [run["rate"] / (total / ref) for (ref, _), run in zip(refs, runs)]
    cpu_ratios = [run["cpu"] / cpu for (_, cpu), run in zip(refs, runs)]
    order = np.argsort(ratios)
    median = int(order[len(order) // 2])
    (ref, ref_cpu), run, ratio = refs[median], runs[median], ratios[median]
    body = "\n".join([
        f"Command: `{command_line('load.py')}`  ",
        f"Machine: {machine()}",
        "",
        f"{len(streams)} streams (the first {args.bytes:,} bytes of {len(streams)} logs), batches of {args.batch} "
        f"symbols, default byte-stream model, `seqd serve` defaults ({workers} workers, "
        f"fsync {'on' if args.fsync else 'off'}), wall clock.",
        "",
        "| | symbols | seconds | symbols/s | CPU seconds |",
        "|---|---:|---:|---:|---:|",
        f"| in-process learners, {workers} threads | {total:,} | {ref:.2f} | {total / ref:,.0f} | {ref_cpu:.2f} |",
        f"| daemon: {PUBLISHERS} publishers, 1 querier, loopback | {total:,} | {run['seconds']:.2f} | "
        f"{run['rate']:,.0f} | {run['cpu']:.2f} (the daemon process) |",
        f"| **daemon / in-process** | | | **{ratio:.1%}** | {cpu_ratios[median]:.2f}× |",
        "",
        f"The median of {args.repeat} paired rounds is shown; the ratio in each round: "
        + ", ".join(f"{r:.1%}" for r in ratios) + "; the daemon's CPU over the in-process learners' in each round: "
        + ", ".join(f"{r:.2f}×" for r in cpu_ratios) + "; predict p99 in each round: "
        + ", ".join(f"{r['p99']:.2f} ms" for r in runs) + ".",
        "",
        "| request, while ingesting | count | p50 (ms) | p99 (ms) | max (ms) |",
        "|---|---:|---:|---:|---:|",
        f"| predict (top 5), {'as fast as answered' if not args.qps else f'{args.qps:g} per second'} | "
        f"{run['predicts']:,} | {run['p50']:.3f} | {run['p99']:.3f} | {run['pmax']:.2f} |",
        f"| publish ({args.batch} symbols, busy retries included) | {run['publishes']:,} | "
        f"{run['pub_p50']:.3f} | {run['pub_p99']:.3f} | |",
        "",
        "The daemon's own measure of predict latency (arrival to reply, from `seqd_request_duration_seconds`, "
        f"all predicts since it started, among them the harness's own {len(streams) + 1}, which wait on purpose "
        "until their stream has learned everything): "
        + ", ".join(f"{share:.2%} within {le * 1e3:g} ms" for le, share in run["server_predict"].items()
                    if 2.5e-4 <= le <= 5e-3) + ".",
        "",
        _cpu_account(run, ref_cpu, workers),
    ])
    if floors:
        floor_ratios = [ref / f["seconds"] for (ref, _), f in zip(refs, floors)]
        body += "\n\n" + "\n".join([
            f"**Floor:** the in-process learners, at the workers' niceness ({nice}), beside a bare ZeroMQ "
            f"ping-pong between two other processes at {args.qps:g} round trips a second (no seqd code), against "
            f"the same round's learners alone: median "
            f"**{float(np.median(floor_ratios)):.1%}**; in each round "
            + ", ".join(f"{r:.1%}" for r in floor_ratios) + "; the ping-pong's own p99 in each round: "
            + ", ".join(f"{f['p99']:.2f} ms" for f in floors) + ". The daemon over the floor, per round: "
            + ", ".join(f"{r / fr:.1%}" for r, fr in zip(ratios, floor_ratios)) + ".",
        ])
    report("daemon_load", body, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
