"""Request handling without ZeroMQ: each request gets its reply, or the deferral that says what it waits for.

The streams are real (files in a temporary directory, a small learner); the
loop's part is played here by hand: a deferral's work is done in the test, as
the sync thread, a worker or the namespace thread would do it.
"""

from __future__ import annotations

import numpy as np
import pytest

import seqd
from seqd.clients import protocol as P
from seqd.clients.protocol import Reply, Request
from seqd.daemon.config import ServeConfig
from seqd.daemon.lifecycle import State
from seqd.daemon.reports import Created, CreateFailed
from seqd.daemon.pending import AwaitNamespace, AwaitPosition, AwaitRoom, AwaitSync, AwaitWorker, CreateJob, DropJob, Pending
from seqd.daemon.requests import Requests, prediction
from seqd.daemon.state_dir import StateDirectory
from seqd.daemon.models import make_config
from seqd.daemon.budget import STREAM_BYTES
from seqd.daemon.learner_store import resident_bytes
from seqd.daemon.streams import Stream
from seqd.daemon.waiters import Waiters

from daemon_harness import GLNN_BYTES, SMALL_BYTES, SMALL_GLNN


class Daemon:
    """Request handling over a state directory, with the loop's part done by hand."""

    def __init__(self, tmp_path, **settings):
        self.config = ServeConfig(state_dir=str(tmp_path / "state"), fsync=False, **settings)
        self.state = StateDirectory(self.config.state_dir)
        self.state.lock()
        self.stop = False
        self.requests = Requests(self.config, self.state, Waiters(), stopping=lambda: self.stop)
        self._ids = iter(range(1, 10**6))

    def __call__(self, op: str, **fields):
        pending = Pending(b"client", Request(id=next(self._ids), op=op, **fields), t0=0.0)
        try:
            return self.requests.handle(pending)
        except P.ProtocolError as exc:
            return Reply.failure(pending.request.id, exc.code, exc.message, exc.retry_after_ms)

    def create(self, name: str, config=SMALL_BYTES, preset=None) -> Stream:
        """A create carried through: the namespace thread's work, then the registration."""
        job = self("create", stream=name, config=config, **({"preset": preset} if preset else {}))
        assert isinstance(job, AwaitNamespace) and isinstance(job.job, CreateJob)
        stream = Stream.create(name, self.state.streams, job.job.config, fsync=False)
        pending, failure = self.requests.created(Created(name, stream))
        assert failure is None and pending.request.op == "create"
        return stream

    def learn(self, stream: Stream) -> None:
        """What the workers do with what the stream has queued."""
        more = True
        while more:
            _, more = stream.run_next()

    def close(self) -> None:
        for stream in self.requests.streams.values():
            stream.log.close()
        self.state.unlock()


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path)
    yield d
    d.close()


def test_ping_and_the_server_statistics_report_the_package_version(daemon):
    assert daemon("ping").result == {"server": "seqd", "version": seqd.__version__,
                                     "protocol": P.PROTOCOL_VERSION}
    assert daemon("stats").result["version"] == seqd.__version__


def test_a_publish_waits_for_its_sync_and_a_predict_for_its_position(daemon):
    stream = daemon.create("s")
    assert stream.state is State.LIVE
    ack = daemon("publish", stream="s", symbols=b"abcab")
    assert isinstance(ack, AwaitSync) and ack.stream is stream and ack.pending.position == 5
    assert stream.accepted == 5 and stream.syncing == 5 and stream.queued == 0  # in the log, not yet queued
    assert ack.symbols.dtype == np.uint8 and bytes(ack.symbols) == b"abcab"
    assert daemon("predict", stream="s", min_position=5, wait_ms=0).code == P.TIMEOUT
    assert isinstance(daemon("predict", stream="s", min_position=5, wait_ms=100), AwaitPosition)
    assert len(daemon.requests.waiters) == 1
    stream.syncing -= 5  # the loop's acknowledgement, after the sync
    stream.syncing_batches -= 1
    assert stream.offer(0, ack.symbols)
    daemon.learn(stream)
    (woken,) = daemon.requests.waiters.wake("s", stream.view.position)
    assert prediction(woken.request, stream).result["position"] == 5
    assert daemon("predict", stream="s", min_position=5).result == prediction(woken.request, stream).result


