"""The clients against a scripted fake daemon (tests/fake_seqd.py): results, errors, retries, routing, CLI."""

from __future__ import annotations

import asyncio
import time

import pytest
import zmq

from fake_seqd import FakeServer, busy, drop, fail, late, lose_reply, stale_first
from seqd.clients import _common, protocol
from seqd.clients.aio import AsyncClient
from seqd.clients.client import Client
from seqd.clients.errors import (BusyError, ConflictError, NoSuchStreamError, SeqdError, SeqdTimeout, ServerError,
                                 error_for)
from seqd.clients.results import Ack, Prediction, ServerStats, StreamStats


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


@pytest.fixture
def client(server):
    with Client(server.endpoint, timeout=0.3, retries=2) as c:
        yield c


# --- results ------------------------------------------------------------------------------------
def test_operations_return_typed_results(server, client):
    info = client.ping()
    assert (info.server, info.protocol) == ("seqd", 1)
    assert client.create("web").created and not client.create("web", exist_ok=True).created
    ack = client.publish("web", b"GET /\n")
    assert ack == Ack("web", 6, 0)
    assert client.publish("web", "é", position=6).position == 8  # str goes as UTF-8
    assert client.publish("web", [65, 66], position=8).position == 10
    pred = client.predict("web", top=2)
    assert isinstance(pred, Prediction) and pred.position == 10
    assert pred.top == ((97, 0.5), (10, 0.25)) and pred.escape == 0.125 and pred.distribution is None
    assert len(client.predict("web", full=True).distribution) == 256
    assert server.ops("predict")[-1].top == 0
    st = client.stats("web")
    assert isinstance(st, StreamStats) and (st.accepted, st.queued, st.alphabet_cap) == (10, 0, 256)
    assert st.config == {"units": 4} and st.raw["state_bytes"] == 1000
    srv = client.stats()
    assert isinstance(srv, ServerStats) and srv.streams == ("web",) and srv.symbols_learned == 10
    assert client.snapshot("web").position == 10
    client.drop("web")
    assert server.streams == {}


def test_publish_create_flag_and_symbol_validation(server, client):
    assert client.publish("new", b"x", create=True).position == 1
    with pytest.raises(protocol.ProtocolError):
        client.publish("x", [1, -2])
    with pytest.raises(protocol.ProtocolError):
        client.publish("x", [True])
    with pytest.raises(protocol.ProtocolError):
        client.publish("../x", b"a")
    with pytest.raises(protocol.ProtocolError):
        client.publish("x", b"")
    assert len(server.requests) == 1  # nothing invalid was sent


def test_error_mapping(server, client):
    with pytest.raises(NoSuchStreamError) as exc:
        client.predict("nope")
    assert exc.value.code == protocol.NO_SUCH_STREAM and "nope" in exc.value.message
    client.create("web")
    with pytest.raises(ServerError) as exc:
        client.create("web")
    assert exc.value.code == protocol.STREAM_EXISTS
    with pytest.raises(ConflictError):
        client.publish("web", b"abc", position=5)
    with pytest.raises(SeqdTimeout) as exc:
        client.predict("web", min_position=10, wait=0.01)
    assert exc.value.code == protocol.TIMEOUT and not exc.value.no_reply
    server.then(fail(protocol.SHUTTING_DOWN, "bye"))
    with pytest.raises(ServerError, match="bye"):
        client.ping()
    assert isinstance(error_for(protocol.Reply.failure(1, "some_new_code", "x")), ServerError)
    assert issubclass(SeqdTimeout, TimeoutError) and issubclass(BusyError, SeqdError)


def test_busy_is_waited_out_then_resent(server, client):
    client.create("web")
    server.then(busy(20), busy(20))
    t0 = time.monotonic()
    assert client.publish("web", b"abc").position == 3
    assert time.monotonic() - t0 >= 0.04
    assert len(server.ops("publish")) == 3 and bytes(server.streams["web"]) == b"abc"


