"""seqd publish / predict / stats / subscribe against the fake daemon (tests/fake_seqd.py)."""

from __future__ import annotations

import io
import json
import sys
import threading
import time

import pytest
import zmq

from fake_seqd import FakeServer
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
    assert main(["publish", str(path), "--stream", "web", "--api", server.endpoint, "--batch", "5"]) == 0
    assert "published 18 symbols to web; position 18" in capsys.readouterr().out
    assert [r.position for r in server.ops("publish")] == [0, 5, 10, 15]
    assert server.ops("create")[0].preset == "bytes"

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"more\n")))
    monkeypatch.setenv("SEQD_API", server.endpoint)
    assert main(["publish", "-", "--stream", "web"]) == 0
    assert "published 5 symbols to web; position 23" in capsys.readouterr().out
    assert server.ops("publish")[-1].position == 18
    assert bytes(server.streams["web"]) == b"line one\nline two\nmore\n"

    assert main(["publish", str(path), "--stream", "other", "--no-create", "--api", server.endpoint]) == 1
    assert "no stream 'other'" in capsys.readouterr().err
    assert main(["publish", str(tmp_path / "missing"), "--stream", "other", "--api", server.endpoint]) == 1
    assert "no such file" in capsys.readouterr().err and "other" not in server.streams

    def writer_sneaks_in(srv, req):
        srv.streams["web"] += b"x"
        return [(0.0, srv.handle(req))]
    server.then(lambda s, r: [(0.0, s.handle(r))], writer_sneaks_in)  # stats, then the first publish
    assert main(["publish", str(path), "--stream", "web", "--api", server.endpoint, "--batch", "5"]) == 1
    assert "another publisher" in capsys.readouterr().err


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


def test_cli_subscribe(capsys):
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
        assert main(["subscribe", "web", "--pub", f"tcp://127.0.0.1:{port}", "--count", "2", "--json"]) == 0
    finally:
        stop.set()
        t.join()
        pub.close(linger=0)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and json.loads(lines[0])["position"] == 8


def test_cli_bad_endpoint_is_one_line(capsys):
    assert main(["stats", "--api", "nonsense"]) == 1
    err = capsys.readouterr().err
    assert "cannot connect to 'nonsense'" in err and err.count("\n") == 1
