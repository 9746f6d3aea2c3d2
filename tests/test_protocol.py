"""The wire protocol (seqd.clients.protocol): round trips, every refusal, and fuzzing."""

from __future__ import annotations


import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqd.clients import protocol as P
from seqd.clients.protocol import Event, ProtocolError, Reply, Request


def pack(body) -> bytes:
    return msgpack.packb(body, use_bin_type=True)


def refused(data: bytes, code: str, limits: P.Limits = P.DEFAULT_LIMITS) -> ProtocolError:
    with pytest.raises(ProtocolError) as exc:
        P.decode_request(data, limits)
    assert exc.value.code == code, exc.value
    return exc.value


# --- round trips --------------------------------------------------------------------------------
REQUESTS = [
    Request(id=1, op="ping"),
    Request(id=2, op="create", stream="web", preset="glnn", config={"units": 8, "context_orders": [1, 2],
                                                                    "transition_rate": 0.5, "x": None},
            exist_ok=True),
    Request(id=3, op="create", stream="web"),
    Request(id=4, op="drop", stream="a.b_c-d"),
    Request(id=5, op="publish", stream="web", symbols=b"GET /\n"),
    Request(id=6, op="publish", stream="web", symbols=(0, 255, 2**31 - 1), position=0, create=True),
    Request(id=7, op="predict", stream="web", top=0, min_position=10, wait_ms=250),
    Request(id=8, op="predict", stream="web"),
    Request(id=9, op="stats"),
    Request(id=10, op="stats", stream="web"),
    Request(id=2**64 - 1, op="snapshot", stream="W" * 128),
]


@pytest.mark.parametrize("req", REQUESTS, ids=lambda r: f"{r.op}-{r.id}")
def test_requests_round_trip(req):
    assert P.decode_request(P.encode_request(req)) == req
    assert P.request_id(P.encode_request(req)) in (req.id, 0)


def test_every_op_is_covered():
    assert {r.op for r in REQUESTS} == set(P.OPS)


def test_request_normalizes_symbols_and_omits_defaults():
    assert Request(id=1, op="publish", stream="s", symbols=[1, 2]).symbols == (1, 2)
    assert Request(id=1, op="publish", stream="s", symbols=bytearray(b"ab")).symbols == b"ab"
    assert msgpack.unpackb(P.encode_request(Request(id=1, op="ping"))) == {"v": 1, "id": 1, "op": "ping"}


@pytest.mark.parametrize("reply", [
    Reply.success(1, stream="web", position=10, queued=2),
    Reply.success(2, stream="web", position=3, top=[[97, 0.5]], escape=0.1, alphabet_size=1,
                  distribution=[0.25] * 4),
    Reply.success(3),
    Reply.failure(4, P.BUSY, "queue full", retry_after_ms=50),
    Reply.failure(5, P.CONFLICT, "stream 'web' has 12 symbols"),
])
def test_replies_round_trip(reply):
    assert P.decode_reply(P.encode_reply(reply)) == reply


def test_reply_refusals():
    for body in ({"id": 1, "ok": True}, {"v": 2, "id": 1, "ok": True}):
        with pytest.raises(ProtocolError, match="version"):
            P.decode_reply(pack(body))
    for body in ({"v": 1, "ok": True}, {"v": 1, "id": "1", "ok": True}, {"v": 1, "id": 1, "ok": 1},
                 {"v": 1, "id": 1, "ok": False}, {"v": 1, "id": 1, "ok": False, "error": {"message": "x"}}):
        with pytest.raises(ProtocolError):
            P.decode_reply(pack(body))


def test_events_round_trip_and_refusals():
    ev = Event("web", 100, 20, 31.5, ((97, 0.5), (10, 0.25)), 0.01)
    frames = P.encode_event(ev)
    assert frames[0] == b"web\x00" and P.decode_event(frames) == ev
    for frames in ([frames[1]], [b"web\x00", b"\xc1"], [b"web\x00", pack({"v": 1, "stream": "web"})],
                   [b"web\x00", pack({**msgpack.unpackb(frames[1]), "top": [[1]]})]):
        with pytest.raises(ProtocolError):
            P.decode_event(frames)


