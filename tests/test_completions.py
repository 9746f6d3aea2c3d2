"""What the loop's news means, without ZeroMQ: each report, tick and stop gives its replies and its work.

The streams are real (files in a temporary directory, a small learner); the
threads' part is played here by hand: the sync thread's report is built from
the group commit the loop would have queued, a worker is ``run_next``, the
namespace thread's work is ``Stream.create`` and its reports.
"""

from __future__ import annotations

import itertools
import logging

import pytest
from prometheus_client import CollectorRegistry

from seqd.clients import protocol as P
from seqd.clients.protocol import Request
from seqd.daemon.completions import EVENT_TOP, Completions, Outcome
from seqd.daemon.config import ServeConfig
from seqd.daemon.lifecycle import State
from seqd.daemon.metrics import Telemetry
from seqd.daemon.reports import (Created, CreateFailed, DropSynced, Faulted, Learned, SnapshotFailed,
                                 SnapshotWritten, Synced)
from seqd.daemon.pending import CreateJob, DropJob, Pending
from seqd.daemon.requests import Requests
from seqd.daemon.state_dir import StateDirectory
from seqd.daemon.streams import Stream
from seqd.daemon.waiters import Waiters

from daemon_harness import SMALL_BYTES


class Loop:
    """Completions over a state directory; what an Outcome asks is read by the test, not carried out."""

    def __init__(self, tmp_path, **settings):
        self.config = ServeConfig(state_dir=str(tmp_path / "state"), **settings)
        self.state = StateDirectory(self.config.state_dir)
        self.state.lock()
        self.stop = False
        self.registry = CollectorRegistry()
        self.requests = Requests(self.config, self.state, Waiters(), stopping=lambda: self.stop)
        telemetry = Telemetry(self.registry, streams=lambda: list(self.requests.streams.values()),
                              unavailable=lambda: 0, labelled=self.config.labelled)
        self.completions = Completions(self.config, self.requests, telemetry, stopping=lambda: self.stop)
        self._ids = itertools.count(1)

    def pending(self, op: str, **fields) -> Pending:
        return Pending(b"client", Request(id=next(self._ids), op=op, **fields), t0=0.0)

    def __call__(self, op: str, **fields) -> Outcome:
        """One request on its own (a burst of one, committed)."""
        acks = []
        out = self.completions.request(self.pending(op, **fields), acks)
        assert not acks, "a publish goes through burst()"
        return out

    def burst(self, *batches: tuple[str, bytes]):
        """Publishes in one burst: the acknowledgements and the burst's commit."""
        acks = []
        for name, symbols in batches:
            assert not self.completions.request(self.pending("publish", stream=name, symbols=symbols), acks).replies
        return acks, self.completions.commit(acks)

    def create(self, name: str) -> Stream:
        """A create carried through: the namespace thread's work and its report."""
        (job,) = self("create", stream=name, config=SMALL_BYTES).jobs
        stream = Stream.create(name, self.state.streams, job.config, fsync=False)
        assert answers(self.completions.report(Created(name, stream))) == [("ok", "create")]
        return stream

    def synced(self, commit: Outcome, failed=None) -> Outcome:
        """The sync thread's report on the group commit ``commit`` queued."""
        (acks,) = commit.syncs
        return self.completions.report(Synced(acks, failed or {}))

    def work(self, stream: Stream) -> list:
        """A worker's turns on ``stream`` until it has nothing left; the reports it posts."""
        reports, more = [], True
        while more:
            report, more = stream.run_next()
            reports += [report] if report is not None else []
        return reports

    def counter(self, name: str) -> float:
        return self.registry.get_sample_value(name) or 0.0

    def close(self) -> None:
        for stream in self.requests.streams.values():
            stream.log.close()
        self.state.unlock()


def answers(out: Outcome) -> list[tuple]:
    """The replies an outcome sends: each one's code ("ok" for a success) and kind."""
    return [("ok" if reply.ok else reply.code, op) for _, reply, op in out.replies]