def test_busy_for_too_long_raises_busy(server):
    with Client(server.endpoint, timeout=0.1, retries=1) as c:
        server.then(*[busy(40)] * 10)
        with pytest.raises(BusyError) as exc:
            c.ping()
        assert exc.value.retry_after_ms == 40
        server.actions.clear()


def test_lazy_pirate_resends_on_a_fresh_socket(server):
    with Client(server.endpoint, timeout=0.2, retries=3) as c:
        server.then(drop)
        t0 = time.monotonic()
        assert c.ping().server == "seqd"
        assert 0.2 <= time.monotonic() - t0 < 2
    (first, r1), (second, r2) = server.requests
    assert first != second  # a new DEALER: a new identity at the ROUTER
    assert r1.id != r2.id


def test_retries_exhausted_raise_no_reply(server):
    with Client(server.endpoint, timeout=0.1, retries=2) as c:
        server.then(drop, drop, drop)
        with pytest.raises(SeqdTimeout) as exc:
            c.stats()
    assert exc.value.no_reply and exc.value.endpoint == server.endpoint and "3 attempts" in exc.value.message
    assert len(server.requests) == 3


@pytest.mark.parametrize("ids", [True, False])
def test_conditional_publish_whose_reply_was_lost_is_acknowledged(server, ids):
    """Its retry is known by its batch id; by a server that knows no ids, it meets a conflict, and the stream's
    length says whether it landed."""
    server.streams["web"] = bytearray(b"0123")
    server.knows_batch_ids = ids
    with Client(server.endpoint, timeout=0.2) as c:
        server.then(lose_reply)
        ack = c.publish("web", b"abc", position=4)
    assert ack.position == 7 and bytes(server.streams["web"]) == b"0123abc"  # exactly once
    assert [r.op for r in server.ops()] == ["publish", "publish"] + ([] if ids else ["stats"])


def test_conditional_publish_conflict_after_timeout_by_someone_else_still_raises(server):
    server.streams["web"] = bytearray(b"0123")

    def other_writer_then_drop(srv, req):
        srv.streams["web"] += b"zzzzz"
        return []
    with Client(server.endpoint, timeout=0.2) as c:
        server.then(other_writer_then_drop)
        with pytest.raises(ConflictError):
            c.publish("web", b"abc", position=4)


def test_an_unconditional_publish_is_retried_with_its_batch_id_and_lands_once(server):
    server.streams["web"] = bytearray()
    with Client(server.endpoint, timeout=0.2, retries=3) as c:
        server.then(lose_reply, drop)  # it lands, its reply is lost; the first retry is lost too
        assert c.publish("web", b"abc").position == 3
        assert c.publish("web", b"abc").position == 6  # a new publish is a new batch
    sent = server.ops("publish")
    assert len(sent) == 4 and sent[0].batch == sent[1].batch == sent[2].batch != sent[3].batch
    assert len(sent[0].batch) == 16 and server.streams["web"] == b"abcabc"


def test_against_a_server_without_batch_ids_an_unconditional_publish_is_not_retried(server):
    server.streams["web"] = bytearray()
    server.knows_batch_ids = False
    with Client(server.endpoint, timeout=0.2, retries=3) as c:
        assert c.publish("web", b"ab").position == 2  # refused with its id, sent again without
        server.then(drop)
        with pytest.raises(SeqdTimeout, match="may or may not have been accepted"):
            c.publish("web", b"abc")
    assert [r.batch for r in server.ops("publish")] == [None, None]


def test_non_idempotent_create_and_drop_are_not_retried(server):
    with Client(server.endpoint, timeout=0.1, retries=3) as c:
        server.then(drop)
        with pytest.raises(SeqdTimeout):
            c.create("web")
        server.then(drop)
        assert c.create("web", exist_ok=True).stream == "web"
    assert len(server.ops("create")) == 3


def test_stale_replies_are_discarded(server, client):
    server.streams["web"] = bytearray()
    server.then(stale_first)
    assert client.publish("web", b"ab", position=0) == Ack("web", 2, 0)
    server.then(stale_first)
    assert client.ping().server == "seqd"