@given(st.from_regex(P.STREAM_NAME, fullmatch=True), st.from_regex(P.STREAM_NAME, fullmatch=True))
def test_topic_is_a_prefix_only_of_its_own_stream(a, b):
    assert P.topic(a).startswith(P.topic(b)) == (a == b)


# --- refusals -----------------------------------------------------------------------------------
def test_malformed_messages():
    refused(b"\xc1", P.BAD_REQUEST)  # never used byte
    refused(b"", P.BAD_REQUEST)
    refused(pack({"v": 1, "id": 1, "op": "ping"}) + b"\x00", P.BAD_REQUEST)  # trailing data
    assert "must be a msgpack map" in str(refused(pack([1, 2, 3]), P.BAD_REQUEST))
    refused(pack("ping"), P.BAD_REQUEST)
    refused(b"\xd4\x01\x00", P.BAD_REQUEST)  # an ext type


def test_versions_ids_ops_and_fields():
    refused(pack({"id": 1, "op": "ping"}), P.BAD_VERSION)
    refused(pack({"v": 2, "id": 1, "op": "ping"}), P.BAD_VERSION)
    refused(pack({"v": "1", "id": 1, "op": "ping"}), P.BAD_VERSION)
    refused(pack({"v": 1.0, "id": 1, "op": "ping"}), P.BAD_VERSION)  # equal to 1, but not the version 1
    refused(pack({"v": True, "id": 1, "op": "ping"}), P.BAD_VERSION)
    refused(pack({"v": 1, "op": "ping"}), P.BAD_REQUEST)
    refused(pack({"v": 1, "id": 1}), P.BAD_REQUEST)
    refused(pack({"v": 1, "id": 1, "op": 3}), P.BAD_REQUEST)
    refused(pack({"v": 1, "id": 1, "op": "explode"}), P.UNKNOWN_OP)
    assert "colour" in str(refused(pack({"v": 1, "id": 1, "op": "ping", "colour": 1}), P.BAD_REQUEST))
    refused(pack({"v": 1, "id": 1, "op": "ping", b"top": 1}), P.BAD_REQUEST)  # a binary key
    for rid in (-1, 2**64, "1", 1.0, True, None):
        if rid == 2**64:  # msgpack cannot carry it: the encoder refuses
            continue
        refused(pack({"v": 1, "id": rid, "op": "ping"}), P.BAD_REQUEST)


@pytest.mark.parametrize("field,value", [
    ("top", -1), ("top", P.MAX_TOP + 1), ("top", 1.5), ("top", "5"), ("top", True),
    ("min_position", -1), ("wait_ms", 3_600_001), ("wait_ms", None), ("position", -3), ("position", 2**63),
    ("create", 1), ("exist_ok", "yes"), ("preset", 3), ("config", [1, 2]), ("config", {"a": {"b": 1}}),
    ("symbols", "text"), ("symbols", {"a": 1}),
])
def test_bad_field_types(field, value):
    body = {"v": 1, "id": 1, "op": "publish", "stream": "web", "symbols": b"ab", field: value}
    refused(pack(body), P.BAD_REQUEST)


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "", "x" * 129, "a b", "é", "a\x00", 5, None])
def test_bad_stream_names(name):
    body = {"v": 1, "id": 1, "op": "drop", "stream": name}
    if name is None:
        refused(pack(body), P.BAD_REQUEST)  # drop needs a stream
    else:
        refused(pack(body), P.BAD_NAME)
    with pytest.raises(ProtocolError):
        Request(id=1, op="drop", stream=name)


def test_stream_names_allowed():
    for name in ("x", "_", "-", "web.access-log_2", "x" * 128, "9"):
        assert P.check_stream_name(name) == name


