"""seqd's wire protocol: msgpack messages, their validation and their limits (``docs/protocol.md``).

This module contains no I/O whatsoever: bytes in, typed messages out, and
back.  The daemon's loop and the client's transport are the only places that
touch sockets; both speak through the functions here, so the protocol can be
tested by pushing bytes between two of its users with no socket in between.

    >>> req = Request(id=7, op="publish", stream="web", symbols=b"GET /")
    >>> decode_request(encode_request(req)) == req
    True
    >>> decode_request(b"\\xc1")
    Traceback (most recent call last):
    ...
    seqd.clients.protocol.ProtocolError: bad_request: not a msgpack message (... )

Every message is one msgpack map.  A request carries ``v`` (the protocol
version), ``id`` (chosen by the client, echoed by the reply, so clients may
pipeline) and ``op``; the other fields depend on the operation.  A reply
carries ``v``, ``id`` and ``ok``; a failure carries ``error`` =
``{code, message}``.  Prediction events on the PUB socket are two frames: the
topic (:func:`topic`) and a msgpack map.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any

import msgpack

PROTOCOL_VERSION = 1

# --- operations -----------------------------------------------------------------------------
OPS = ("ping", "create", "drop", "publish", "predict", "stats", "snapshot")
# the models a create may name (the daemon's, seqd.core.learners.PRESETS): the byte model (the default; the bitwise
# one since seqd 0.22), seed 000's GLNN alone, the bitwise byte model (the same), the baselines (context-tree
# weighting, an echo-state network, an LSTM, a GRU, a scoRNN, an ENRNN), seed 000's networks trained by rehearsing
# the stream's past (small alphabets), and each byte model's newest version by its frozen name: the bitwise
# model's, and the GLNN byte model's ("bytes" until seqd 0.21)
PRESETS = ("bytes", "glnn", "bitwise", "ctw", "esn", "lstm", "gru", "scornn", "enrnn", "rehearsal", "bitwise-3",
           "bytes-12")

# --- error codes (docs/protocol.md, "Errors") -----------------------------------------------
BAD_REQUEST = "bad_request"  # malformed message, wrong field types, missing fields
TOO_LARGE = "too_large"  # over a size limit (message, batch, name)
UNKNOWN_OP = "unknown_op"
BAD_VERSION = "bad_version"
BAD_NAME = "bad_name"  # stream name not allowed
NO_SUCH_STREAM = "no_such_stream"
STREAM_EXISTS = "stream_exists"
BAD_CONFIG = "bad_config"  # model configuration refused
BAD_SYMBOL = "bad_symbol"  # a symbol outside the stream's alphabet
LIMIT = "limit"  # a server-wide limit (number of streams)
BUSY = "busy"  # the stream's queue is full: retry after ``retry_after_ms``
CONFLICT = "conflict"  # a conditional publish whose position is not the stream's
TIMEOUT = "timeout"  # a predict that waited for a position which did not come in time
SHUTTING_DOWN = "shutting_down"
INTERNAL = "internal"  # a fault of the server's; the request changed nothing
ERROR_CODES = (BAD_REQUEST, TOO_LARGE, UNKNOWN_OP, BAD_VERSION, BAD_NAME, NO_SUCH_STREAM, STREAM_EXISTS,
               BAD_CONFIG, BAD_SYMBOL, LIMIT, BUSY, CONFLICT, TIMEOUT, SHUTTING_DOWN, INTERNAL)

# Stream names become directory names and PUB topics: letters, digits, '.', '_', '-', no leading dot.
STREAM_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
MAX_TOP = 65536
MAX_BATCH_ID = 64  # bytes of a publish's batch id


@dataclass(frozen=True)
class Limits:
    """Sizes a decoder refuses past; the daemon's are configured (``[limits]`` in ``seqd.toml``)."""

    max_message_bytes: int = 4 << 20
    max_batch_symbols: int = 1 << 20
    max_config_entries: int = 64


DEFAULT_LIMITS = Limits()


