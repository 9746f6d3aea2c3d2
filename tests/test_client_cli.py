"""seqd publish / predict / stats / subscribe against the fake daemon (tests/fake_seqd.py)."""

from __future__ import annotations

import io
import json
import sys
import threading
import time

import pytest
import zmq

from fake_seqd import FakeServer, fail
from seqd.clients import protocol
from seqd.cli import main
from seqd.cli._client import show_symbol


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def test_cli_publish_file_and_stdin_sequences_positions(server, tmp_path, capsys, monkeypatch):
    path = tmp_path / "log"
    path.write_bytes(b"line one\nline two\n")
    assert main(["publish", "web", str(path), "--api", server.endpoint, "--batch", "5"]) == 0
    assert "published 18 symbols to web; position 18" in capsys.readouterr().out
    assert [r.position for r in server.ops("publish")] == [0, 5, 10, 15]
    assert server.ops("create")[0].preset == "bytes"

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"more\n")))
    monkeypatch.setenv("SEQD_API", server.endpoint)
    assert main(["publish", "web"]) == 0  # no FILE: stdin
    assert "published 5 symbols to web; position 23" in capsys.readouterr().out
    assert server.ops("publish")[-1].position == 18
    assert bytes(server.streams["web"]) == b"line one\nline two\nmore\n"

    assert main(["publish", "other", str(path), "--no-create", "--api", server.endpoint]) == 1
    assert "no stream 'other'" in capsys.readouterr().err
    assert main(["publish", "other", str(tmp_path / "missing"), "--api", server.endpoint]) == 1
    assert "no such file" in capsys.readouterr().err and "other" not in server.streams
    assert main(["publish", "other", str(tmp_path), "--api", server.endpoint]) == 1
    assert "is a directory" in capsys.readouterr().err and "other" not in server.streams

    def writer_sneaks_in(srv, req):
        srv.streams["web"] += b"x"
        return [(0.0, srv.handle(req))]
    server.then(lambda s, r: [(0.0, s.handle(r))], writer_sneaks_in)  # stats, then the first publish
    assert main(["publish", "web", str(path), "--api", server.endpoint, "--batch", "5"]) == 1
    assert "another publisher" in capsys.readouterr().err


def test_cli_publish_takes_the_older_stream_option_with_a_note(server, tmp_path, capsys):
    path = tmp_path / "log"
    path.write_bytes(b"abc\n")
    assert main(["publish", str(path), "--stream", "web", "--api", server.endpoint]) == 0
    out, err = capsys.readouterr()
    assert "published 4 symbols to web" in out and "--stream is deprecated" in err
    assert main(["publish", "web", str(path), "--stream", "web", "--api", server.endpoint]) == 1
    assert "named twice" in capsys.readouterr().err


def answer(server, req):
    return [(0.0, server.handle(req))]


def test_a_publish_that_fails_before_sending_anything_leaves_no_stream_it_created(server, tmp_path, capsys):
    path = tmp_path / "log"
    path.write_bytes(b"abc\n")
    # stats (absent), create, stats, then the first publish fails: the stream this run made is dropped
    server.then(answer, answer, answer, fail(protocol.INTERNAL, "disk on fire"))
    assert main(["publish", "new", str(path), "--api", server.endpoint, "--no-wait"]) == 1
    err = capsys.readouterr().err
    assert "disk on fire" in err and "dropped stream 'new'" in err
    assert "new" not in server.streams and [r.op for r in server.ops()][-1] == "drop"
    # a stream that was there before is never dropped
    server.streams["old"] = bytearray(b"xy")
    server.then(answer, fail(protocol.INTERNAL, "disk on fire"))
    assert main(["publish", "old", str(path), "--api", server.endpoint, "--no-wait"]) == 1
    assert "old" in server.streams and not server.ops("drop")[1:]


