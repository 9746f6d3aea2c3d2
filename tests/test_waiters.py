"""The waiting predicts without a socket or a clock: added, woken at a position, expired at a time, dropped
with their stream, capped; and the deadline the I/O loop sleeps until."""

from __future__ import annotations

import pytest

from seqd.clients.protocol import Request
from seqd.daemon import waiters as waiters_module
from seqd.daemon.pending import Pending
from seqd.daemon.waiters import Waiters


def waiter(rid: int, stream: str = "s", min_position: int = 10, client: bytes = b"client",
           connection: int = -1) -> Pending:
    return Pending(client, Request(id=rid, op="predict", stream=stream, min_position=min_position,
                                   wait_ms=1000), t0=0.0, connection=connection)


def ids(waiters) -> list[int]:
    return [w.request.id for w in waiters]


def test_a_position_wakes_the_waiters_it_satisfies_in_the_order_they_came():
    w = Waiters()
    for rid, need in [(1, 5), (2, 9), (3, 3), (4, 20)]:
        w.add(waiter(rid, min_position=need), deadline=100.0 + rid)
    assert ids(w.wake("s", 8)) == [1, 3]
    assert ids(w.wake("s", 8)) == []  # answered once only
    assert ids(w.waiting_for("s")) == [2, 4] and len(w) == 2
    assert ids(w.wake("other", 100)) == []
    woken = w.wake("s", 20)
    assert ids(woken) == [2, 4] and len(w) == 0
    assert all(x.done for x in woken) and w.next_deadline() == float("inf")


def test_deadlines_expire_earliest_first_and_forget_the_waiter():
    w = Waiters()
    w.add(waiter(1, "a"), deadline=3.0)
    w.add(waiter(2, "b"), deadline=1.0)
    w.add(waiter(3, "a"), deadline=2.0)
    assert w.next_deadline() == 1.0
    assert ids(w.expire(0.5)) == []
    assert ids(w.expire(2.0)) == [2, 3]  # a deadline equal to now has passed
    assert ids(w.waiting_for("a")) == [1] and w.waiting_for("b") == [] and len(w) == 1
    assert w.next_deadline() == 3.0
    assert ids(w.wake("a", 100)) == [1]
    assert ids(w.expire(10.0)) == []  # answered by its stream: it does not time out too


def test_a_woken_waiter_leaves_the_deadline_it_no_longer_has():
    w = Waiters()
    w.add(waiter(1, min_position=1), deadline=1.0)
    w.add(waiter(2, min_position=50), deadline=2.0)
    w.wake("s", 1)
    assert w.next_deadline() == 2.0


def test_answered_waiters_do_not_pile_up_in_the_deadline_heap():
    w = Waiters()
    w.add(waiter(0, min_position=10**9), deadline=0.5)  # at the top of the heap, waiting all along
    for rid in range(1, 1000):
        w.add(waiter(rid, min_position=1), deadline=1.0 + rid)
        w.wake("s", 1)
    assert len(w) == 1 and w.next_deadline() == 0.5
    assert len(w._deadlines) <= 2 * len(w) + waiters_module._STALE_SLACK


def test_dropping_a_stream_ends_its_waiters_only():
    w = Waiters()
    w.add(waiter(1, "a"), deadline=1.0)
    w.add(waiter(2, "b"), deadline=2.0)
    w.add(waiter(3, "a"), deadline=3.0)
    w.wake("a", 100)
    w.add(waiter(4, "a"), deadline=4.0)
    assert ids(w.drop("a")) == [4]  # the ones already answered are not answered again
    assert ids(w.drop("a")) == [] and len(w) == 1
    assert ids(w.expire(10.0)) == [2]


def test_the_cap_counts_waiting_predicts_of_every_stream(monkeypatch):
    monkeypatch.setattr(waiters_module, "MAX_WAITERS", 2)
    w = Waiters()
    assert w.limit == 2 and not w.full
    w.add(waiter(1, "a"), deadline=1.0)
    w.add(waiter(2, "b"), deadline=1.0)
    assert w.full
    with pytest.raises(ValueError, match="2 predicts are already waiting"):
        w.add(waiter(3, "c"), deadline=1.0)
    w.expire(1.0)
    assert not w.full
    assert Waiters(limit=5).limit == 5


def test_one_client_cannot_take_every_place():
    w = Waiters(limit=5, client_limit=2)
    w.add(waiter(1, "a", client=b"A"), deadline=1.0)
    w.add(waiter(2, "b", client=b"A"), deadline=2.0)
    assert "this client has 2 predicts waiting" in w.refusal(b"A") and w.refusal(b"B") is None
    with pytest.raises(ValueError, match="this client has 2"):
        w.add(waiter(3, "a", client=b"A"), deadline=1.0)
    w.add(waiter(4, "a", client=b"B"), deadline=1.0)
    assert ids(w.wake("a", 100)) == [1, 4]  # answered: the places are the client's again
    assert w.refusal(b"A") is None
    w.add(waiter(5, "c", client=b"A"), deadline=3.0)
    assert ids(w.expire(2.0)) == [2] and ids(w.drop("c")) == [5]
    assert len(w) == 0 and w._per_client == {} and w._per_connection == {}  # nothing left behind


def test_a_closed_connection_releases_its_waiters_and_only_them():
    w = Waiters(limit=4, client_limit=4)
    w.add(waiter(1, "a", client=b"A", connection=7), deadline=5.0)
    w.add(waiter(2, "b", client=b"A", connection=7), deadline=1.0)
    w.add(waiter(3, "a", client=b"B", connection=8), deadline=2.0)
    w.add(waiter(4, "a", client=b"C"), deadline=3.0)  # its connection unknown: it waits for its deadline
    assert w.full and w.refusal(b"D") is not None
    assert ids(w.release(9)) == [] and ids(w.release(-1)) == []
    released = w.release(7)
    assert ids(released) == [1, 2] and all(x.done for x in released)
    assert len(w) == 2 and w.refusal(b"D") is None and ids(w.waiting_for("a")) == [3, 4]
    assert w.waiting_for("b") == [] and ids(w.release(7)) == []
    assert w.next_deadline() == 2.0  # the released ones left the deadlines too
    assert ids(w.expire(10.0)) == [3, 4] and w._per_connection == {} and w._per_client == {}