def test_a_batch_is_checked_before_it_touches_the_log(tmp_path):
    daemon = Daemon(tmp_path, max_queue_symbols=8, max_batch_symbols=8)
    try:
        stream = daemon.create("s", config={"units": 4, "alphabet_cap": 16}, preset="glnn")
        assert daemon("publish", stream="s", symbols=[3, 16]).code == P.BAD_SYMBOL
        assert daemon("publish", stream="s", symbols=[1], position=4).code == P.CONFLICT
        assert isinstance(daemon("publish", stream="s", symbols=[1, 2, 3]), AwaitSync)
        busy = daemon("publish", stream="s", symbols=list(range(6)))
        assert busy.code == P.BUSY and busy.retry_after_ms == 10
        assert stream.accepted == 3
        stream.mark_broken("the log failed")
        refused = daemon("publish", stream="s", symbols=[1])
        assert refused.code == P.INTERNAL and "the log failed" in refused.message and stream.accepted == 3
    finally:
        daemon.close()


def test_a_stream_being_created_answers_busy_and_counts_against_the_limit(tmp_path):
    daemon = Daemon(tmp_path, max_streams=2)
    try:
        job = daemon("create", stream="new", config=SMALL_BYTES)
        assert isinstance(job, AwaitNamespace) and job.job.name == "new"
        for op, fields in [("predict", {}), ("stats", {}), ("drop", {}), ("publish", {"symbols": b"x"}),
                           ("snapshot", {}), ("create", {})]:
            reply = daemon(op, stream="new", **fields)
            assert reply.code == P.BUSY and reply.retry_after_ms, op
        assert isinstance(daemon("publish", stream="other", symbols=b"x", create=True), AwaitNamespace)
        assert daemon("create", stream="third").code == P.LIMIT
        pending, failure = daemon.requests.created(CreateFailed("new", OSError(28, "No space left on device")))
        assert pending.request.op == "create" and failure[0] == P.INTERNAL and "No space" in failure[1]
        assert daemon("predict", stream="new").code == P.NO_SUCH_STREAM
        pending, failure = daemon.requests.created(
            Created("other", Stream.create("other", daemon.state.streams, make_config(None, None), fsync=False)))
        assert failure is None and pending.request.op == "publish"  # the publish is published now
        assert isinstance(daemon.requests.publish(pending, daemon.requests.streams["other"]), AwaitSync)
    finally:
        daemon.close()