def test_a_late_reply_does_not_answer_the_next_request(server):
    server.streams["web"] = bytearray(b"abc")
    with Client(server.endpoint, timeout=0.15, retries=1) as c:
        server.then(late(0.3))  # answered after the client gave up on that socket
        assert c.snapshot("web").position == 3
        time.sleep(0.3)
        assert c.predict("web").position == 3


def test_refusals_reach_the_caller(server, client):
    server.streams["web"] = bytearray()
    server.limits = protocol.Limits(max_batch_symbols=100)  # smaller than the client's max_batch
    with pytest.raises(ServerError) as exc:
        client.publish("web", b"x" * 101, position=0)
    assert exc.value.code == protocol.TOO_LARGE
    assert server.refused == [protocol.TOO_LARGE]  # the first answer was the refusal: the client did not retry
    # A refusal with id 0 (a server that could not read the request's id) answers the one
    # request in flight on the socket, rather than leaving it to time out.
    server.then(lambda srv, req: [(0.0, protocol.Reply.failure(0, protocol.BAD_REQUEST, "unreadable"))])
    with pytest.raises(ServerError, match="unreadable"):
        client.stats("web")
    assert client.ping().server == "seqd"  # and the socket is still in order


# --- batching, routing --------------------------------------------------------------------------
def test_large_publishes_are_split(server):
    server.streams["web"] = bytearray()
    with Client(server.endpoint, timeout=0.5, max_batch=1000) as c:
        data = bytes(range(256)) * 10
        assert c.publish("web", data, position=0).position == 2560
        assert [len(r.symbols) for r in server.ops("publish")] == [1000, 1000, 560]
        assert [r.position for r in server.ops("publish")] == [0, 1000, 2000]
        assert c.publish("web", data).position == 5120
        assert [r.position for r in server.ops("publish")][3:] == [None] * 3
    assert bytes(server.streams["web"]) == data * 2
    assert list(_common.batches(b"abcde", 2)) == [(0, b"ab"), (2, b"cd"), (4, b"e")]


def test_rendezvous_routing_is_stable_balanced_and_minimally_disruptive():
    eps = [f"tcp://10.0.0.{i}:7710" for i in (1, 2, 3)]
    names = [f"stream-{i}" for i in range(1000)]
    owner = {n: _common.route(eps, n) for n in names}
    assert owner == {n: _common.route(list(reversed(eps)), n) for n in names}  # order does not matter
    assert _common.route(eps, "web") == "tcp://10.0.0.1:7710" or _common.weight("tcp://10.0.0.1:7710", "web") != 0
    assert _common.weight("a", "b") == _common.weight("a", "b") == int.from_bytes(
        __import__("hashlib").blake2b(b"a\x00b", digest_size=8).digest(), "big")
    for ep in eps:
        assert 0.25 <= sum(o == ep for o in owner.values()) / len(names) <= 0.42
    remaining = eps[:2]
    for n in names:
        if owner[n] in remaining:
            assert _common.route(remaining, n) == owner[n]
    c = Client(eps, timeout=0.1)
    assert c.endpoint_for("stream-7") == owner["stream-7"]
    c.close()


def test_requests_go_to_the_streams_replica(server):
    other = FakeServer()
    try:
        eps = [server.endpoint, other.endpoint]
        with Client(eps, timeout=0.5) as c:
            names = [f"s{i}" for i in range(20)]
            for n in names:
                c.publish(n, b"x", create=True)
            assert c.ping().server == "seqd"
            assert c.stats(endpoint=other.endpoint).server == "seqd"
        for n in names:
            home = server if _common.route(eps, n) == server.endpoint else other
            assert n in home.streams
        assert server.streams and other.streams
        assert server.ops("ping") and not other.ops("ping") and other.ops("stats")
    finally:
        other.close()