@pytest.mark.parametrize("symbols", [[-1], [2**31], [True], [1.0], ["a"], [None]])
def test_bad_symbols(symbols):
    refused(pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": symbols}), P.BAD_SYMBOL)


def test_publish_needs_symbols_and_ops_need_streams():
    refused(pack({"v": 1, "id": 1, "op": "publish", "stream": "s"}), P.BAD_REQUEST)
    refused(pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": b""}), P.BAD_REQUEST)
    for op in ("create", "drop", "publish", "predict", "snapshot"):
        refused(pack({"v": 1, "id": 1, "op": op}), P.BAD_REQUEST)


def test_size_limits():
    small = P.Limits(max_message_bytes=1000, max_batch_symbols=10, max_config_entries=3)
    msg = pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": b"x" * 2000})
    refused(msg, P.TOO_LARGE, small)
    refused(pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": b"x" * 11}), P.TOO_LARGE, small)
    refused(pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": [1] * 11}), P.TOO_LARGE, small)
    assert P.decode_request(pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": b"x" * 10}), small)
    refused(pack({"v": 1, "id": 1, "op": "create", "stream": "s", "config": {str(i): i for i in range(4)}}),
            P.TOO_LARGE, small)
    default = P.DEFAULT_LIMITS
    refused(b"\x00" * (default.max_message_bytes + 1), P.TOO_LARGE)
    big = pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": b"x" * (default.max_batch_symbols + 1)})
    refused(big, P.TOO_LARGE)
    # an array longer than the unpacker's bound is refused as too large too, not as malformed
    long_array = pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": [1] * (default.max_batch_symbols + 1)})
    assert len(long_array) <= default.max_message_bytes
    assert "size limit" in str(refused(long_array, P.TOO_LARGE))


def test_request_id_of_refused_messages():
    assert P.request_id(pack({"v": 9, "id": 42, "op": "explode"})) == 42
    assert P.request_id(pack({"v": 1, "id": 42, "op": "drop", "stream": "../x"})) == 42
    for garbage in (b"", b"\xc1", pack([1]), pack({"id": -1}), pack({"id": True}), pack({"id": "7"}),
                    b"\x00" * 100, pack({"id": 1.5})):
        assert P.request_id(garbage) == 0


def test_request_id_of_a_refused_publish():
    assert P.request_id(pack({"v": 1, "id": 42, "op": "publish", "stream": "s", "symbols": [-1]})) == 42
    assert P.request_id(pack({"v": 1, "id": 42, "op": "publish", "stream": "s", "symbols": b"x" * 100})) == 42
    assert P.request_id(pack({"v": 1, "id": 42, "op": "create", "stream": "s", "config": {"a": [1, 2]}})) == 42


@pytest.mark.parametrize("symbols", [5, 1.5, True])
def test_unsized_symbols_are_a_protocol_error(symbols):
    refused(pack({"v": 1, "id": 1, "op": "publish", "stream": "s", "symbols": symbols}), P.BAD_REQUEST)


# --- fuzzing ------------------------------------------------------------------------------------
def _decodes_or_refuses(data: bytes) -> None:
    try:
        req = P.decode_request(data)
    except ProtocolError as exc:
        assert exc.code in P.ERROR_CODES
        return
    assert isinstance(req, Request)
    again = P.encode_request(req)  # bytes, not ==: a NaN in a config is not equal to itself
    assert P.encode_request(P.decode_request(again)) == again


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_arbitrary_bytes_decode_or_raise_protocol_error(data):
    _decodes_or_refuses(data)
    assert isinstance(P.request_id(data), int)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1), st.floats(), st.text(max_size=8),
                     st.binary(max_size=8))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=8)
_symbol_values = st.one_of(_values, st.binary(max_size=8), st.lists(_values, max_size=4))
_field_names = st.sampled_from(["stream", "position", "create", "preset", "config", "exist_ok", "top",
                                "min_position", "wait_ms", "v", "id", "op", "other"])


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(P.OPS + ("nope",)), st.integers(0, 2**64 - 1), st.dictionaries(_field_names, _values, max_size=5),
       _symbol_values, st.booleans())
def test_structured_requests_decode_or_raise_protocol_error(op, rid, extra, symbols, with_symbols):
    """Maps that look like requests: every field, 'symbols' included, with values of every type."""
    body = {"v": 1, "id": rid, "op": op, **extra}
    if with_symbols:
        body["symbols"] = symbols
    _decodes_or_refuses(pack(body))


def test_docstring_examples():
    import doctest
    failures, tried = doctest.testmod(P, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0
