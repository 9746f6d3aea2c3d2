"""The cluster client's decisions, without NATS: which URLs make a cluster client, where each request goes,
how the replicas' statistics merge; and the pieces a replica reads from the cluster's store instead of a
state directory (a stream.json's bytes, a snapshot's bytes), against the files' own readers."""

import hashlib

import numpy as np
import pytest

from seqd.clients import cluster
from seqd.clients._common import Operations
from seqd.core.learners import PRESETS, learner_for
from seqd.daemon import snapshot_file, sparse, stream_meta
from seqd.daemon.cluster import placement
from seqd.daemon.learner_store import RECENT
from seqd.daemon.models import make_config


def test_nats_urls_make_a_cluster_client_and_a_mixture_is_refused():
    assert cluster.is_cluster("nats://a:4222")
    assert cluster.is_cluster(["nats://a:4222", "nats://b:4222"])
    assert cluster.is_cluster("nats://a:4222,nats://b:4222")
    assert not cluster.is_cluster("tcp://127.0.0.1:7710")
    with pytest.raises(ValueError, match="not both"):
        cluster.is_cluster(["nats://a:4222", "tcp://b:7710"])
    assert cluster.servers_of("nats://a:1,nats://b:2") == ("nats://a:1", "nats://b:2")


def test_the_client_and_the_replicas_agree_on_a_stream_s_partition():
    assert placement.partition_of is cluster.partition_of
    for name in ("web", "a.b.c", "x" * 128):
        digest = hashlib.blake2b(name.encode(), digest_size=8).digest()
        assert cluster.partition_of(name, 16) == int.from_bytes(digest, "big") % 16
    assert cluster.event_subject("a.b") == "seqd.events.a~b"
    assert cluster.event_subjects(None) == ["seqd.events.>"]


def test_requests_are_routed_by_stream_fleet_or_any_replica():
    ops = Operations(("nats://a:4222",), router=cluster.route)
    assert ops.endpoint_for("web") == cluster.STREAM_PREFIX + "web"
    assert ops.endpoint_for(None) == cluster.CONTROL_ANY
    assert ops.endpoint_for(None, fleet=True) == cluster.CONTROL_STATS
    plan = ops.stats(None)
    assert next(plan).endpoint == cluster.CONTROL_STATS
    plan = ops.stats("web")
    assert next(plan).endpoint == cluster.STREAM_PREFIX + "web"


def test_the_replicas_statistics_merge_into_the_fleet_s():
    merged = cluster.merge_stats([
        dict(member="r1", version="0.22.0", uptime_seconds=5.0, streams=["a", "b"], queued=3, symbols_learned=10,
             partitions=[0, 2], members=2),
        dict(member="r2", version="0.22.0", uptime_seconds=9.0, streams=["c"], queued=1, symbols_learned=5,
             partitions=[1], members=2, unavailable={"d": "why"}),
    ])
    assert merged["streams"] == ["a", "b", "c"]
    assert (merged["queued"], merged["symbols_learned"], merged["uptime_seconds"]) == (4, 15, 9.0)
    assert [r["member"] for r in merged["replicas"]] == ["r1", "r2"]
    assert merged["replicas"][0]["partitions"] == [0, 2] and merged["unavailable"] == {"d": "why"}


def test_a_stream_json_from_bytes_is_read_as_strictly_as_from_its_file(tmp_path):
    config = make_config("ctw", None)
    body = stream_meta.encode("web", 1.5, config)
    assert stream_meta.parse(body, "log of web", "web") == ("web", 1.5, config)
    with pytest.raises(stream_meta.BadStreamFile, match="names stream 'web'"):
        stream_meta.parse(body, "log of other", "other")
    with pytest.raises(stream_meta.BadStreamFile, match="not valid JSON"):
        stream_meta.parse(b"{", "log of web", "web")
    (tmp_path / "web").mkdir()
    (tmp_path / "web" / stream_meta.NAME).write_bytes(body)
    assert stream_meta.read(tmp_path / "web") == ("web", 1.5, config)


@pytest.mark.parametrize("preset", ["ctw", "glnn"])
def test_a_snapshot_from_bytes_is_the_snapshot_file(tmp_path, preset):
    model, make = PRESETS[preset]
    learner = learner_for(make())
    learner.learn(np.frombuffer(b"GET /index.html 200\n" * 20, dtype=np.uint8))
    recent = np.zeros(RECENT)
    parts = [snapshot_file.head(400, 123.0, recent, [(b"id", 0, 400)]), *sparse.encoded(learner.snapshot_parts())]
    data = b"".join(bytes(p) for p in parts)
    path = tmp_path / "snapshot"
    path.write_bytes(data)
    from_file = snapshot_file.read(path, RECENT, learner_type=type(learner))
    from_bytes = snapshot_file.read_bytes(data, "object web/1", RECENT, learner_type=type(learner))
    assert from_bytes[0] == from_file[0] == 400 and from_bytes[4] == from_file[4] == [(b"id", 0, 400)]
    assert from_bytes[3].to_bytes() == from_file[3].to_bytes() == learner.to_bytes()
    with pytest.raises(ValueError, match="object web/1"):
        snapshot_file.read_bytes(data[:-7], "object web/1", RECENT, learner_type=type(learner))


def test_a_cluster_is_configured_by_its_section_or_the_flags():
    from seqd.daemon.config import ServeConfig

    config = ServeConfig.load(text='[cluster]\nservers = ["nats://a:4222", "nats://b:4222"]\npartitions = 8\n'
                                   'member = "r1"\nlease_ttl = 6.0\n', overrides={"cluster_replicas": 1})
    settings = config.cluster_settings()
    assert settings.servers == ("nats://a:4222", "nats://b:4222") and settings.partitions == 8
    assert (settings.replicas, settings.lease_ttl, settings.heartbeat_ttl, config.cluster_member) == (1, 6.0, 6.0, "r1")
    assert ServeConfig.load(overrides={"cluster_servers": "nats://a:1,nats://b:2"}).cluster_servers == (
        "nats://a:1", "nats://b:2")
    assert ServeConfig.load().cluster_settings() is None  # the single-machine daemon
    with pytest.raises(ValueError, match="unknown key 'server' in \\[cluster\\]; known: servers, member"):
        ServeConfig.load(text="[cluster]\nserver = 1\n")
    with pytest.raises(ValueError, match="nats:// URLs"):
        ServeConfig.load(text='[cluster]\nservers = ["tcp://a:1"]\n')
    # a replica snapshots more often by default (it bounds a take-over's replay); a setting is kept
    assert (ServeConfig.load().snapshot_interval_symbols, config.snapshot_interval_symbols) == (1 << 22, 1 << 18)
    assert ServeConfig.load(text="[durability]\nsnapshot_interval_symbols = 5000\n",
                            overrides={"cluster_servers": "nats://a:1"}).snapshot_interval_symbols == 5000
    assert config.cluster_warm == ("bytes",)
    assert ServeConfig.load(text='[cluster]\nwarm = ["ctw", "glnn"]\n').cluster_warm == ("ctw", "glnn")
    with pytest.raises(ValueError, match="preset names"):
        ServeConfig.load(text="[cluster]\nwarm = [1]\n")