@pytest.fixture
def loop(tmp_path):
    lp = Loop(tmp_path)
    yield lp
    lp.close()


def test_a_burst_is_acknowledged_and_queued_only_once_its_logs_are_synced(loop):
    s, t = loop.create("s"), loop.create("t")
    acks, commit = loop.burst(("s", b"abc"), ("t", b"xy"), ("s", b"de"))
    assert len(commit.syncs) == 1 and len(commit.syncs[0]) == 3  # one group commit for the burst
    assert not commit.replies and not commit.schedule and loop.completions.commits_in_flight == 1
    assert s.accepted == 5 and s.queued == 0 and s.syncing == 5
    out = loop.synced(commit)
    assert answers(out) == [("ok", "publish")] * 3
    assert [reply.result["position"] for _, reply, _ in out.replies] == [3, 2, 5]
    assert out.schedule == [s, t]  # s once: a worker takes both its batches
    assert loop.completions.commits_in_flight == 0 and s.syncing == 0 and s.syncing_batches == 0 and s.queued == 5
    assert loop.counter("seqd_symbols_accepted_total") == 7


def test_without_fsync_a_burst_is_acknowledged_at_its_end(tmp_path):
    loop = Loop(tmp_path, fsync=False)
    try:
        s = loop.create("s")
        _, commit = loop.burst(("s", b"ab"), ("s", b"c"))
        assert not commit.syncs and loop.completions.commits_in_flight == 0
        assert answers(commit) == [("ok", "publish")] * 2 and commit.schedule == [s] and s.queued == 3
    finally:
        loop.close()


def test_a_log_that_cannot_be_synced_breaks_its_stream_and_every_later_batch_is_refused(loop):
    s, t = loop.create("s"), loop.create("t")
    _, first = loop.burst(("s", b"ab"), ("t", b"cd"))
    _, second = loop.burst(("s", b"ef"))  # appended before the failure is known
    assert loop.completions.commits_in_flight == 2
    out = loop.synced(first, {"s": "write-ahead log could not be synced: EIO"})
    assert answers(out) == [(P.INTERNAL, "publish"), ("ok", "publish")]
    assert "could not be synced: EIO" in out.replies[0][1].message and out.schedule == [t]
    assert s.state is State.BROKEN and s.queued == 0
    out = loop.synced(second)  # synced, but behind the hole: refused all the same
    assert answers(out) == [(P.INTERNAL, "publish")] and not out.schedule and s.queued == 0
    assert s.syncing == 0 and s.syncing_batches == 0 and loop.completions.commits_in_flight == 0
    acks, _ = loop.burst()
    refused = loop.completions.request(loop.pending("publish", stream="s", symbols=b"g"), acks)
    assert answers(refused) == [(P.INTERNAL, "publish")] and not acks
    assert loop.counter("seqd_symbols_accepted_total") == 2


def test_a_dropped_streams_waiting_acknowledgements_are_refused_and_its_drop_answered(loop):
    s = loop.create("s")
    _, commit = loop.burst(("s", b"abc"))
    drop = loop("drop", stream="s")
    (job,) = drop.jobs
    assert isinstance(job, DropJob) and job.stream is s and not drop.replies
    out = loop.synced(commit)
    assert answers(out) == [(P.NO_SUCH_STREAM, "publish")] and not out.schedule
    assert "dropped before this batch was acknowledged" in out.replies[0][1].message
    out = loop.completions.report(DropSynced(s, job.requester, None))
    assert answers(out) == [("ok", "drop")] and out.replies[0][1].result == {"stream": "s", "dropped": True}
    assert s.state is State.GONE
    t = loop.create("t")
    (job,) = loop("drop", stream="t").jobs
    out = loop.completions.report(DropSynced(t, job.requester, OSError(5, "Input/output error")))
    assert answers(out) == [(P.INTERNAL, "drop")] and "may come back" in out.replies[0][1].message
    assert t.state is State.GONE


