"""A scripted stand-in for the daemon's API socket, for client tests: no model, one thread.

It speaks the protocol through ``seqd.clients.protocol`` only.  By default it
keeps streams as byte arrays and answers every operation plausibly; tests
queue *actions* (``server.then(...)``) that take over the next requests one
by one: drop them, answer busy, answer late, send a stale reply first, ...
"""

from __future__ import annotations

import collections
import threading
import time

import zmq

from seqd.clients import protocol as P
from seqd.clients.protocol import Reply


class FakeServer:
    def __init__(self, context: zmq.Context | None = None):
        self.context = context or zmq.Context.instance()
        self.sock = self.context.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.port = self.sock.bind_to_random_port("tcp://127.0.0.1")
        self.endpoint = f"tcp://127.0.0.1:{self.port}"
        self.limits = P.DEFAULT_LIMITS  # what the decoder refuses past (a daemon's are configurable)
        self.streams: dict[str, bytearray] = {}
        self.learned: dict[str, int] = {}  # learned symbols per stream (default: all accepted)
        self.batches: dict[tuple[str, bytes], int] = {}  # (stream, batch id) -> the position it left the stream at
        self.knows_batch_ids = True  # False: as a server before seqd 0.18, which refuses the field
        self.requests: list[tuple[bytes, P.Request]] = []  # (peer identity, request) as received
        self.refused: list[str] = []  # the error code of each frame refused before it became a request
        self.actions: collections.deque = collections.deque()
        self._pending: list[tuple[float, bytes, bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def then(self, *actions) -> "FakeServer":
        """Let each action take over one coming request: ``action(server, request) -> replies``,
        a list of ``(delay_seconds, Reply)`` (empty: no reply)."""
        self.actions.extend(actions)
        return self

    def ops(self, op: str | None = None) -> list[P.Request]:
        return [r for _, r in self.requests if op is None or r.op == op]

    # --- default behaviour ------------------------------------------------------------------
    def handle(self, r: P.Request) -> Reply:
        s = self.streams.get(r.stream) if r.stream else None
        if r.op == "ping":
            return Reply.success(r.id, server="seqd", version="0.test", protocol=1)
        if r.op == "create":
            if s is not None and not r.exist_ok:
                return Reply.failure(r.id, P.STREAM_EXISTS, f"stream {r.stream!r} exists")
            created = s is None
            self.streams.setdefault(r.stream, bytearray())
            return Reply.success(r.id, stream=r.stream, created=created, config={"preset": r.preset or "bytes"})
        if s is None and r.op == "publish" and r.create:
            s = self.streams[r.stream] = bytearray()
        if s is None and r.stream is not None:
            return Reply.failure(r.id, P.NO_SUCH_STREAM, f"no stream {r.stream!r}")
        if r.op == "drop":
            del self.streams[r.stream]
            return Reply.success(r.id, stream=r.stream, dropped=True)
        if r.op == "publish":
            if r.batch is not None and (r.stream, r.batch) in self.batches:
                return Reply.success(r.id, stream=r.stream, position=self.batches[r.stream, r.batch], queued=0)
            if r.position is not None and r.position != len(s):
                return Reply.failure(r.id, P.CONFLICT, f"stream {r.stream!r} has {len(s)} symbols, not {r.position}")
            s.extend(r.symbols if isinstance(r.symbols, bytes) else bytes(r.symbols))
            if r.batch is not None:
                self.batches[r.stream, r.batch] = len(s)
            return Reply.success(r.id, stream=r.stream, position=len(s), queued=0)
        learned = self.learned.get(r.stream, len(s) if s is not None else 0)
        if r.op == "predict":
            if r.min_position > learned:
                return Reply.failure(r.id, P.TIMEOUT, f"position {r.min_position} not reached")
            top = [[97, 0.5], [10, 0.25], [0, 0.125]][: r.top or 3]
            extra = {"distribution": [1 / 256] * 256} if r.top == 0 else {}
            return Reply.success(r.id, stream=r.stream, position=learned, top=top, escape=0.125, alphabet_size=3,
                                 **extra)
        if r.op == "stats" and r.stream is None:
            return Reply.success(r.id, server="seqd", version="0.test", uptime_seconds=1.5,
                                 streams=sorted(self.streams), queued=0, symbols_learned=sum(map(len, self.streams.values())))
        if r.op == "stats":
            return Reply.success(r.id, stream=r.stream, position=learned, accepted=len(s), queued=len(s) - learned,
                                 bits_per_symbol=None if not s else 2.5, recent_bits_per_symbol=None if not s else 2.0,
                                 code_bits=2.5 * len(s), alphabet_size=3, alphabet_cap=256, writing_rate=0.1,
                                 transition_rate=0.2, windows=4, rejected_windows=0, config={"units": 4},
                                 state_bytes=1000, created=1.7e9, uptime_seconds=3.0)
        if r.op == "snapshot":
            return Reply.success(r.id, stream=r.stream, position=learned)
        return Reply.failure(r.id, P.INTERNAL, "unhandled")

    # --- the loop -----------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            if self.sock.poll(10, zmq.POLLIN):
                ident, data = self.sock.recv_multipart()
                try:
                    req = P.decode_request(data, self.limits)
                except P.ProtocolError as exc:
                    self.refused.append(exc.code)
                    self._send(ident, Reply.failure(P.request_id(data), exc.code, exc.message))
                    continue
                if req.batch is not None and not self.knows_batch_ids:
                    self._send(ident, Reply.failure(req.id, P.BAD_REQUEST, "unknown field(s) batch"))
                    continue
                self.requests.append((ident, req))
                action = self.actions.popleft() if self.actions else None
                replies = [(0.0, self.handle(req))] if action is None else action(self, req)
                for delay, reply in replies:
                    self._pending.append((time.monotonic() + delay, ident, P.encode_reply(reply)))
            now = time.monotonic()
            due = [p for p in self._pending if p[0] <= now]
            for p in sorted(due, key=lambda p: p[0]):
                self._pending.remove(p)
                self.sock.send_multipart([p[1], p[2]])

    def _send(self, ident: bytes, reply: Reply) -> None:
        self.sock.send_multipart([ident, P.encode_reply(reply)])

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close(linger=0)


# --- actions ------------------------------------------------------------------------------------
def drop(server, req):
    """Lose the request: nothing happens, no reply."""
    return []


def lose_reply(server, req):
    """The request takes effect, but its reply is lost."""
    server.handle(req)
    return []


def busy(ms: int):
    def action(server, req):
        return [(0.0, Reply.failure(req.id, P.BUSY, "queue full", retry_after_ms=ms))]
    return action


def late(seconds: float):
    def action(server, req):
        return [(seconds, server.handle(req))]
    return action


def stale_first(server, req):
    """A reply to some other id first (an earlier request's), then the right one."""
    return [(0.0, Reply.success(req.id + 1000, stream="stale", position=999, queued=0)), (0.01, server.handle(req))]


def fail(code: str, message: str = "refused"):
    def action(server, req):
        return [(0.0, Reply.failure(req.id, code, message))]
    return action
