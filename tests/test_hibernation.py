"""Hibernation: idle learners go to their snapshots (the least recently active first while the learners in
memory take more than ``max_state_bytes``, and any idle for ``hibernate_after_seconds``), answer predicts and
stats from their views while they sleep, and wake on the next batch to continue bit for bit.  The loop's part
is played by hand (as in test_completions.py), then the whole daemon, with its threads, is checked against
in-process learners."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest

from seqd.core.learners import learner_for
from seqd.daemon.reports import Created, DropSynced, Hibernated, Learned, NeedsRoom, SnapshotWritten
from seqd.daemon.budget import STREAM_BYTES
from seqd.daemon.learner_store import resident_bytes
from seqd.daemon.streams import Stream
from seqd.daemon.models import make_config

from daemon_harness import GLNN_BYTES, SMALL_BYTES, SMALL_GLNN, Caller, ThreadServer
from test_completions import Loop, answers

# The budget's bookkeeping is the same for every model: these tests run it with small GLNN byte-model streams, whose
# learners take the same memory from their creation on (tables of their first size) and at most a few MiB (the
# bitwise model's maps are some 20 MiB at their full size, which a budget of a few learners could not hold)
PRESET, SETTINGS = GLNN_BYTES, SMALL_GLNN
LEARNER = resident_bytes(make_config(PRESET, SETTINGS))  # what hibernation takes out of memory
SIZE = STREAM_BYTES + LEARNER  # a stream with its learner in memory


def room(learners: float, streams: int) -> int:
    """A ``max_state_bytes`` with room for so many learners beside so many streams' own bytes."""
    return int(LEARNER * learners) + STREAM_BYTES * streams