def test_a_learned_batch_publishes_its_event_and_answers_the_predicts_waiting_for_it(loop):
    s = loop.create("s")
    _, commit = loop.burst(("s", b"abcab"))
    for need in (5, 9):
        assert not loop("predict", stream="s", min_position=need, wait_ms=1000).replies
    assert loop.synced(commit).schedule == [s]
    (learned,) = loop.work(s)
    out = loop.completions.report(learned)
    (event,) = out.events
    assert (event.stream, event.position, event.symbols, event.bits) == ("s", 5, 5, learned.bits)
    assert list(event.top) == [tuple(pair) for pair in s.view.top(EVENT_TOP)] and event.escape == s.view.escape
    assert answers(out) == [("ok", "predict")] and out.replies[0][1].result["position"] == 5
    assert len(loop.requests.waiters) == 1  # the one waiting for position 9
    assert loop.counter("seqd_symbols_learned_total") == 5


def test_a_woken_predict_whose_answer_fails_is_told_so_and_the_others_are_answered(loop, monkeypatch, caplog):
    from seqd.daemon import completions, requests
    s = loop.create("s")
    _, commit = loop.burst(("s", b"abcab"))
    for top in (1, 2, 3):
        assert not loop("predict", stream="s", min_position=5, wait_ms=1000, top=top).replies
    loop.synced(commit)
    (learned,) = loop.work(s)

    def prediction(req, stream):
        if req.top == 2:
            raise RuntimeError("no view")
        return requests.prediction(req, stream)

    monkeypatch.setattr(completions, "prediction", prediction)
    with caplog.at_level(logging.ERROR, logger="seqd"):
        out = loop.completions.report(learned)
    assert answers(out) == [("ok", "predict"), (P.INTERNAL, "predict"), ("ok", "predict")]
    assert "no view" in out.replies[1][1].message and "waiting predict" in caplog.text
    assert len(loop.requests.waiters) == 0


def test_a_late_report_of_a_dropped_stream_reaches_no_stream_of_its_name(loop):
    old = loop.create("x")
    (job,) = loop("drop", stream="x").jobs
    loop.completions.report(DropSynced(old, job.requester, None))
    new = loop.create("x")
    assert not loop("predict", stream="x", min_position=1, wait_ms=1000).replies
    out = loop.completions.report(Learned(old, 3, 4.5, 0.01))  # the dropped stream's last batch
    assert not out.events and not out.replies and len(loop.requests.waiters) == 1
    assert loop.counter("seqd_symbols_learned_total") == 3  # learned all the same
    requester = loop.pending("snapshot", stream="x")
    out = loop.completions.report(SnapshotWritten(old, (requester,), 3))
    assert answers(out) == [(P.NO_SUCH_STREAM, "snapshot")] and new.snapshot_position == 0
    assert loop.counter("seqd_snapshots_total") == 0


def test_a_create_is_answered_once_its_stream_is_in_place_and_a_publish_with_create_published_then(loop):
    (job,) = loop("create", stream="bad", config=SMALL_BYTES).jobs
    out = loop.completions.report(CreateFailed("bad", OSError(28, "No space left on device")))
    assert answers(out) == [(P.INTERNAL, "create")] and "No space" in out.replies[0][1].message
    acks = []
    first = loop.completions.request(loop.pending("publish", stream="new", symbols=b"abc", create=True), acks)
    (job,) = first.jobs
    assert isinstance(job, CreateJob) and not first.replies and not acks
    stream = Stream.create("new", loop.state.streams, job.config, fsync=False)
    out = loop.completions.report(Created("new", stream))
    assert not out.replies and len(out.syncs) == 1 and stream.accepted == 3  # in the log, waiting for its fsync
    out = loop.synced(out)
    assert answers(out) == [("ok", "publish")] and out.replies[0][1].result["position"] == 3
    assert out.schedule == [stream]