class ProtocolError(ValueError):
    """A message that breaks the protocol; ``code`` is one of :data:`ERROR_CODES`."""

    def __init__(self, code: str, message: str, retry_after_ms: int | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.retry_after_ms = retry_after_ms  # with ``busy``: when to try again


@dataclass(frozen=True)
class Request:
    """One request.  Fields not used by ``op`` keep their defaults (and are not sent).

    ==========  ==================================================================
    op          fields
    ==========  ==================================================================
    ping        —
    create      stream, preset (one of PRESETS; "bytes"), config (overrides of
                the preset's settings), exist_ok
    drop        stream
    publish     stream, symbols (bytes: one symbol per byte; or a list of ints),
                position (optional: the stream's expected length before the
                batch — a conditional append, safe to retry), batch (optional:
                an id of the client's choosing, 1-64 bytes; a batch whose id the
                stream has among its recent ones is acknowledged again, not
                appended: an unconditional publish made safe to retry), create
                (make the stream with the default byte model if it does not exist)
    predict     stream, top (k most probable symbols; 0: the full
                distribution), min_position, wait_ms (wait until the stream has
                learned ``min_position`` symbols, at most ``wait_ms``)
    stats       stream (optional: without it, the server's statistics)
    snapshot    stream
    ==========  ==================================================================
    """

    id: int
    op: str
    stream: str | None = None
    symbols: bytes | tuple[int, ...] | None = None
    position: int | None = None
    batch: bytes | None = None
    create: bool = False
    preset: str | None = None
    config: dict[str, Any] | None = None
    exist_ok: bool = False
    top: int = 5
    min_position: int = 0
    wait_ms: int = 0

    def __post_init__(self):
        _check_int("id", self.id, 0, 2**64 - 1)
        if self.op not in OPS:
            raise ProtocolError(UNKNOWN_OP, f"unknown operation {self.op!r}; known: {', '.join(OPS)}")
        if self.op in ("create", "drop", "publish", "predict", "snapshot") and self.stream is None:
            raise ProtocolError(BAD_REQUEST, f"{self.op} needs a stream name")
        if self.stream is not None:
            check_stream_name(self.stream)
        if self.op == "publish":
            if self.symbols is None:
                raise ProtocolError(BAD_REQUEST, "publish needs symbols")
            if isinstance(self.symbols, list):
                object.__setattr__(self, "symbols", tuple(self.symbols))
            if isinstance(self.symbols, (bytearray, memoryview)):
                object.__setattr__(self, "symbols", bytes(self.symbols))
            if not isinstance(self.symbols, (bytes, tuple)):
                raise ProtocolError(BAD_REQUEST, "symbols must be bytes or a list of integers")
            if len(self.symbols) == 0:
                raise ProtocolError(BAD_REQUEST, "publish needs at least one symbol")
            if isinstance(self.symbols, tuple):
                for s in self.symbols:
                    if not isinstance(s, int) or isinstance(s, bool) or not 0 <= s < 2**31:
                        raise ProtocolError(BAD_SYMBOL, f"symbols must be non-negative integers, got {s!r}")
        if self.position is not None:
            _check_int("position", self.position, 0, 2**63 - 1)
        if self.batch is not None:
            if self.op != "publish" or not isinstance(self.batch, bytes) or not 1 <= len(self.batch) <= MAX_BATCH_ID:
                raise ProtocolError(BAD_REQUEST, f"batch is a publish's id: 1 to {MAX_BATCH_ID} bytes")
        for name in ("create", "exist_ok"):
            if not isinstance(getattr(self, name), bool):
                raise ProtocolError(BAD_REQUEST, f"{name} must be true or false")
        if self.preset is not None and not isinstance(self.preset, str):
            raise ProtocolError(BAD_REQUEST, "preset must be a string")
        if self.config is not None:
            if not isinstance(self.config, dict) or not all(isinstance(k, str) for k in self.config):
                raise ProtocolError(BAD_REQUEST, "config must be a map of setting names to values")
            for k, val in self.config.items():
                if not isinstance(val, (int, float, str, bool, list, tuple)) and val is not None:
                    raise ProtocolError(BAD_REQUEST, f"config setting {k!r} has a value of unsupported type")
        _check_int("top", self.top, 0, MAX_TOP)
        _check_int("min_position", self.min_position, 0, 2**63 - 1)
        _check_int("wait_ms", self.wait_ms, 0, 3_600_000)


@dataclass(frozen=True)
class Reply:
    """A reply: ``ok`` with a ``result`` map, or not ok with an error ``code`` and ``message``."""

    id: int
    ok: bool
    result: dict[str, Any] = field(default_factory=dict)
    code: str | None = None
    message: str | None = None
    retry_after_ms: int | None = None

    @classmethod
    def success(cls, id: int, **result) -> "Reply":
        return cls(id=id, ok=True, result=result)

    @classmethod
    def failure(cls, id: int, code: str, message: str, retry_after_ms: int | None = None) -> "Reply":
        return cls(id=id, ok=False, code=code, message=message, retry_after_ms=retry_after_ms)


@dataclass(frozen=True)
class Event:
    """A prediction event, published after each batch a stream has learned.

    ``position`` is the number of symbols learned; ``bits`` the batch's code
    length; ``top`` the most probable next symbols as ``(symbol, p)``;
    ``escape`` the probability of a symbol not seen yet.
    """

    stream: str
    position: int
    symbols: int
    bits: float
    top: tuple[tuple[int, float], ...]
    escape: float


# --- requests ---------------------------------------------------------------------------------
_REQUEST_DEFAULTS = {f.name: f.default for f in fields(Request) if f.name not in ("id", "op")}
_REQUEST_FIELDS = frozenset(_REQUEST_DEFAULTS) | {"id", "op"}


def encode_request(req: Request) -> bytes:
    """The request as one msgpack map; fields left at their defaults are not sent."""
    body: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": req.id, "op": req.op}
    for name, default in _REQUEST_DEFAULTS.items():
        value = getattr(req, name)
        if value != default:
            body[name] = list(value) if isinstance(value, tuple) else value
    return msgpack.packb(body, use_bin_type=True)


def decode_request(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Request:
    """Parse and validate one request; raises :class:`ProtocolError` with the reason.

    Sizes are checked before anything is unpacked that could be large.
    """
    body = _unpack(data, limits, what="request")
    version = body.pop("v", None)
    if type(version) is not int or version != PROTOCOL_VERSION:  # 1.0 and true compare equal to 1: not versions
        raise ProtocolError(BAD_VERSION, f"protocol version {version!r} is not supported (this server speaks "
                                         f"{PROTOCOL_VERSION})")
    if "id" not in body or "op" not in body:
        raise ProtocolError(BAD_REQUEST, "a request needs 'id' and 'op'")
    if not isinstance(body["op"], str):
        raise ProtocolError(BAD_REQUEST, "'op' must be a string")
    if not body.keys() <= _REQUEST_FIELDS:
        unknown = body.keys() - _REQUEST_FIELDS
        raise ProtocolError(BAD_REQUEST, f"unknown field(s) {', '.join(sorted(map(str, unknown)))}")
    symbols = body.get("symbols")
    if symbols is not None and not isinstance(symbols, (bytes, list)):
        raise ProtocolError(BAD_REQUEST, "symbols must be bytes or a list of integers")
    if symbols is not None and len(symbols) > limits.max_batch_symbols:
        raise ProtocolError(TOO_LARGE, f"a batch holds at most {limits.max_batch_symbols} symbols, "
                                       f"got {len(symbols)}")
    config = body.get("config")
    if isinstance(config, dict) and len(config) > limits.max_config_entries:
        raise ProtocolError(TOO_LARGE, f"config has more than {limits.max_config_entries} entries")
    try:
        return Request(**body)
    except TypeError as exc:  # a field of the wrong type that the checks above did not name
        raise ProtocolError(BAD_REQUEST, str(exc)) from None


def request_id(data: bytes) -> int:
    """The ``id`` of a request that failed to decode, or 0: so that even a refusal can be matched."""
    n = len(data)  # no container can hold more items than the frame has bytes: allocation stays bounded
    try:
        body = msgpack.unpackb(data, raw=False, max_str_len=n, max_bin_len=n, max_array_len=n, max_map_len=n,
                               max_ext_len=0, strict_map_key=False)
        rid = body.get("id") if isinstance(body, dict) else None
        return rid if isinstance(rid, int) and not isinstance(rid, bool) and 0 <= rid < 2**64 else 0
    except Exception:
        return 0


# --- replies ----------------------------------------------------------------------------------
def encode_reply(reply: Reply) -> bytes:
    body: dict[str, Any] = {"v": PROTOCOL_VERSION, "id": reply.id, "ok": reply.ok}
    if reply.ok:
        body.update(reply.result)
    else:
        body["error"] = {"code": reply.code, "message": reply.message}
        if reply.retry_after_ms is not None:
            body["error"]["retry_after_ms"] = reply.retry_after_ms
    return msgpack.packb(body, use_bin_type=True)


def decode_reply(data: bytes, limits: Limits = DEFAULT_LIMITS) -> Reply:
    body = _unpack(data, limits, what="reply")
    if body.pop("v", None) != PROTOCOL_VERSION:
        raise ProtocolError(BAD_VERSION, "reply of an unsupported protocol version")
    rid, ok = body.pop("id", None), body.pop("ok", None)
    if not isinstance(rid, int) or isinstance(rid, bool) or not isinstance(ok, bool):
        raise ProtocolError(BAD_REQUEST, "a reply needs an integer 'id' and a boolean 'ok'")
    if ok:
        return Reply(id=rid, ok=True, result=body)
    error = body.get("error")
    if not isinstance(error, dict) or not isinstance(error.get("code"), str):
        raise ProtocolError(BAD_REQUEST, "a failed reply needs an 'error' map with a 'code'")
    return Reply.failure(rid, error["code"], str(error.get("message", "")), error.get("retry_after_ms"))


# --- events -----------------------------------------------------------------------------------
def topic(stream: str) -> bytes:
    """The PUB topic of a stream's events.  The NUL ends the name, so that subscribing to
    ``web`` does not also deliver ``web2`` (ZeroMQ matches topics by prefix)."""
    return stream.encode("ascii") + b"\x00"


def encode_event(event: Event) -> list[bytes]:
    """The two frames of a prediction event: topic, then the msgpack body."""
    body = {"v": PROTOCOL_VERSION, "stream": event.stream, "position": event.position,
            "symbols": event.symbols, "bits": event.bits, "top": [list(p) for p in event.top],
            "escape": event.escape}
    return [topic(event.stream), msgpack.packb(body, use_bin_type=True)]


def decode_event(frames: list[bytes], limits: Limits = DEFAULT_LIMITS) -> Event:
    if len(frames) != 2:
        raise ProtocolError(BAD_REQUEST, f"an event has 2 frames, got {len(frames)}")
    body = _unpack(frames[1], limits, what="event")
    if body.get("v") != PROTOCOL_VERSION:
        raise ProtocolError(BAD_VERSION, f"event of protocol version {body.get('v')!r}")
    if not isinstance(body.get("stream"), str):
        raise ProtocolError(BAD_REQUEST, "an event's stream must be a string")
    try:
        return Event(stream=body["stream"], position=int(body["position"]), symbols=int(body["symbols"]),
                     bits=float(body["bits"]), top=tuple((int(s), float(p)) for s, p in body["top"]),
                     escape=float(body["escape"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(BAD_REQUEST, f"malformed event: {exc}") from None


# --- shared checks ----------------------------------------------------------------------------
def check_stream_name(name) -> str:
    if not isinstance(name, str):
        raise ProtocolError(BAD_NAME, "a stream name must be a string")
    if not STREAM_NAME.fullmatch(name):
        shown = name if len(name) <= 64 else name[:61] + "..."
        raise ProtocolError(BAD_NAME, f"stream name {shown!r} is not allowed: use 1-128 letters, digits, "
                                      "'.', '_' or '-', not starting with '.'")
    return name


def _unpack(data: bytes, limits: Limits, *, what: str) -> dict:
    if len(data) > limits.max_message_bytes:
        raise ProtocolError(TOO_LARGE, f"a {what} is at most {limits.max_message_bytes} bytes, got {len(data)}")
    try:
        body = msgpack.unpackb(
            data, raw=False, strict_map_key=True, use_list=True,
            max_str_len=limits.max_message_bytes, max_bin_len=limits.max_message_bytes,
            max_array_len=max(limits.max_batch_symbols, MAX_TOP, 1024), max_map_len=limits.max_config_entries + 32,
            max_ext_len=0,
        )
    except ValueError as exc:
        if "exceeds max_" in str(exc) and "max_ext_len" not in str(exc):  # over a size bound: not malformed
            # (an ext type, which the protocol never uses, is bounded at 0: that one is malformed)
            raise ProtocolError(TOO_LARGE, f"a {what} holds a field over its size limit ({exc})") from None
        raise ProtocolError(BAD_REQUEST, f"not a msgpack message ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # msgpack raises a zoo of types (ExtraData, FormatError, ...)
        raise ProtocolError(BAD_REQUEST, f"not a msgpack message ({type(exc).__name__}: {exc})") from None
    if not isinstance(body, dict):
        raise ProtocolError(BAD_REQUEST, f"a {what} must be a msgpack map, got {type(body).__name__}")
    return body


def _check_int(name: str, value, lo: int, hi: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ProtocolError(BAD_REQUEST, f"{name} must be an integer in [{lo}, {hi}], got {value!r}")