def text(n: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    words = [b"GET", b"POST", b"/index.html", b"/api/items", b"200", b"404", b"user=alice", b"user=bob"]
    out = b""
    while len(out) < n:
        out += b" ".join(words[i] for i in rng.integers(0, len(words), 6)) + b"\n"
    return out[:n]


def reference(*batches: bytes):
    learner = learner_for(make_config(PRESET, SETTINGS))
    for b in batches:
        learner.learn(b)
    return learner


def drain(loop: Loop, out) -> list:
    """Carry out the work an outcome hands to the workers, and the work their reports hand on, in turn; the
    reports."""
    reports, todo = [], list(out.schedule)
    while todo:
        for r in loop.work(todo.pop(0)):
            reports.append(r)
            todo += loop.completions.report(r).schedule
    return reports


def create(loop: Loop, name: str) -> Stream:
    """A create carried through, and what its registration asks of the workers."""
    (job,) = loop("create", stream=name, preset=PRESET, config=SETTINGS).jobs
    stream = Stream.create(name, loop.state.streams, job.config, fsync=False)
    out = loop.completions.report(Created(name, stream))
    assert answers(out) == [("ok", "create")]
    drain(loop, out)
    return stream


def feed(loop: Loop, name: str, data: bytes) -> list:
    """A batch through the loop's bookkeeping and a worker, and what the reports hand on; the reports."""
    acks = []
    out = loop.completions.request(loop.pending("publish", stream=name, symbols=data), acks)
    out = loop.completions.commit(acks)  # fsync off: acknowledged and queued at once
    return drain(loop, out)


def sleep(loop: Loop, now: float) -> list:
    """A tick at ``now`` and the hibernations it asks, carried out; the streams it chose."""
    out = loop.completions.tick(now)
    chosen = [s.name for s in out.schedule]
    drain(loop, out)
    return chosen


def budget(loop: Loop, learners: float, streams: int | None = None) -> None:
    """Set ``max_state_bytes`` to so many learners beside ``streams`` streams' own bytes (by default those the
    loop serves); the streams are built with room for all."""
    streams = len(loop.requests.streams) if streams is None else streams
    config = dataclasses.replace(loop.config, max_state_bytes=room(learners, streams))
    loop.config = loop.completions.config = loop.requests.config = config
    loop.requests.budget.limit = config.max_state_bytes


@pytest.fixture
def loop(tmp_path):
    lp = Loop(tmp_path, fsync=False, hibernate_after_seconds=0)  # room for all until a test sets the budget
    yield lp
    lp.close()


def test_over_the_budget_the_least_recently_active_idle_learners_hibernate(loop):
    streams = {name: create(loop, name) for name in "abc"}
    for i, name in enumerate("abc"):
        feed(loop, name, text(800, i))
        streams[name].last_active = 10.0 + i
    budget(loop, 2.5)
    assert sleep(loop, 100.0) == ["a"]  # three learners over a budget of two and a half: the oldest goes
    a = streams["a"]
    assert not a.resident and streams["b"].resident and streams["c"].resident
    assert a.snapshot_position == 800 and (a.directory / "snapshot").exists()  # written first, log cut after it
    assert sleep(loop, 200.0) == []  # two fit
    assert loop.counter("seqd_hibernations_total") == 1 and loop.counter("seqd_streams_resident") == 2
    # asleep, it still answers from its view: the same as an awake learner fed the same bytes
    predicted = loop("predict", stream="a", top=0).replies[0][1].result
    assert np.array_equal(np.array(predicted["distribution"]), reference(text(800, 0)).predict_proba())
    stats = loop("stats", stream="a").replies[0][1].result
    assert stats["position"] == 800 and stats["resident"] is False and not a.resident  # not woken by reading


def test_a_batch_wakes_a_hibernated_learner_which_continues_bit_for_bit(loop):
    a = create(loop, "a")
    feed(loop, "a", text(900, 1))
    for name in "bc":
        create(loop, name)
        feed(loop, name, text(300, 5))
    a.last_active = 0.0
    loop.requests.streams["b"].last_active = loop.requests.streams["c"].last_active = 50.0
    budget(loop, 2.5)
    assert sleep(loop, 100.0) == ["a"]  # three learners over the budget: "a", the oldest, goes
    reports = feed(loop, "a", text(700, 2))
    (learned,) = [r for r in reports if isinstance(r, Learned)]
    assert learned.woken is not None and learned.woken > 0 and a.resident
    # "a" woke: three learners again, and the least recently active idle one made room at once
    assert [r.stream.name for r in reports if isinstance(r, Hibernated)] == ["b"] and not loop.requests.streams["b"].resident
    assert loop.registry.get_sample_value("seqd_wake_duration_seconds_count") == 1
    expected = reference(text(900, 1), text(700, 2))
    assert np.array_equal(a.learner.predict_proba(), expected.predict_proba())
    assert a.code_bits == pytest.approx(float(reference().learn(text(900, 1) + text(700, 2)).sum()), rel=1e-12)


def test_a_hibernated_stream_keeps_only_its_view_and_wakes_with_its_recent_code_lengths(loop):
    a = create(loop, "a")
    first, then = text(5000, 7), text(700, 8)
    feed(loop, "a", first)
    assert a.request_hibernation()
    loop.completions.report(*loop.work(a))
    assert not a.resident and a._recent is None  # the snapshot holds them while it sleeps
    feed(loop, "a", then)
    bits = reference().learn(first + then)
    stats = a.view.stats  # the recent rate spans the wake: the last 4,096 code lengths, as if it never slept
    assert stats["recent_bits_per_symbol"] == float(bits[-4096:].sum()) / 4096
    assert stats["code_bits"] == pytest.approx(float(bits.sum()), rel=1e-12)


def test_an_idle_learner_hibernates_after_its_time_even_with_room(tmp_path):
    loop = Loop(tmp_path, fsync=False, hibernate_after_seconds=60.0)  # the default budget: room for all
    try:
        s = create(loop, "s")
        feed(loop, "s", text(500, 3))
        s.last_active = s.snapshot_time = 1000.0  # the test's clock (no periodic snapshot due before 1300)
        assert sleep(loop, 1059.0) == [] and s.resident
        assert sleep(loop, 1060.0) == ["s"] and not s.resident
        feed(loop, "s", text(10, 4))
        assert s.resident
    finally:
        loop.close()


def test_a_batch_that_comes_before_the_worker_keeps_the_learner(loop):
    s = create(loop, "s")
    feed(loop, "s", text(400, 6))
    assert s.request_hibernation()
    loop.burst(("s", text(100, 7)))  # queued behind the hibernation
    reports = loop.work(s)
    assert not any(isinstance(r, Hibernated) for r in reports) and s.resident
    assert s.view.position == 500 and not s.hibernation_pending


def test_a_snapshot_of_a_hibernated_stream_is_the_one_it_sleeps_in(loop):
    s = create(loop, "s")
    feed(loop, "s", text(600, 8))
    assert s.request_hibernation()
    (slept,) = loop.work(s)
    loop.completions.report(slept)
    assert isinstance(slept, Hibernated) and slept.snapshot == 600 and not s.resident
    out = loop("snapshot", stream="s")
    (stream,) = out.schedule
    (written,) = loop.work(stream)
    assert isinstance(written, SnapshotWritten) and written.position == 600 and not s.resident
    assert answers(loop.completions.report(written)) == [("ok", "snapshot")]


def test_the_daemon_keeps_its_learners_within_budget_and_every_stream_exact(tmp_path):
    names = [f"s{i}" for i in range(5)]
    sent = {n: [] for n in names}
    with ThreadServer(tmp_path / "state", max_state_bytes=room(2, 5), hibernate_after_seconds=0) as srv:
        call = Caller(srv.api)
        for n in names:
            call.ok("create", stream=n, preset=PRESET, config=SETTINGS)
        rng = np.random.default_rng(0)
        registry = srv.server.registry

        def settled():  # the housekeeping turns every quarter second: it hibernates until two fit
            for _ in range(200):
                if registry.get_sample_value("seqd_streams_resident") <= 2:
                    return True
                time.sleep(0.05)
            return False
        for round_ in range(4):
            for i, n in enumerate(rng.permutation(names)):
                batch = text(int(rng.integers(200, 900)), 100 * round_ + i)
                sent[n].append(batch)
                position = call.ok("publish", stream=n, symbols=batch)["position"]
                call.ok("predict", stream=n, min_position=position, wait_ms=30000)
            assert settled()
        assert registry.get_sample_value("seqd_hibernations_total") >= 3
        assert registry.get_sample_value("seqd_wake_duration_seconds_count") >= 1
        for n in names:
            got = call.ok("predict", stream=n, top=0)["distribution"]
            assert np.array_equal(np.array(got), reference(*sent[n]).predict_proba()), n
        call.close()
    with ThreadServer(tmp_path / "state", max_state_bytes=room(2, 5), hibernate_after_seconds=0) as srv:
        call = Caller(srv.api)  # restored from the snapshots they slept in, and the logs
        for n in names:
            assert call.ok("stats", stream=n)["position"] == sum(map(len, sent[n]))
        call.close()


def test_a_restart_opens_streams_within_the_budget(tmp_path):
    sent = {}
    with ThreadServer(tmp_path / "state") as srv:  # room for all: none hibernates
        call = Caller(srv.api)
        for i in range(4):
            name = f"s{i}"
            sent[name] = text(600 + 100 * i, 40 + i)
            call.ok("create", stream=name, preset=PRESET, config=SETTINGS)
            call.ok("publish", stream=name, symbols=sent[name])
            call.ok("predict", stream=name, min_position=len(sent[name]), wait_ms=30000)
        call.close()
    with ThreadServer(tmp_path / "state", max_state_bytes=room(2, 4), hibernate_after_seconds=0) as srv:
        resident = [s.name for s in srv.server.streams.values() if s.resident]
        assert len(resident) == 2  # the rest opened, then went back to the snapshots they came from
        call = Caller(srv.api)
        for name, data in sent.items():
            got = call.ok("predict", stream=name, top=0)["distribution"]
            assert np.array_equal(np.array(got), reference(data).predict_proba()), name
            more = text(300, 90)
            position = call.ok("publish", stream=name, symbols=more)["position"]
            call.ok("predict", stream=name, min_position=position, wait_ms=30000)
            got = call.ok("predict", stream=name, top=0)["distribution"]
            assert np.array_equal(np.array(got), reference(data, more).predict_proba()), name
        call.close()


def test_a_hibernated_stream_dropped_with_a_batch_queued_learns_nothing_and_its_folder_goes(loop):
    s = create(loop, "s")
    feed(loop, "s", text(400, 11))
    assert s.request_hibernation()
    drain(loop, type("Out", (), {"schedule": [s]})())
    assert not s.resident
    acks = []
    loop.completions.request(loop.pending("publish", stream="s", symbols=text(100, 12)), acks)
    loop.completions.commit(acks)  # queued for a worker that has not come yet
    out = loop("drop", stream="s")  # the folder goes to the trash; the drop is queued behind the batch
    reports = loop.work(s)
    assert not any(isinstance(r, Learned) for r in reports) and not s.resident
    assert not list(loop.state.trash.iterdir())  # the queued drop still deleted the folder
    assert out.jobs


def test_a_hibernation_whose_snapshot_fails_waits_an_interval_before_trying_again(loop, monkeypatch):
    from seqd.daemon import snapshot_file

    s = create(loop, "s")
    feed(loop, "s", text(400, 13))
    budget(loop, 0.5)  # over the budget whatever happens

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(snapshot_file, "write_durably", full)
    now = time.monotonic()  # the loop's clock: the failure is dated by it
    assert sleep(loop, now) == ["s"] and s.resident  # tried, failed: the learner stays
    assert sleep(loop, now + 0.25) == []  # not again at the next turn
    monkeypatch.undo()
    later = now + loop.config.snapshot_interval_seconds + 1
    assert sleep(loop, later) == ["s"] and s.resident  # the periodic snapshot comes first (it failed too)...
    assert sleep(loop, later + 0.25) == ["s"] and not s.resident  # ...then the hibernation, with nothing to write


def test_a_broken_stream_keeps_its_learner_and_counts_against_the_budget(loop):
    s = create(loop, "s")
    feed(loop, "s", text(300, 14))
    s.mark_broken("the log failed")
    budget(loop, 1.5)
    assert sleep(loop, 10_000.0) == [] and s.resident
    assert loop.requests.busy_bytes() == STREAM_BYTES + s.learner_bytes  # and its view, log, objects
    assert loop("create", stream="t", preset=PRESET, config=SETTINGS).replies[0][1].code == "limit"


def within(loop: Loop) -> bool:
    """The learners in memory, and those being woken or created, hold no more than the budget."""
    b = loop.requests.budget
    resident = sum(s.learner_bytes for s in loop.requests.streams.values() if s.resident)
    return resident <= b.held <= b.limit


def test_a_wake_without_room_waits_for_the_hibernation_that_makes_it(loop):
    streams = {name: create(loop, name) for name in "abc"}
    for i, name in enumerate("abc"):
        feed(loop, name, text(600, 30 + i))
        streams[name].last_active = 10.0 + i
    budget(loop, 2)
    assert sleep(loop, 100.0) == ["a"] and within(loop)
    a, b = streams["a"], streams["b"]
    acks = []
    loop.completions.request(loop.pending("publish", stream="a", symbols=text(300, 40)), acks)
    out = loop.completions.commit(acks)
    assert out.schedule == [b, a]  # the hibernation that makes room is asked first...
    (report,) = loop.work(a)  # ...but the second worker reaches "a" before the first is done with "b"
    assert isinstance(report, NeedsRoom) and not a.resident and a.scheduled and within(loop)
    assert loop.completions.report(report).schedule == []  # it waits: nothing is allocated
    assert loop.counter("seqd_room_waits_total") == 1
    (slept,) = loop.work(b)
    assert isinstance(slept, Hibernated) and within(loop)
    assert loop.completions.report(slept).schedule == [a]  # room: the wake goes on
    (learned,) = loop.work(a)
    assert isinstance(learned, Learned) and learned.woken is not None and a.resident and within(loop)
    assert np.array_equal(a.learner.predict_proba(), reference(text(600, 30), text(300, 40)).predict_proba())


def test_a_create_without_room_waits_for_the_hibernation_that_makes_it(loop):
    a, b = create(loop, "a"), create(loop, "b")
    for s, seed in ((a, 50), (b, 51)):
        feed(loop, "ab"[seed - 50], text(400, seed))
    a.last_active, b.last_active = 1.0, 2.0
    budget(loop, 2, streams=3)
    out = loop("create", stream="c", preset=PRESET, config=SETTINGS)
    assert not out.jobs and not out.replies and out.schedule == [a]  # nothing allocated; "a" asked to make room
    assert loop.requests.budget.held == 2 * SIZE
    (slept,) = loop.work(a)
    (job,) = loop.completions.report(slept).jobs  # room: now the namespace thread builds it
    assert within(loop) and loop.requests.budget.held == 2 * SIZE + STREAM_BYTES  # "b", "a" asleep, "c"'s room
    stream = Stream.create("c", loop.state.streams, job.config, fsync=False)
    assert answers(loop.completions.report(Created("c", stream))) == [("ok", "create")]
    assert within(loop) and sorted(s.name for s in loop.requests.streams.values() if s.resident) == ["b", "c"]


def test_a_stream_dropped_while_it_waits_for_room_is_dropped(loop):
    a, b = create(loop, "a"), create(loop, "b")
    feed(loop, "a", text(400, 60))
    budget(loop, 1)
    a.last_active, b.last_active = 1.0, 2.0
    assert sleep(loop, 100.0) == ["a"]
    b.last_active = 200.0
    loop.burst(("b", text(10, 61)))  # "b" at work: it cannot make room
    acks = []
    loop.completions.request(loop.pending("publish", stream="a", symbols=text(100, 62)), acks)
    loop.completions.commit(acks)
    (report,) = loop.work(a)
    assert isinstance(report, NeedsRoom)
    loop.completions.report(report)
    out = loop("drop", stream="a")
    assert out.schedule == [a]  # its wait ends: the drop's work goes on
    assert loop.work(a) == [] and not a.scheduled and not a.resident and within(loop)
    assert not list(loop.state.trash.iterdir()) and not loop.completions.waiting


def test_a_wake_that_cannot_read_its_snapshot_gives_its_room_back(loop, monkeypatch):
    from seqd.daemon import snapshot_file

    a = create(loop, "a")
    feed(loop, "a", text(400, 70))
    assert a.request_hibernation()
    loop.completions.report(*loop.work(a))
    held = loop.requests.budget.held
    loop.burst(("a", text(50, 71)))

    def damaged(*args, **kwargs):
        raise ValueError("checksum mismatch")
    monkeypatch.setattr(snapshot_file, "read", damaged)
    with pytest.raises(ValueError, match="checksum"):  # the worker marks it faulted (test_completions.py)
        a.run_next()
    assert loop.requests.budget.held == held and not a.holds_room and not a.resident


def test_a_dropped_learner_gives_its_room_back(loop):
    a = create(loop, "a")
    feed(loop, "a", text(300, 80))
    assert loop.requests.budget.held == SIZE
    drop = loop("drop", stream="a")
    (stream,) = drop.schedule
    loop.work(stream)
    assert loop.requests.budget.held == STREAM_BYTES and not a.resident  # its learner's room is back at once...
    (job,) = drop.jobs
    loop.completions.report(DropSynced(a, job.requester, None))
    assert loop.requests.budget.held == 0  # ...and the rest once the drop is durable


@pytest.mark.parametrize("preset, settings", [("bytes", SMALL_BYTES), (GLNN_BYTES, SMALL_GLNN),
                                              ("glnn", {"alphabet_cap": 256})])
def test_a_learner_read_in_pieces_is_the_learner_read_whole(preset, settings):
    import io

    learner = learner_for(make_config(preset, settings))
    learner.learn(text(700, 21))
    data = learner.to_bytes()
    kind = type(learner)

    def from_stream(blob, limit=None):
        f = io.BytesIO(blob)
        return kind.from_stream(f.readinto, f.read, limit)

    again, whole = from_stream(data), kind.from_bytes(data)
    assert again.config == whole.config and all(np.array_equal(a, b) for a, b in zip(again.state, whole.state))
    assert all(a.flags.writeable for a in again.state)
    more = text(300, 22)
    assert np.array_equal(again.learn(more), learner.learn(more))
    with pytest.raises(ValueError, match="truncated"):
        from_stream(data[:-100])
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 1
    with pytest.raises(ValueError, match="checksum|non-finite|inconsistent|outside"):
        from_stream(bytes(damaged))
    with pytest.raises(ValueError, match="followed by other bytes"):
        from_stream(data + b"x")
    with pytest.raises(ValueError, match="more than"):
        from_stream(data, limit=len(data) // 2)