def test_a_publish_with_create_that_completes_while_stopping_is_told_so(loop):
    acks = []
    (job,) = loop.completions.request(loop.pending("publish", stream="s", symbols=b"x", create=True), acks).jobs
    loop.stop = True
    out = loop.completions.report(Created("s", Stream.create("s", loop.state.streams, job.config, fsync=False)))
    assert answers(out) == [(P.SHUTTING_DOWN, "publish")] and not out.syncs
    assert loop.requests.streams["s"].accepted == 0


def test_a_snapshot_written_or_failed_answers_each_of_its_requesters(loop):
    s = loop.create("s")
    _, commit = loop.burst(("s", b"abcab"))
    loop.synced(commit)
    assert loop("snapshot", stream="s").schedule == []  # s is with a worker already
    assert loop("snapshot", stream="s").schedule == []  # joins the snapshot queued
    learned, written = loop.work(s)
    assert isinstance(written, SnapshotWritten) and len(written.requesters) == 2
    out = loop.completions.report(written)
    assert answers(out) == [("ok", "snapshot")] * 2 and out.replies[0][1].result == {"stream": "s", "position": 5}
    assert s.snapshot_position == 5 and loop.counter("seqd_snapshots_total") == 1
    assert sorted(p.name for p in s.directory.glob("wal-*")) == [f"wal-{5:020d}.log"]  # the log is cut
    before = s.snapshot_time
    failed = SnapshotFailed(s, (loop.pending("snapshot", stream="s"),), OSError(28, "No space left on device"))
    out = loop.completions.report(failed)
    assert answers(out) == [(P.INTERNAL, "snapshot")] and "snapshot failed: [Errno 28]" in out.replies[0][1].message
    assert s.snapshot_time >= before and loop.counter("seqd_snapshots_total") == 1


def test_a_log_that_cannot_be_cut_after_a_snapshot_breaks_its_stream(loop, monkeypatch):
    s = loop.create("s")
    monkeypatch.setattr(s.log, "checkpoint", lambda position: (_ for _ in ()).throw(OSError(5, "EIO")))
    out = loop.completions.report(SnapshotWritten(s, (loop.pending("snapshot", stream="s"),), 0))
    assert answers(out) == [("ok", "snapshot")]  # the snapshot is on disk
    assert s.state is State.BROKEN and "could not be synced or rotated" in s.broken


def test_a_faulted_stream_answers_the_snapshots_it_will_never_write(loop):
    s = loop.create("s")
    requester = loop.pending("snapshot", stream="s")
    s.request_snapshot(requester)
    orphans = s.fail("learning failed: FloatingPointError: overflow")
    out = loop.completions.report(Faulted(s, tuple(orphans)))
    assert answers(out) == [(P.INTERNAL, "snapshot")] and out.replies[0][0] is requester
    assert out.replies[0][1].message == "learning failed: FloatingPointError: overflow"


def test_periodic_snapshots_come_by_symbols_or_by_seconds(tmp_path):
    loop = Loop(tmp_path, fsync=False, snapshot_interval_symbols=10, snapshot_interval_seconds=60.0,
                hibernate_after_seconds=0)  # (hibernation has tests of its own)
    try:
        streams = {name: loop.create(name) for name in ("many", "few", "none", "broken")}
        _, commit = loop.burst(("many", b"0123456789"), ("few", b"abc"), ("broken", b"abc"))
        for stream in streams.values():
            loop.work(stream)
            stream.snapshot_time = 100.0
        streams["broken"].mark_broken("the log failed")
        assert loop.completions.tick(159.0).schedule == [streams["many"]]  # 10 symbols behind
        assert loop.completions.tick(159.0).schedule == []  # already queued
        assert loop.completions.tick(160.0).schedule == [streams["few"]]  # 60 s since the last one
        for name in ("many", "few"):
            (written,) = loop.work(streams[name])
            loop.completions.report(written)
        assert loop.completions.tick(10_000.0).schedule == []  # nothing learned since; a broken log is left
    finally:
        loop.close()


