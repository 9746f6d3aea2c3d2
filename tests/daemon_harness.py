"""A real seqd server for tests: in this process (a thread) or as a ``seqd serve`` subprocess, on loopback.

Requests go through the protocol module over a plain DEALER socket, so these
tests exercise the daemon alone; the client library has tests of its own.
"""

from __future__ import annotations

import io
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import zmq

from seqd.clients import protocol as P
from seqd.daemon.config import ServeConfig
from seqd.daemon.server import Server

# a byte-stream model small enough for tests: the default byte model (bitwise), its tables at their first size (they
# do not grow: a learner takes what a new one does, which the budget tests count on; tests/test_daemon_models.py
# has streams whose tables grow)
SMALL_BYTES = {"table_bits": 10, "history_bits": 12, "match_bits": 10, "number_bits": 10}
# the GLNN byte model (preset bytes-12, "bytes" until seqd 0.21), as small, for what only its streams had: the
# stream snapshots of versions 1 to 3, written before any other model was served
GLNN_BYTES = "bytes-12"
SMALL_GLNN = {"context_bits": 10, "history_bits": 12, "match_bits": 10, "units": 4}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Caller:
    """Requests over one DEALER socket; replies matched by id."""

    def __init__(self, endpoint: str, timeout: float = 30.0):
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(endpoint)
        self.timeout = timeout
        self._ids = itertools.count(1)

    def raw(self, *frames: bytes) -> None:
        self.sock.send_multipart(list(frames))

    def reply(self, timeout: float | None = None) -> P.Reply:
        if not self.sock.poll(int(1000 * (timeout or self.timeout))):
            raise TimeoutError("no reply from the server")
        return P.decode_reply(self.sock.recv())

    def __call__(self, op: str, **fields) -> P.Reply:
        rid = next(self._ids)
        self.sock.send(P.encode_request(P.Request(id=rid, op=op, **fields)))
        while True:
            reply = self.reply()
            if reply.id == rid:
                return reply

    def ok(self, op: str, **fields) -> dict:
        reply = self(op, **fields)
        assert reply.ok, (reply.code, reply.message)
        return reply.result

    def close(self):
        self.sock.close()


class ThreadServer:
    """``Server`` running in a thread of this process; ``stop()`` is the orderly SIGTERM path."""

    def __init__(self, state_dir: Path, **settings):
        """``metrics_port="free"``: a port nothing listens on, found by trying (``self.metrics_port``); a port
        found free can be taken by another socket before the server binds it, so a few are tried."""
        settings = dict(dict(api="tcp://127.0.0.1:*", pub="tcp://127.0.0.1:*", metrics_port=0, workers=2),
                        **settings)
        free = settings["metrics_port"] == "free"
        for attempt in range(5 if free else 1):
            if free:
                settings["metrics_port"] = free_port()
            self.server = Server(ServeConfig(state_dir=str(state_dir), **settings))
            try:
                self.server.start()  # a failed start leaves nothing open
                break
            except ValueError as exc:
                if not (free and "cannot serve metrics" in str(exc) and attempt < 4):
                    raise
        self.metrics_port = settings["metrics_port"]
        self.thread = threading.Thread(target=self.server.serve, daemon=True)
        self.thread.start()
        self.api, self.pub = self.server.api_endpoint, self.server.pub_endpoint

    def stop(self, timeout: float = 60.0) -> None:
        self.server.request_stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the server did not stop"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.thread.is_alive():
            self.stop()


class ProcessServer:
    """``seqd serve`` as a subprocess, as an operator runs it."""

    def __init__(self, state_dir: Path, metrics_port: int = 0):
        self.api = f"tcp://127.0.0.1:{free_port()}"
        self.pub = f"tcp://127.0.0.1:{free_port()}"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "seqd", "serve", "--state-dir", str(state_dir), "--api", self.api,
             "--pub", self.pub, "--metrics-port", str(metrics_port), "--workers", "2", "--log-level", "warning"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        caller = Caller(self.api, timeout=0.5)
        deadline = time.monotonic() + 60
        while True:  # up once it answers a ping
            try:
                caller("ping")
                break
            except TimeoutError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"seqd serve did not start: {self.proc.stderr.read().decode()}")
                caller.close()
                caller = Caller(self.api, timeout=0.5)
        caller.close()

    def terminate(self, sig=signal.SIGTERM, timeout: float = 60.0) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self.stderr = self.proc.stderr.read().decode()
        return code


def snapshot_as_version(snap: Path, version: int) -> None:
    """Rewrite a stream's version-4 snapshot as an earlier seqd wrote it: version 3 (the learner deflated whole),
    2 (the learner as it is) or 1 (also the recent code lengths as JSON numbers)."""
    import json
    import struct
    import zlib

    from seqd.daemon import sparse
    data = snap.read_bytes()
    head = struct.Struct("<8sQII")
    magic, position, size, crc = head.unpack_from(data)
    assert magic == b"SEQDSNP\x04"
    stats = data[head.size:head.size + size]
    words = sparse.SparseReader(io.BytesIO(data[head.size + size:]), None)
    learner = words.read(words.size)
    assert words.finished and len(learner) == words.size
    if version == 3:
        snap.write_bytes(head.pack(b"SEQDSNP\x03", position, size, crc) + stats + zlib.compress(learner, 1))
    elif version == 2:
        snap.write_bytes(head.pack(b"SEQDSNP\x02", position, size, crc) + stats + learner)
    else:
        (n,) = struct.unpack_from("<I", stats)
        info = json.loads(stats[4:4 + n])
        recent = np.frombuffer(stats, dtype="<f8", offset=4 + n)
        v1 = json.dumps({"code_bits": info["code_bits"], "recent": recent.tolist()}).encode()
        snap.write_bytes(head.pack(b"SEQDSNP\x01", position, len(v1), zlib.crc32(v1, position)) + v1 + learner)
