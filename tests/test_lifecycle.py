"""A stream's lifecycle: the table walked pair by pair, and a real stream taken along its paths."""

from __future__ import annotations

import itertools

import pytest

from seqd.daemon import lifecycle
from seqd.daemon.lifecycle import TRANSITIONS, IllegalTransition, State
from seqd.daemon.models import make_config
from seqd.daemon.streams import Stream

from daemon_harness import SMALL_BYTES


@pytest.mark.parametrize("current,target", list(itertools.product(State, State)))
def test_every_pair_of_states_is_allowed_exactly_when_the_table_names_it(current, target):
    if (current, target) in TRANSITIONS:
        assert lifecycle.check(current, target) is target
    else:
        with pytest.raises(IllegalTransition, match=f"from {current.value} to {target.value}"):
            lifecycle.check(current, target)


def test_every_state_is_reached_from_creating_and_every_path_ends_gone():
    reached, frontier = {State.CREATING}, [State.CREATING]
    while frontier:
        state = frontier.pop()
        for frm, to in TRANSITIONS:
            if frm is state and to not in reached:
                reached.add(to)
                frontier.append(to)
    assert reached == set(State)
    for state in State:
        if state is not State.GONE:
            assert any(frm is state for frm, _ in TRANSITIONS), state
    assert not any(frm is State.GONE for frm, _ in TRANSITIONS)


@pytest.fixture
def stream(tmp_path):
    (tmp_path / "streams").mkdir()
    s = Stream.create("s", tmp_path / "streams", make_config("bytes", SMALL_BYTES), fsync=False)
    yield s
    s.log.close()


def test_a_stream_is_served_once_registered_and_its_log_failure_is_the_first_reason(stream):
    assert stream.state is State.CREATING
    for early in (lambda: stream.mark_broken("too early"), lambda: stream.drop(stream.directory)):
        with pytest.raises(IllegalTransition):
            early()
    assert stream.state is State.CREATING and stream.broken is None
    stream.go_live()
    assert stream.state is State.LIVE and stream.broken is None
    assert stream.mark_broken("the log failed") == "the log failed"
    assert stream.mark_broken("again") == "the log failed" and stream.state is State.BROKEN
    with pytest.raises(IllegalTransition):
        stream.go_live()  # broken until a restart


def test_learning_that_raises_faults_a_live_or_broken_stream_but_not_a_dropped_one(stream, tmp_path):
    stream.go_live()
    stream.mark_broken("the log failed")
    assert stream.fail("learning failed") == [] and stream.state is State.FAULTED and stream.faulted
    assert stream.broken == "learning failed"
    assert stream.mark_broken("later") == "learning failed" and stream.state is State.FAULTED
    assert not stream.offer(0, b"x") and not stream.request_snapshot(None)  # fed nothing more
    stream.drop(tmp_path / "trash")
    assert stream.state is State.DROPPED and stream.dropped and not stream.faulted
    stream.fail("a last batch raised")  # a worker still held it
    assert stream.state is State.DROPPED
    stream.forget()
    assert stream.state is State.GONE and stream.dropped
    with pytest.raises(IllegalTransition):
        stream.forget()


def test_a_dropped_stream_takes_no_more_work_and_hands_back_its_snapshot_requesters(stream, tmp_path):
    stream.go_live()
    assert stream.request_snapshot("first")
    assert not stream.request_snapshot("second")  # joins the one queued
    schedule, orphans = stream.drop(tmp_path / "trash")
    assert orphans == ["first", "second"] and not schedule  # it was scheduled already
    assert not stream.offer(0, b"x") and not stream.request_snapshot(None)
    with pytest.raises(IllegalTransition):
        stream.drop(tmp_path / "trash")


def test_a_creation_refused_by_the_limits_goes_straight_to_gone(stream):
    stream.forget()
    assert stream.state is State.GONE
    with pytest.raises(IllegalTransition):
        stream.go_live()