def test_cli_streams_lists_every_stream(server, capsys):
    server.streams["web"] = bytearray(b"abc")
    server.streams["db"] = bytearray()
    assert main(["streams", "--api", server.endpoint]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "LEARNED", "QUEUED", "BITS/SYM", "RECENT", "MEMORY", "STATE"]
    assert [line.split()[0] for line in lines[1:]] == ["db", "web"]
    assert lines[2].split() == ["web", "3", "0", "2.5000", "2.0000", "1.0", "kB", "live"]
    assert lines[1].split()[3:5] == ["-", "-"]  # nothing learned yet: no rate
    asleep = server.handle

    def hibernated(r):
        reply = asleep(r)
        if r.op == "stats" and r.stream == "web":
            reply = type(reply).success(r.id, **dict(reply.result, resident=False))
        return reply
    server.handle = hibernated
    assert main(["streams", "--api", server.endpoint]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[5] == "hibernated"
    server.handle = asleep
    assert main(["streams", "--api", server.endpoint, "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["stream"] for r in rows] == ["db", "web"] and rows[1]["learned"] == 3 and rows[1]["state"] == "live"
    server.streams.clear()
    assert main(["streams", "--api", server.endpoint]) == 0
    assert "(no streams)" in capsys.readouterr().out


def test_cli_drop_asks_or_needs_yes(server, capsys, monkeypatch):
    server.streams["web"] = bytearray(b"abc")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))  # not a terminal
    assert main(["drop", "web", "--api", server.endpoint]) == 1
    assert "pass --yes" in capsys.readouterr().err and "web" in server.streams
    assert main(["drop", "nope", "--yes", "--api", server.endpoint]) == 1
    assert "no stream 'nope'" in capsys.readouterr().err
    assert main(["drop", "web", "-y", "--api", server.endpoint]) == 0
    assert "dropped stream web (3 symbols learned)" in capsys.readouterr().out and "web" not in server.streams


def test_cli_drop_on_a_terminal_asks_first(server, capsys, monkeypatch):
    server.streams["web"] = bytearray(b"abc")

    class Terminal(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    assert main(["drop", "web", "--api", server.endpoint]) == 1
    assert "not dropped" in capsys.readouterr().out and "web" in server.streams
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    assert main(["drop", "web", "--api", server.endpoint]) == 0 and "web" not in server.streams


def test_cli_predict(server, capsys):
    server.streams["web"] = bytearray(b"abc")
    assert main(["predict", "web", "--api", server.endpoint, "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "position 3" in out and "'a'" in out and "'\\n'" in out and "0x00" in out and "0.5000" in out
    assert main(["predict", "web", "--api", server.endpoint, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["top"][0] == [97, 0.5]
    assert main(["predict", "nope", "--api", server.endpoint]) == 1
    assert "no stream 'nope'" in capsys.readouterr().err
    assert [show_symbol(s) for s in (97, 10, 0, 200, 300)] == ["'a'", "'\\n'", "0x00", "0xc8", "300"]


def test_cli_stats_exit_codes(server, capsys):
    server.streams["web"] = bytearray(b"abc")
    assert main(["stats", "--api", server.endpoint]) == 0
    assert "symbols_learned" in capsys.readouterr().out
    assert main(["stats", "web", "--api", server.endpoint]) == 0
    out = capsys.readouterr().out
    assert "accepted" in out and "units=4" in out
    assert main(["stats", "web", "--api", server.endpoint, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["accepted"] == 3
    nobody = zmq.Context.instance().socket(zmq.ROUTER)
    port = nobody.bind_to_random_port("tcp://127.0.0.1")
    nobody.close(linger=0)  # a port where nobody listens
    t0 = time.monotonic()
    assert main(["stats", "--api", f"tcp://127.0.0.1:{port}", "--timeout", "0.2"]) == 1
    assert time.monotonic() - t0 < 2
    err = capsys.readouterr().err
    assert f"cannot reach seqd at tcp://127.0.0.1:{port} (is `seqd serve` running?)" in err
    assert err.count("\n") == 1


def test_cli_subscribe_to_an_absent_daemon_or_stream_fails_within_the_timeout(server, capsys):
    nobody = zmq.Context.instance().socket(zmq.ROUTER)
    port = nobody.bind_to_random_port("tcp://127.0.0.1")
    nobody.close(linger=0)
    t0 = time.monotonic()
    assert main(["subscribe", "web", "--api", f"tcp://127.0.0.1:{port}", "--timeout", "0.3"]) == 1
    assert time.monotonic() - t0 < 5 and "cannot reach seqd" in capsys.readouterr().err
    assert main(["subscribe", "nope", "--api", server.endpoint]) == 1
    assert "no stream 'nope'" in capsys.readouterr().err


def test_cli_subscribe(server, capsys):
    server.streams["web"] = bytearray(b"abc")
    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    stop = threading.Event()

    def publish():
        while not stop.is_set():
            pub.send_multipart(protocol.encode_event(protocol.Event("web", 8, 4, 6.0, ((97, 0.5),), 0.1)))
            time.sleep(0.01)
    t = threading.Thread(target=publish)
    t.start()
    try:
        assert main(["subscribe", "web", "--api", server.endpoint, "--pub", f"tcp://127.0.0.1:{port}", "--count", "2",
                     "--json"]) == 0
    finally:
        stop.set()
        t.join()
        pub.close(linger=0)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["position"] == 8


def test_cli_bad_endpoint_is_one_line(capsys):
    assert main(["stats", "--api", "tcp://nonsense"]) == 1
    err = capsys.readouterr().err
    assert "cannot connect to 'tcp://nonsense'" in err and err.count("\n") == 1
    assert main(["stats", "--api", "127.0.0.1:7710"]) == 1
    err = capsys.readouterr().err
    assert "needs a transport, as in tcp://127.0.0.1:7710" in err and err.count("\n") == 1