def test_pub_endpoint_derivation():
    assert _common.derive_pub("tcp://127.0.0.1:7710") == "tcp://127.0.0.1:7711"
    assert _common.derive_pub("tcp://[::1]:9000") == "tcp://[::1]:9001"
    with pytest.raises(ValueError):
        _common.derive_pub("ipc:///tmp/seqd.sock")
    assert _common.pub_endpoints(["tcp://a:1", "tcp://b:5"], None) == ("tcp://a:2", "tcp://b:6")
    assert _common.pub_endpoints(["ipc:///x"], "ipc:///y") == ("ipc:///y",)
    assert _common.topics(None) == [b""] and _common.topics("web") == [b"web\x00"]


def test_subscribe_delivers_only_the_streams_events():
    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    try:
        with Client(f"tcp://127.0.0.1:{port - 1}", timeout=0.2) as c:
            sub = c.subscribe(["web"])
            web = protocol.Event("web", 10, 4, 8.0, ((97, 0.5),), 0.1)
            web2 = protocol.Event("web2", 3, 3, 1.0, (), 0.5)
            got = None
            for _ in range(100):  # the subscription takes a moment to reach the publisher
                pub.send_multipart(protocol.encode_event(web2))
                pub.send_multipart([b"web\x00", b"\xc1garbage"])
                pub.send_multipart(protocol.encode_event(web))
                got = sub.recv(timeout=0.02)
                if got is not None:
                    break
            assert got == web
            while (e := sub.recv(timeout=0.05)) is not None:
                assert e.stream == "web"
    finally:
        pub.close(linger=0)


# --- async --------------------------------------------------------------------------------------
def test_async_client_same_behaviour(server):
    async def scenario():
        async with AsyncClient(server.endpoint, timeout=0.2, retries=2) as c:
            assert (await c.ping()).server == "seqd"
            await c.create("web")
            assert (await c.publish("web", b"hello", position=0)).position == 5
            server.then(lose_reply)
            assert (await c.publish("web", b"!!", position=5)).position == 7
            server.then(busy(10), drop)
            assert (await c.stats("web")).accepted == 7
            with pytest.raises(NoSuchStreamError):
                await c.predict("nope")
            server.then(drop, lose_reply)  # retried with its batch id: lands once
            assert (await c.publish("web", b"x")).position == 8
            # concurrent requests: a slow one does not hold up the others, replies matched by id
            server.then(late(0.15))
            slow = asyncio.create_task(c.predict("web", top=1))
            await asyncio.sleep(0.02)
            fast = await c.snapshot("web")
            assert not slow.done() and fast.position == 8
            assert (await slow).top == ((97, 0.5),)
            server.then(stale_first)
            assert (await c.ping()).protocol == 1
    asyncio.run(scenario())
    assert bytes(server.streams["web"]) == b"hello!!x"  # each publish landed once


def test_async_subscribe():
    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    event = protocol.Event("web", 1, 1, 3.0, ((10, 0.9),), 0.05)

    async def scenario():
        async with AsyncClient("tcp://127.0.0.1:1", pub=f"tcp://127.0.0.1:{port}") as c:
            sub = c.subscribe(None)
            for _ in range(100):
                pub.send_multipart(protocol.encode_event(event))
                got = await sub.recv(timeout=0.02)
                if got is not None:
                    return got
    try:
        assert asyncio.run(scenario()) == event
    finally:
        pub.close(linger=0)


def test_malformed_endpoints_are_value_errors():
    with pytest.raises(ValueError, match="needs a transport, as in tcp://127.0.0.1:7710"):
        Client("127.0.0.1:7710", timeout=0.1)  # (ZeroMQ itself would say only "Invalid argument")
    with Client("tcp://not an endpoint", timeout=0.1) as c:
        with pytest.raises(ValueError, match="cannot connect"):
            c.ping()
    with pytest.raises(ValueError):
        Client([], timeout=0.1)
    with pytest.raises(ValueError):
        Client(["tcp://a:1", "tcp://a:1"])