def test_a_waiting_predict_whose_deadline_passes_is_answered_timeout(loop):
    loop.create("s")
    assert not loop("predict", stream="s", min_position=4, wait_ms=250).replies
    (deadline,) = [w.deadline for w in loop.requests.waiters.waiting_for("s")]
    assert loop.completions.tick(deadline - 0.001).replies == []
    out = loop.completions.tick(deadline)
    assert answers(out) == [(P.TIMEOUT, "predict")]
    assert out.replies[0][1].message == "stream 's' did not reach position 4 within 250 ms"


def test_a_stop_drains_then_snapshots_what_changed_and_ends_once_the_workers_are_done(loop, caplog):
    idle, busy = loop.create("idle"), loop.create("busy")
    unchanged, faulted = loop.create("unchanged"), loop.create("faulted")
    _, first = loop.burst(("idle", b"abc"), ("busy", b"abc"), ("faulted", b"abc"))
    loop.synced(first)
    for stream in (idle, busy, faulted):
        loop.work(stream)
    faulted.fail("learning failed")
    _, second = loop.burst(("busy", b"de"))  # waiting for its sync when the stop comes
    acks = []
    (job,) = loop.completions.request(loop.pending("create", stream="late", config=SMALL_BYTES), acks).jobs
    loop.stop = True
    with caplog.at_level(logging.INFO, logger="seqd"):
        for _ in range(2):
            out, finished = loop.completions.wind_down()
            assert not out.schedule and not finished  # a sync and a creation are under way
    assert caplog.text.count("stopping: finishing queued work") == 1
    assert loop.synced(second).schedule == [busy]  # acknowledged and learned, as before the stop
    out, finished = loop.completions.wind_down()
    assert not out.schedule and not finished  # "late" is being created still
    late = Stream.create("late", loop.state.streams, job.config, fsync=False)
    assert answers(loop.completions.report(Created("late", late))) == [("ok", "create")]
    out, finished = loop.completions.wind_down()
    assert out.schedule == [idle] and not finished  # busy has a worker: its snapshot joins its queue
    assert busy.snapshot_pending and not unchanged.snapshot_pending and not faulted.snapshot_pending
    assert not late.snapshot_pending
    for stream in (idle, busy):
        assert isinstance(loop.work(stream)[-1], SnapshotWritten)
    out, finished = loop.completions.wind_down()
    assert finished and out.schedule == []  # asked once only


def test_a_request_that_is_refused_or_fails_is_answered(loop, monkeypatch):
    assert answers(loop("predict", stream="nowhere")) == [(P.NO_SUCH_STREAM, "predict")]
    monkeypatch.setattr(loop.requests, "server_stats", lambda: 1 / 0)
    out = loop("stats")
    assert answers(out) == [(P.INTERNAL, "stats")] and out.replies[0][1].message == "ZeroDivisionError: division by zero"


def test_a_fault_while_handling_a_report_is_logged_and_what_was_decided_is_kept(loop, monkeypatch, caplog):
    s, t = loop.create("s"), loop.create("t")
    _, commit = loop.burst(("s", b"ab"), ("t", b"cd"))

    def offer(start, symbols):
        raise RuntimeError("a fault of ours")
    monkeypatch.setattr(t, "offer", offer)
    with caplog.at_level(logging.ERROR, logger="seqd"):
        out = loop.synced(commit)
    assert answers(out) == [("ok", "publish")] and out.schedule == [s]  # s's batch, before the fault
    assert "handling a Synced report failed" in caplog.text and s.syncing == 0


def test_a_report_of_an_unknown_kind_is_logged_as_a_fault_and_changes_nothing(loop, caplog):
    class Stray:
        name = "s"

    with caplog.at_level(logging.ERROR, logger="seqd"):
        out = loop.completions.report(Stray())
    assert not (out.replies or out.schedule or out.events or out.syncs or out.jobs)
    assert "no meaning is known for a Stray report" in caplog.text