def test_a_creation_over_max_state_bytes_is_refused_and_leaves_nothing(tmp_path):
    # (small GLNN byte-model streams: their full size fits a budget of one and a half, as the bitwise model's does not)
    size = STREAM_BYTES + resident_bytes(make_config(GLNN_BYTES, SMALL_GLNN))  # what the budget counts of a stream
    daemon = Daemon(tmp_path, max_state_bytes=size * 3 // 2)
    try:
        daemon.create("a", SMALL_GLNN, preset=GLNN_BYTES)
        assert isinstance(daemon("publish", stream="a", symbols=b"xy"), AwaitSync)  # at work: cannot hibernate
        refused = daemon("create", stream="b", preset=GLNN_BYTES, config=SMALL_GLNN)  # refused up front
        assert refused.code == P.LIMIT and "max_state_bytes" in refused.message and "b" not in daemon.requests.creating
        # and a learner larger than its create foresaw is refused at registration, its files removed
        daemon.requests.creating["b"] = Pending(b"client", Request(id=99, op="create", stream="b"), t0=0.0)
        daemon.requests.reserved["b"] = 1  # its create foresaw one byte, and took it from the budget
        daemon.requests.budget.take(1)
        stream = Stream.create("b", daemon.state.streams, make_config(GLNN_BYTES, SMALL_GLNN), fsync=False)
        _, failure = daemon.requests.created(Created("b", stream))
        assert failure[0] == P.LIMIT and "max_state_bytes" in failure[1]
        assert stream.state is State.GONE and not stream.directory.exists()
        assert sorted(daemon.requests.streams) == ["a"]
    finally:
        daemon.close()


def test_creates_and_publishes_are_refused_while_stopping(daemon):
    daemon.create("s")
    daemon.stop = True
    for op, fields in [("create", {"stream": "t"}), ("publish", {"stream": "s", "symbols": b"x"})]:
        assert daemon(op, **fields).code == P.SHUTTING_DOWN
    assert daemon("stats", stream="s").ok and daemon("ping").ok


def test_create_again_with_exist_ok(daemon):
    daemon.create("s")
    assert daemon("create", stream="s").code == P.STREAM_EXISTS
    assert daemon("create", stream="s", exist_ok=True).result["created"] is False
    assert daemon("create", stream="s", exist_ok=True, preset="glnn").code == P.STREAM_EXISTS
    assert daemon("create", stream="x", preset="nope").code == P.BAD_CONFIG


def test_a_create_too_large_for_the_memory_budget_is_refused_before_anything_is_allocated(daemon):
    # inside the documented bounds, over a TiB of learner state: refused at once as the client's mistake, where
    # the namespace thread would have tried to allocate it and answered "internal"
    huge = {"alphabet_cap": 65536, "units": 512, "degree": 64}
    reply = daemon("create", stream="huge", preset="glnn", config=huge)
    assert isinstance(reply, Reply) and reply.code == P.BAD_CONFIG
    assert "1.11 TiB in memory" in reply.message and "max_state_bytes = 8 GiB" in reply.message
    assert not daemon.requests.creating and not daemon.requests.reserved


def test_streams_being_created_count_against_the_memory_budget(tmp_path):
    size = STREAM_BYTES + resident_bytes(make_config(GLNN_BYTES, SMALL_GLNN))  # the learner, its stream's own bytes
    daemon = Daemon(tmp_path, max_state_bytes=size * 3 // 2)
    try:
        first = daemon("create", stream="a", preset=GLNN_BYTES, config=SMALL_GLNN)
        assert isinstance(first, AwaitNamespace) and daemon.requests.reserved == {"a": size}
        reply = daemon("create", stream="b", preset=GLNN_BYTES, config=SMALL_GLNN)  # "a" is not registered yet
        assert reply.code == P.LIMIT and "max_state_bytes" in reply.message and not daemon.requests.creating.get("b")
        stream = Stream.create("a", daemon.state.streams, first.job.config, fsync=False)
        assert daemon.requests.created(Created("a", stream))[1] is None and not daemon.requests.reserved
        assert isinstance(daemon("publish", stream="a", symbols=b"xy"), AwaitSync)
        assert daemon("create", stream="b", preset=GLNN_BYTES, config=SMALL_GLNN).code == P.LIMIT  # "a" holds it
        stream.syncing = 0  # its batch synced and (say) learned: idle, it can hibernate to make room
        waits = daemon("create", stream="b", preset=GLNN_BYTES, config=SMALL_GLNN)  # nothing allocated before it does
        assert isinstance(waits, AwaitRoom) and waits.job.state_bytes == size and daemon.requests.budget.held == size
    finally:
        daemon.close()


BYTES_0_18 = {"context_step_floor": 0.0}
BYTES_0_16 = {**BYTES_0_18, "history_bits": 20, "match_bits": 18, "context_bits": 16, "table_growth": False}
BYTES_0_12 = {**BYTES_0_16, "close_escape": False}
BYTES_0_8 = {**BYTES_0_12, "unit_selected_weights": False, "probability_maps": False}
BYTES_0_7 = {**BYTES_0_8, "field_selecting_fields": 1, "field_selecting_positions": 4}
BYTES_0_6 = {**BYTES_0_7, "order2_selected_weights": False}
BYTES_0_5 = {**BYTES_0_6, "number_context": False}
BYTES_0_4 = {**BYTES_0_5, "field_selected_weights": False}
BYTES_0_3 = {**BYTES_0_4, "context_orders": [1, 2, 3, 4, 6, 8, 12, 16], "field_column_context": False,
             "indirect_context": False}


@pytest.mark.parametrize("version, before", [("0.2", {**BYTES_0_3, "selected_weights": False}), ("0.3", BYTES_0_3),
                                             ("0.4", BYTES_0_4), ("0.5", BYTES_0_5), ("0.6", BYTES_0_6),
                                             ("0.7", BYTES_0_7), ("0.8", BYTES_0_8), ("0.12", BYTES_0_12),
                                             ("0.16", BYTES_0_16), ("0.18", BYTES_0_18)])
def test_exist_ok_finds_a_stream_an_earlier_seqd_made_with_the_preset(daemon, version, before):
    """A stream created by seqd 0.2 (no mixer), 0.3 (no field column or indirect source, order 8), 0.4 (no
    field-selected weights), 0.5 (no number source), 0.6 (no order-2-selected weights), 0.7 (the field set's
    32 rows), 0.8 (no unit-selected weights, no probability maps), 0.12 (the escape kept until the window
    ends), 0.16 (tables of a fixed size, 1 MiB of history) or 0.18 (every voted symbol's context weights
    stepped) with the "bytes" preset is that preset's stream,
    as it was made."""
    made = {**before, **SMALL_GLNN}  # the model that seqd made for "bytes" with these settings
    daemon.create("old", made, preset=GLNN_BYTES)
    again = daemon("create", stream="old", exist_ok=True, preset="bytes", config=SMALL_GLNN)
    assert again.ok and again.result["created"] is False
    assert {k: again.result["config"][k] for k in before} == {k: made[k] for k in before}
    assert daemon("create", stream="old", exist_ok=True, preset="glnn").code == P.STREAM_EXISTS
    assert daemon("create", stream="old", exist_ok=True, preset="bytes",
                  config={**SMALL_GLNN, "units": 6}).code == P.STREAM_EXISTS
    assert daemon("create", stream="old", exist_ok=True, preset="bytes", config=SMALL_BYTES).code == P.STREAM_EXISTS


def test_exist_ok_finds_a_bytes_stream_seqd_0_21_made_with_the_glnn_byte_model(daemon):
    """A stream seqd 0.21 made as "bytes" holds bytes-12, the GLNN byte model: a create that names "bytes" with
    exist_ok finds it, and it keeps its model; a new "bytes" stream gets the bitwise model."""
    daemon.create("old", SMALL_GLNN, preset=GLNN_BYTES)
    again = daemon("create", stream="old", exist_ok=True, preset="bytes", config=SMALL_GLNN)
    assert again.ok and again.result["created"] is False and again.result["config"]["context_bits"] == 10
    assert type(daemon.create("new").config).__name__ == "BitsConfig"


@pytest.mark.parametrize("before", [
    {"close_escape": False},  # seqd 0.12: the escape kept its share until the window that filled the alphabet ended
    {"close_escape": False, "credit_horizon": 0},  # seqd 0.11: also no credit beyond the window
    # seqd 0.10 and earlier: also the prior's mass on tau only and the writing sums discounted by the clock
    {"close_escape": False, "credit_horizon": 0, "metric_prior": 1.0, "transition_prior": False,
     "writing_evidence_floor": 1.0, "transition_rate": None}], ids=["0.12", "0.11", "0.10"])
def test_exist_ok_finds_a_glnn_stream_an_earlier_seqd_made(daemon, before):
    """A "glnn" stream an earlier seqd made is still that preset's, and keeps its model."""
    daemon.create("old", {"units": 4, **before}, preset="glnn")
    again = daemon("create", stream="old", exist_ok=True, preset="glnn", config={"units": 4})
    assert again.ok and again.result["created"] is False
    assert {k: again.result["config"][k] for k in before} == before
    assert daemon("create", stream="old", exist_ok=True, preset="glnn", config={"units": 6}).code == P.STREAM_EXISTS
    assert daemon("create", stream="old", exist_ok=True, preset="bytes").code == P.STREAM_EXISTS


def test_snapshot_requests_join_the_one_queued(daemon):
    stream = daemon.create("s")
    first, second = daemon("snapshot", stream="s"), daemon("snapshot", stream="s")
    assert isinstance(first, AwaitWorker) and first.schedule is stream
    assert isinstance(second, AwaitWorker) and second.schedule is None  # a worker already has it
    report, more = stream.run_next()
    assert [r.request.id for r in report.requesters] == [2, 3] and report.position == 0 and not more
    stream.fail("learning failed")
    assert daemon("snapshot", stream="s").code == P.INTERNAL


def test_a_drop_ends_the_streams_waiting_requests_and_waits_for_the_namespace_thread(daemon):
    stream = daemon.create("s")
    daemon.create("t")
    assert isinstance(daemon("predict", stream="s", min_position=1, wait_ms=1000), AwaitPosition)
    assert isinstance(daemon("predict", stream="t", min_position=1, wait_ms=1000), AwaitPosition)
    daemon("snapshot", stream="s")
    drop = daemon("drop", stream="s")
    assert isinstance(drop, AwaitNamespace) and isinstance(drop.job, DropJob) and drop.job.stream is stream
    assert drop.schedule is None  # scheduled already, by the snapshot
    assert [(op, reply.code) for _, reply, op in drop.answers] == [("snapshot", P.NO_SUCH_STREAM),
                                                                    ("predict", P.NO_SUCH_STREAM)]
    assert stream.state is State.DROPPED and "s" not in daemon.requests.streams
    assert not stream.directory.exists() and len(daemon.requests.waiters) == 1  # t's waiter stays
    assert daemon("predict", stream="s").code == P.NO_SUCH_STREAM
    daemon.learn(stream)  # the worker deletes the folder from the trash
    assert not any(daemon.state.trash.iterdir())


def test_a_stream_that_could_not_be_restored_is_named(daemon):
    daemon.requests.unavailable["lost"] = "ValueError: damaged"
    for op in ("predict", "create"):
        reply = daemon(op, stream="lost")
        assert reply.code == P.INTERNAL and "damaged" in reply.message, op
    assert daemon("stats").result["unavailable"] == {"lost": "ValueError: damaged"}
