"""The daemon end to end, on loopback: what it serves equals an in-process learner fed the same symbols;
bad input changes nothing; a full queue says busy; stop and restart (orderly or killed) lose nothing."""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

import seqd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from seqd.clients import protocol as P
from seqd.core.faces import DEFAULT
from seqd.core.learners import learner_for
from seqd.daemon import snapshot_file, sparse
from seqd.daemon import streams as streams_module
from seqd.daemon.learner_store import resident_bytes
from seqd.daemon.models import make_config

from daemon_harness import GLNN_BYTES, SMALL_BYTES, SMALL_GLNN, Caller, ProcessServer, ThreadServer, free_port, snapshot_as_version

LOGS = Path(__file__).resolve().parents[2] / "shared" / "data" / "logs"


def text(n: int, seed: int = 0) -> bytes:
    """Log-like bytes: a few templates with numbers, so the model has something to learn."""
    rng = np.random.default_rng(seed)
    words = [b"GET", b"POST", b"/index.html", b"/api/v1/items", b"200", b"404", b"ok", b"user"]
    out = bytearray()
    while len(out) < n:
        out += b" ".join(words[i] for i in rng.integers(0, len(words), 4)) + b" %d\n" % rng.integers(0, 1000)
    return bytes(out[:n])


def reference(batches, preset="bytes", config=SMALL_BYTES):
    learner = learner_for(make_config(preset, config))
    bits = sum(float(learner.learn(b).sum()) for b in batches)
    return learner, bits


@pytest.fixture
def server(tmp_path):
    with ThreadServer(tmp_path / "state") as srv:
        yield srv


@pytest.fixture
def call(server):
    caller = Caller(server.api)
    yield caller
    caller.close()


def test_publish_predict_stats_equal_an_in_process_learner(call):
    batches = [text(3000, 1), text(1000, 2), text(2500, 3)]
    call.ok("create", stream="web", config=SMALL_BYTES)
    position = 0
    for batch in batches:
        ack = call.ok("publish", stream="web", symbols=batch, position=position)
        position += len(batch)
        assert ack["position"] == position
    got = call.ok("predict", stream="web", top=0, min_position=position, wait_ms=30000)
    learner, bits = reference(batches)
    assert got["position"] == position
    assert np.array_equal(np.array(got["distribution"]), learner.predict_proba())  # bit-identical
    expected = learner.predict_proba_one()
    assert got["escape"] == expected.pop(None)
    assert got["top"][0][0] == max(expected, key=expected.get)
    assert [p for _, p in got["top"]] == sorted((p for p in expected.values()), reverse=True)[:len(got["top"])]
    stats = call.ok("stats", stream="web")
    assert stats["position"] == stats["accepted"] == position and stats["queued"] == 0
    assert stats["code_bits"] == pytest.approx(bits, rel=1e-12)
    assert stats["bits_per_symbol"] == pytest.approx(bits / position, rel=1e-12)
    assert stats["alphabet_size"] == learner.stats["alphabet_size"]
    assert stats["config"]["table_bits"] == 10 and stats["model"] == "bitwise"


def test_several_streams_concurrently(server):
    names = [f"s{i}" for i in range(4)]
    data = {name: [text(1500, 10 * i + j) for j in range(3)] for i, name in enumerate(names)}
    errors = []

    def publisher(name):
        caller = Caller(server.api)
        try:
            caller.ok("create", stream=name, config=SMALL_BYTES)
            for batch in data[name]:
                caller.ok("publish", stream=name, symbols=batch)
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            caller.close()

    threads = [threading.Thread(target=publisher, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    call = Caller(server.api)
    for name in names:
        got = call.ok("predict", stream=name, top=0, min_position=4500, wait_ms=30000)
        learner, _ = reference(data[name])
        assert np.array_equal(np.array(got["distribution"]), learner.predict_proba())
    assert call.ok("stats")["streams"] == names
    call.close()


def test_prediction_events_follow_each_learned_batch(server, call):
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(server.pub)
    sub.setsockopt(zmq.SUBSCRIBE, P.topic("ev"))
    call.ok("create", stream="ev", config=SMALL_BYTES)
    call.ok("create", stream="ev2", config=SMALL_BYTES)  # a name with "ev" as prefix: not delivered
    import time
    time.sleep(0.3)  # a SUB socket misses what is published before its subscription arrives
    call.ok("publish", stream="ev2", symbols=b"noise")
    call.ok("publish", stream="ev", symbols=b"abcabc")
    assert sub.poll(30000)
    event = P.decode_event(sub.recv_multipart())
    learner, bits = reference([b"abcabc"])
    assert (event.stream, event.position, event.symbols) == ("ev", 6, 6)
    assert event.bits == pytest.approx(bits, rel=1e-12)
    assert event.escape == learner.predict_proba_one()[None]
    assert not sub.poll(300)
    sub.close()


def test_rejections_are_clear_and_change_nothing(call, server):
    call.ok("create", stream="web", preset="glnn", config={"units": 4, "alphabet_cap": 16})
    call.ok("publish", stream="web", symbols=[1, 2, 3, 1, 2, 3])
    before = call.ok("predict", stream="web", top=0, min_position=6, wait_ms=30000)
    cases = [
        (dict(op="publish", stream="nope", symbols=b"x"), P.NO_SUCH_STREAM),
        (dict(op="publish", stream="web", symbols=[1, 16]), P.BAD_SYMBOL),
        (dict(op="publish", stream="web", symbols=[1], position=3), P.CONFLICT),
        (dict(op="create", stream="web"), P.STREAM_EXISTS),
        (dict(op="create", stream="x", config={"units": -1}), P.BAD_CONFIG),
        (dict(op="create", stream="x", config={"no_such_setting": 1}), P.BAD_CONFIG),
        (dict(op="create", stream="x", preset="transformer"), P.BAD_CONFIG),
        (dict(op="predict", stream="web", min_position=99), P.TIMEOUT),
        (dict(op="predict", stream="web", min_position=99, wait_ms=50), P.TIMEOUT),
        (dict(op="stats", stream="nope"), P.NO_SUCH_STREAM),
    ]
    for fields, code in cases:
        reply = call(**fields)
        assert not reply.ok and reply.code == code, (fields, reply)
        assert reply.message
    raw = [
        (b"\xc1", P.BAD_REQUEST),
        (b"\x93\x01\x02\x03", P.BAD_REQUEST),  # an array, not a map
        (P.encode_request(P.Request(id=1, op="ping"))[:-2], P.BAD_REQUEST),
        (b"\x83\xa1v\x02\xa2id\x05\xa2op\xa4ping", P.BAD_VERSION),
        (b"\x83\xa1v\x01\xa2id\x05\xa2op\xa4fly!", P.UNKNOWN_OP),
        (b"\x84\xa1v\x01\xa2id\x05\xa2op\xa7predict\xa6stream\xa4../x", P.BAD_NAME),
    ]
    for frame, code in raw:
        call.raw(frame)
        reply = call.reply()
        assert not reply.ok and reply.code == code, (frame, reply)
    call.raw(b"one", b"two")
    assert call.reply().code == P.BAD_REQUEST
    after = call.ok("predict", stream="web", top=0)
    assert after == before
    assert call.ok("stats", stream="web")["accepted"] == 6


def test_a_reply_that_cannot_be_encoded_is_an_internal_error_and_misroutes_nothing(server, call, monkeypatch):
    """A fault of ours in a reply's values: that request is told so, the daemon goes on, and the next
    reply, to another client, is that client's own (a half-sent reply would have taken its identity)."""
    monkeypatch.setattr(server.server.requests, "server_stats", lambda: {"not msgpack": object()})
    other = Caller(server.api)
    try:
        failed = call("stats")
        assert not failed.ok and failed.code == P.INTERNAL and "could not be encoded" in failed.message
        assert other("ping").result["server"] == "seqd"
        assert call("ping").ok
    finally:
        other.close()


def test_an_oversized_message_is_dropped_and_the_daemon_goes_on(tmp_path):
    with ThreadServer(tmp_path / "state", max_message_bytes=4096, max_batch_symbols=1000,
                      max_queue_symbols=1000) as srv:
        call = Caller(srv.api, timeout=1.0)
        call.raw(b"\x00" * 10_000)  # ZMQ_MAXMSGSIZE: the connection is closed, nothing is parsed
        with pytest.raises(TimeoutError):
            call.reply()
        call.close()
        call = Caller(srv.api)
        call.ok("create", stream="s", config=SMALL_BYTES)
        reply = call("publish", stream="s", symbols=list(range(100)) * 11)
        assert reply.code == P.TOO_LARGE
        assert call.ok("ping")["server"] == "seqd"
        call.close()


_FIELD_VALUES = st.one_of(st.integers(-5, 2**64 - 1), st.text(max_size=5), st.binary(max_size=5), st.none(),
                         st.lists(st.integers(-3, 300), max_size=4))
_NEAR_REQUESTS = st.dictionaries(st.sampled_from(["v", "id", "op", "stream", "symbols", "top", "position", "config",
                                                  "x"]), _FIELD_VALUES, max_size=6).map(msgpack.packb)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames=st.lists(st.one_of(st.binary(max_size=64), _NEAR_REQUESTS), min_size=1, max_size=3))
def test_a_flood_of_garbage_leaves_the_daemon_alive_and_the_streams_unchanged(flood_server, frames):
    srv, call, before = flood_server
    call.raw(*frames)
    call("ping")  # every garbage frame set got its reply (or none, for zero-length identities); then ours
    assert call.ok("predict", stream="keep", top=0) == before
    assert call.ok("stats", stream="keep")["accepted"] == 5


@pytest.fixture(scope="module")
def flood_server(tmp_path_factory):
    with ThreadServer(tmp_path_factory.mktemp("flood")) as srv:
        call = Caller(srv.api)
        call.ok("create", stream="keep", config=SMALL_BYTES)
        call.ok("publish", stream="keep", symbols=b"hello")
        before = call.ok("predict", stream="keep", top=0, min_position=5, wait_ms=30000)
        yield srv, call, before
        call.close()


@pytest.fixture
def gate(monkeypatch):
    """Workers hold every piece of work until ``gate.set()``: what is queued stays queued meanwhile."""
    opened = threading.Event()
    run_next = streams_module.Stream.run_next

    def held(self):
        opened.wait(30)
        return run_next(self)

    monkeypatch.setattr(streams_module.Stream, "run_next", held)
    return opened


def test_a_full_queue_answers_busy_and_loses_nothing(tmp_path, gate):
    with ThreadServer(tmp_path / "state", max_batch_symbols=1000, max_queue_symbols=1500) as srv:
        call = Caller(srv.api)
        call.ok("create", stream="s", config=SMALL_BYTES)
        assert call.ok("publish", stream="s", symbols=text(1000))["queued"] == 1000
        busy = call("publish", stream="s", symbols=text(600, 1))
        assert busy.code == P.BUSY and busy.retry_after_ms >= 10
        assert call.ok("stats", stream="s")["accepted"] == 1000
        gate.set()
        call.ok("predict", stream="s", min_position=1000, wait_ms=30000)
        assert call.ok("publish", stream="s", symbols=text(600, 1), position=1000)["position"] == 1600
        got = call.ok("predict", stream="s", top=0, min_position=1600, wait_ms=30000)
        learner, _ = reference([text(1000), text(600, 1)])
        assert np.array_equal(np.array(got["distribution"]), learner.predict_proba())
        call.close()


def test_drop_then_create_again(call, server):
    call.ok("create", stream="d", config=SMALL_BYTES)
    call.ok("publish", stream="d", symbols=b"some symbols")
    assert call.ok("drop", stream="d")["dropped"]
    assert call("predict", stream="d").code == P.NO_SUCH_STREAM
    assert call.ok("create", stream="d", config=SMALL_BYTES)["created"]
    assert call.ok("stats", stream="d")["accepted"] == 0


def test_snapshot_on_request_and_the_log_is_cut(call, server):
    call.ok("create", stream="s", config=SMALL_BYTES)
    call.ok("publish", stream="s", symbols=text(2000))
    assert call.ok("snapshot", stream="s")["position"] == 2000
    directory = Path(server.server.state_dir) / "streams" / "s"
    assert (directory / "snapshot").exists()
    assert [p.name for p in sorted(directory.glob("wal-*"))] == ["wal-00000000000000002000.log"]


def test_the_metrics_port_answers_probes_and_nothing_else(tmp_path):
    def get(path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{srv.metrics_port}{path}", timeout=10) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    with ThreadServer(tmp_path / "state", metrics_port="free") as srv:
        assert get("/healthz") == (200, "ok\n") and get("/readyz") == (200, "ok\n")
        assert get("/metrics")[0] == 200 and "seqd_streams" in get("/metrics")[1]
        for path in ("/", "/metricsx", "/health", "/readyz/x"):
            status, body = get(path)
            assert status == 404 and "/healthz" in body, path
        srv.server.health.stopping()  # what the loop says once a stop begins
        assert get("/readyz") == (503, "stopping\n") and get("/healthz") == (200, "ok\n")


def test_seqd_serve_tells_systemd_when_it_is_ready_and_when_it_stops(tmp_path, monkeypatch):
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(60)
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    try:
        proc = ProcessServer(tmp_path / "state")
        statuses = []
        while (message := sock.recv(4096)).startswith(b"STATUS="):  # how far the restore is, first
            statuses.append(message)
        assert statuses and statuses[-1] == b"STATUS=restoring: 0 of 0 streams"
        assert message == b"READY=1\nSTATUS=serving"  # sent before the first request was answered
        assert proc.terminate() == 0
        assert sock.recv(4096).startswith(b"STOPPING=1\n")
    finally:
        sock.close()


def test_the_metrics_endpoint_parses_and_counts_what_was_sent(tmp_path):
    with ThreadServer(tmp_path / "state", metrics_port="free", stream_labels=("m*",)) as srv:
        port = srv.metrics_port
        call = Caller(srv.api)
        call.ok("create", stream="m", config=SMALL_BYTES)
        call.ok("create", stream="unlabelled", config=SMALL_BYTES)
        call.ok("publish", stream="m", symbols=text(700))
        call.ok("publish", stream="unlabelled", symbols=text(300))
        call("publish", stream="m", symbols=b"x", position=0)  # a conflict
        call.ok("predict", stream="m", min_position=700, wait_ms=30000)
        call.ok("predict", stream="unlabelled", min_position=300, wait_ms=30000)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        call.close()
    samples = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    assert samples[("seqd_streams", ())] == 2
    assert samples[("seqd_symbols_accepted_total", ())] == 1000
    assert samples[("seqd_symbols_learned_total", ())] == 1000
    assert samples[("seqd_requests_total", (("kind", "publish"), ("outcome", "ok")))] == 2
    assert samples[("seqd_requests_total", (("kind", "publish"), ("outcome", "conflict")))] == 1
    assert samples[("seqd_request_duration_seconds_count", (("kind", "create"),))] == 2
    assert samples[("seqd_stream_symbols_learned_total", (("stream", "m"),))] == 700
    assert 0 < samples[("seqd_stream_code_length_per_symbol", (("stream", "m"),))] < 8
    (build,) = [labels for name, labels in samples if name == "seqd_build_info"]
    assert dict(build)["version"] == seqd.__version__ and dict(build)["byte_preset"] == DEFAULT.versions.preset
    assert not any(dict(labels).get("stream") == "unlabelled" for _, labels in samples)


def _state(call, name, position):
    return call.ok("predict", stream=name, top=0, min_position=position, wait_ms=60000)["distribution"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_restart_restores_every_stream_exactly(tmp_path, sig):
    """SIGTERM: snapshots; SIGKILL: the write-ahead log alone.  Either way, the same bits."""
    state = tmp_path / "state"
    data = {"a": [text(2000, 1), text(1500, 2)], "b": [text(1000, 3)]}
    srv = ProcessServer(state)
    call = Caller(srv.api)
    for name, batches in data.items():
        call.ok("create", stream=name, config=SMALL_BYTES)
        for batch in batches:
            call.ok("publish", stream=name, symbols=batch)
    if sig == signal.SIGTERM:
        _state(call, "a", 3500)  # let the learning go on during the stop too: nothing to wait for
    call.close()
    code = srv.terminate(sig)
    assert code == (0 if sig == signal.SIGTERM else -signal.SIGKILL), srv.stderr
    if sig == signal.SIGTERM:
        assert (state / "streams" / "a" / "snapshot").exists()
    srv = ProcessServer(state)
    call = Caller(srv.api)
    try:
        for name, batches in data.items():
            total = sum(len(b) for b in batches)
            learner, bits = reference(batches)
            assert np.array_equal(np.array(_state(call, name, total)), learner.predict_proba())
            stats = call.ok("stats", stream=name)
            assert stats["accepted"] == stats["position"] == total
            assert stats["code_bits"] == pytest.approx(bits, rel=1e-9)
        call.ok("publish", stream="b", symbols=b"more", position=1000)  # and it goes on
    finally:
        call.close()
        assert srv.terminate(signal.SIGTERM) == 0


def test_the_client_library_against_the_daemon(server):
    import asyncio
    import io

    from seqd.clients.aio import AsyncClient
    from seqd.clients.client import Client
    from seqd.clients.errors import ConflictError, NoSuchStreamError
    from seqd.cli import serve_demo as demo

    data = text(3000, 7)
    with Client(server.api, pub=server.pub, timeout=30) as client:
        with pytest.raises(NoSuchStreamError):
            client.predict("lib")
        client.create("lib", config=SMALL_BYTES)
        with client.subscribe("lib") as events:
            import time
            time.sleep(0.3)
            ack = client.publish("lib", data, position=0)
            assert ack.position == 3000
            event = events.recv(timeout=30)
        assert event.stream == "lib" and event.position == 3000
        with pytest.raises(ConflictError):
            client.publish("lib", b"x", position=0)
        pred = client.predict("lib", full=True, min_position=3000, wait=30)
        learner, bits = reference([data])
        assert np.array_equal(np.array(pred.distribution), learner.predict_proba())
        assert client.stats("lib").code_bits == pytest.approx(bits, rel=1e-12)

    async def async_side():
        async with AsyncClient(server.api, timeout=30) as client:
            ack = await client.publish("lib", b"more", position=3000)
            pred = await client.predict("lib", min_position=ack.position, wait=30)
            return pred.position

    assert asyncio.run(async_side()) == 3004

    out = io.StringIO()
    demo.run(server.api, None, threading.Event(), lines=15, out=out, first=True)  # as on a first run
    lines = out.getvalue().splitlines()
    assert any("the text is learned" in line for line in lines)
    compiling = next(k for k, line in enumerate(lines) if line.startswith("First run: compiling"))
    compiled = next(k for k, line in enumerate(lines) if "compiled in" in line)
    assert compiling < compiled < next(k for k, line in enumerate(lines) if "next symbol, as the daemon" in line)
    assert Caller(server.api).ok("stats", stream="demo")["position"] > 500


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread names are set with Linux's prctl")
def test_the_daemon_names_its_threads_for_the_operating_system(tmp_path):
    """``top -H`` and ``ps -L`` tell the I/O loop (and, as ``seqd serve``, the process) from the workers."""
    srv = ProcessServer(tmp_path / "state", metrics_port=free_port())
    try:
        names = {(task / "comm").read_text().strip() for task in Path(f"/proc/{srv.proc.pid}/task").iterdir()}
        assert (Path(f"/proc/{srv.proc.pid}/comm")).read_text().strip() == "seqd"
    finally:
        assert srv.terminate() == 0
    assert {"seqd", "seqd-worker-0", "seqd-worker-1", "seqd-sync", "seqd-namespace", "seqd-metrics"} <= names


def test_curve_admits_only_authorised_clients(tmp_path):
    import zmq.auth

    from seqd.clients.client import Client, CurveKeys
    from seqd.clients.errors import SeqdTimeout

    keys, allowed = tmp_path / "keys", tmp_path / "allowed"
    keys.mkdir()
    allowed.mkdir()
    server_public, server_secret = zmq.auth.create_certificates(keys, "server")
    client_public, client_secret = zmq.auth.create_certificates(keys, "client")
    _, stranger_secret = zmq.auth.create_certificates(keys, "stranger")
    (allowed / "client.key").write_bytes(Path(client_public).read_bytes())
    with ThreadServer(tmp_path / "state", curve_secret_key_file=server_secret,
                      curve_authorized_keys_dir=str(allowed)) as srv:
        with Client(srv.api, timeout=5, curve=CurveKeys.from_files(server_public, client_secret)) as client:
            assert client.ping().server == "seqd"
        with Client(srv.api, timeout=0.5, retries=0,
                    curve=CurveKeys.from_files(server_public, stranger_secret)) as stranger:
            with pytest.raises(SeqdTimeout):
                stranger.ping()
        with Client(srv.api, timeout=0.5, retries=0) as plain:
            with pytest.raises(SeqdTimeout):
                plain.ping()


def test_the_command_line_against_the_daemon(server, tmp_path, capsys):
    from seqd.cli import main

    log = tmp_path / "app.log"
    log.write_bytes(text(5000, 11))
    assert main(["publish", "app", str(log), "--api", server.api, "--batch", "1000"]) == 0
    out = capsys.readouterr().out
    learner, bits = reference([text(5000, 11)], config={})  # `seqd publish` creates the default byte model
    assert "published 5000 symbols to app; position 5000" in out
    assert f"learned: 5000 symbols at {bits / 5000:.4f} bits/symbol" in out
    assert main(["stats", "app", "--api", server.api]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["stream", "app"] and lines[1].split() == ["learned", "5000"]
    assert main(["predict", "app", "--api", server.api, "--top", "2"]) == 0
    assert "position 5000" in capsys.readouterr().out
    assert main(["stats", "--api", server.api]) == 0  # the daemon's own: its version is the package's
    assert ["version", metadata.version("seqd")] in [line.split() for line in capsys.readouterr().out.splitlines()]


def test_one_daemon_per_state_directory_and_clear_start_errors(tmp_path):
    from seqd.daemon.config import ServeConfig
    from seqd.daemon.server import Server

    def config(**kw):
        return ServeConfig(**dict(dict(state_dir=str(tmp_path / "state"), api="tcp://127.0.0.1:*",
                                       pub="tcp://127.0.0.1:*", metrics_port=0), **kw))

    with ThreadServer(tmp_path / "state") as srv:
        with pytest.raises(ValueError, match="in use by another seqd"):
            Server(config()).start()
        taken = srv.api
        with pytest.raises(ValueError, match="cannot bind the API socket"):
            Server(config(state_dir=str(tmp_path / "other"), api=taken)).start()
    port = free_port()
    import socket
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        with pytest.raises(ValueError, match="cannot serve metrics"):
            Server(config(metrics_port=port)).start()
    with ThreadServer(tmp_path / "state"):  # every failed start released the directory
        pass


def test_workers_survive_a_full_wake_up_pipe_while_the_loop_stalls(tmp_path, monkeypatch, gate):
    """Thousands of small batches learned while the I/O loop is busy: no worker dies, nothing stalls."""
    import time

    from seqd.daemon.completions import Completions

    stall = {"on": False}
    tick = Completions.tick

    def slow_tick(self, now):
        if stall["on"]:
            stall["on"] = False
            gate.set()
            time.sleep(1.0)  # the loop busy while the workers report thousands of batches
        return tick(self, now)

    monkeypatch.setattr(Completions, "tick", slow_tick)
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        names = ["a", "b", "c"]
        for name in names:
            call.ok("create", stream=name, preset="glnn", config={"units": 2, "degree": 1, "alphabet_cap": 4})
        for i in range(4500):
            call.sock.send(P.encode_request(P.Request(id=10_000 + i, op="publish", stream=names[i % 3],
                                                      symbols=[i % 4])))
        assert all(call.reply().ok for _ in range(4500))
        stall["on"] = True
        for name in names:
            assert call.ok("predict", stream=name, min_position=1500, wait_ms=60_000)["position"] == 1500
        assert all(t.is_alive() for t in srv.server._workers)
        call.close()


def test_drop_and_create_again_while_work_is_in_flight(tmp_path, gate):
    """The dropped stream's last batch, snapshot and snapshot requests never reach the new stream."""
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        call.ok("create", stream="x", config=SMALL_BYTES)
        call.ok("publish", stream="x", symbols=text(3000))
        for rid in (500, 501):
            call.raw(P.encode_request(P.Request(id=rid, op="snapshot", stream="x")))
        call.raw(P.encode_request(P.Request(id=502, op="drop", stream="x")))
        replies = sorted((r.id, r.code) for r in (call.reply(), call.reply(), call.reply()))
        assert replies == [(500, P.NO_SUCH_STREAM), (501, P.NO_SUCH_STREAM), (502, None)]
        call.ok("create", stream="x", config=SMALL_BYTES)
        gate.set()
        assert call("predict", stream="x", min_position=1, wait_ms=500).code == P.TIMEOUT
        assert call.ok("stats", stream="x")["position"] == 0
        call.ok("publish", stream="x", symbols=b"fresh")
        assert call.ok("snapshot", stream="x")["position"] == 5
        call.close()
    with ThreadServer(tmp_path / "state") as srv:  # restored: the new stream, not the dropped one
        call = Caller(srv.api)
        learner, _ = reference([b"fresh"])
        got = call.ok("predict", stream="x", top=0)
        assert got["position"] == 5 and np.array_equal(np.array(got["distribution"]), learner.predict_proba())
        call.close()


def test_waiting_predicts_are_bounded(tmp_path, monkeypatch):
    from seqd.daemon import waiters as waiters_module

    monkeypatch.setattr(waiters_module, "MAX_WAITERS", 3)
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        call.ok("create", stream="w", config=SMALL_BYTES)
        for rid in range(3):
            call.raw(P.encode_request(P.Request(id=100 + rid, op="predict", stream="w", min_position=9, wait_ms=300)))
        assert call("predict", stream="w", min_position=9, wait_ms=300).code == P.LIMIT
        assert sorted(call.reply().code for _ in range(3)) == [P.TIMEOUT] * 3
        assert call("predict", stream="w", min_position=9, wait_ms=10).code == P.TIMEOUT  # room again
        call.close()


def test_a_client_that_leaves_does_not_keep_its_places_among_the_waiting_predicts(tmp_path, monkeypatch):
    # a client sends predicts that would wait an hour and disconnects: they must not refuse everyone else
    from seqd.daemon import waiters as waiters_module

    monkeypatch.setattr(waiters_module, "MAX_WAITERS", 3)
    monkeypatch.setattr(waiters_module, "MAX_WAITERS_PER_CLIENT", 2)
    with ThreadServer(tmp_path / "state") as srv:
        call, leaver, other = Caller(srv.api), Caller(srv.api), Caller(srv.api)
        call.ok("create", stream="w", config=SMALL_BYTES)
        hour = dict(op="predict", stream="w", min_position=2**62, wait_ms=3_600_000)
        for rid in (1, 2):
            leaver.raw(P.encode_request(P.Request(id=rid, **hour)))
        refused = leaver("predict", stream="w", min_position=2**62, wait_ms=3_600_000)
        assert refused.code == P.LIMIT and "this client has 2" in refused.message  # the per-client cap
        other.raw(P.encode_request(P.Request(id=7, **hour)))  # the third place
        assert other.ok("ping")  # answered after the predict before it on the same connection: it waits now
        reply = call("predict", stream="w", min_position=9, wait_ms=10_000)
        assert reply.code == P.LIMIT and "3 predicts are already waiting" in reply.message
        leaver.close()  # gone, without a word: its two places come free
        deadline = time.monotonic() + 10
        while True:
            reply = call("predict", stream="w", min_position=9, wait_ms=50)
            if reply.code == P.TIMEOUT:  # it waited its 50 ms: there was a place
                break
            assert reply.code == P.LIMIT and time.monotonic() < deadline, "the leaver's places stayed taken"
            time.sleep(0.05)
        call.ok("publish", stream="w", symbols=b"x" * 9)
        assert call("predict", stream="w", min_position=9, wait_ms=10_000).ok
        call.close(), other.close()


def test_the_state_directory_is_private_whatever_the_umask(tmp_path):
    # the logs hold the raw published data: under the common umask 022 nothing may be readable by others
    old = os.umask(0o022)
    try:
        with ThreadServer(tmp_path / "deep" / "state") as srv:
            call = Caller(srv.api)
            call.ok("create", stream="s", config=SMALL_BYTES)
            call.ok("create", stream="gone", config=SMALL_BYTES)
            call.ok("publish", stream="s", symbols=b"password=hunter2\n" * 50)
            call.ok("snapshot", stream="s")
            call.ok("drop", stream="gone")
            call.close()
    finally:
        os.umask(old)
    state = tmp_path / "deep" / "state"
    paths = [state, *state.rglob("*")]
    assert any(p.name == "snapshot" for p in paths) and any(p.suffix == ".log" or "log" in p.name for p in paths)
    opened = {str(p.relative_to(tmp_path)): oct(p.stat().st_mode & 0o777) for p in paths if p.stat().st_mode & 0o077}
    assert not opened, opened


def test_oversized_models_are_refused_and_a_refused_create_leaves_nothing(call, server):
    reply = call("create", stream="huge", preset="glnn", config={"units": 100_000})
    assert reply.code == P.BAD_CONFIG and "above what this daemon serves" in reply.message
    assert not any(Path(server.server.state_dir, "streams").iterdir())


def test_a_snapshot_request_covers_everything_accepted_before_it(tmp_path, gate):
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        call.ok("create", stream="s", config=SMALL_BYTES)
        call.ok("publish", stream="s", symbols=text(1000))
        call.raw(P.encode_request(P.Request(id=900, op="snapshot", stream="s")))
        call.raw(P.encode_request(P.Request(id=901, op="snapshot", stream="s")))  # joins 900: nothing in between
        call.ok("publish", stream="s", symbols=text(500, 1))
        call.raw(P.encode_request(P.Request(id=902, op="snapshot", stream="s")))  # must not join 900
        gate.set()
        got = {r.id: r.result["position"] for r in (call.reply(), call.reply(), call.reply())}
        assert got == {900: 1000, 901: 1000, 902: 1500}
        call.close()


def test_expired_waiters_are_forgotten(server, call):
    call.ok("create", stream="idle", config=SMALL_BYTES)
    for _ in range(50):
        assert call("predict", stream="idle", min_position=1, wait_ms=1).code == P.TIMEOUT
    assert len(server.server.waiters) == 0 and not server.server.waiters.waiting_for("idle")


def test_a_snapshot_write_that_fails_leaves_no_partial_file(tmp_path, monkeypatch):
    """Disk full halfway through a snapshot of tens of megabytes: the error goes up, the part written goes."""
    calls = []

    def write_all(fd, data, offset):
        calls.append(offset)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(fd, data, offset)
    real = snapshot_file.wal.write_all
    monkeypatch.setattr(snapshot_file.wal, "write_all", write_all)
    target = tmp_path / "snapshot.tmp"
    with pytest.raises(OSError, match="No space"):
        snapshot_file.write_durably(target, b"head", b"x" * 1000, b"tail")
    assert not target.exists()


def test_periodic_snapshots_come_after_a_phase_of_their_own(tmp_path):
    """Each stream is snapshotted ``snapshot_interval_seconds`` after the last time, the first time later
    by a phase of its own: streams created together do not all write their snapshots in the same instant.

    Only "never early" is exact: the clock read before a create is no later than the stream's own start, and
    the file is seen no earlier than it is written.  How late a loaded machine lets the loop come is not a
    property of the code, so the upper bound is only "it comes"."""
    import time
    import zlib
    interval, names = 2.0, ["a", "b", "c", "d"]
    phase = {n: zlib.crc32(n.encode()) / 2**32 for n in names}
    assert len({round(p, 2) for p in phase.values()}) == len(names)  # the names do spread
    with ThreadServer(tmp_path / "state", snapshot_interval_seconds=interval) as srv:
        caller = Caller(srv.api)
        before = {}
        for n in names:
            before[n] = time.monotonic()
            caller.ok("create", stream=n, config=SMALL_BYTES)
            caller.ok("publish", stream=n, symbols=b"abc")
        seen: dict[str, float] = {}
        deadline = time.monotonic() + 2 * interval + 60.0
        while len(seen) < len(names) and time.monotonic() < deadline:
            for n in names:
                if n not in seen and (tmp_path / "state" / "streams" / n / "snapshot").exists():
                    seen[n] = time.monotonic()
            time.sleep(0.02)
        caller.close()
    assert set(seen) == set(names)
    for n in names:  # due at its start + interval × (1 + phase), never before
        assert seen[n] - before[n] >= interval * (1 + phase[n]), n


@pytest.fixture
def held_creates(monkeypatch):
    """Stream creation (files and fsyncs, in the namespace thread) waits for ``held_creates.set()``."""
    opened = threading.Event()
    create = streams_module.Stream.create.__func__

    def held(cls, *args, **kwargs):
        opened.wait(30)
        return create(cls, *args, **kwargs)

    monkeypatch.setattr(streams_module.Stream, "create", classmethod(held))
    return opened


def test_creating_a_stream_holds_up_nothing_else(tmp_path, held_creates):
    """A create waits for its disk in a thread of its own: the loop answers every other stream meanwhile,
    requests naming the stream being created are told to retry, and the create's answer follows."""
    held_creates.set()
    with ThreadServer(tmp_path / "state", max_streams=3) as srv:
        call = Caller(srv.api)
        call.ok("create", stream="old", config=SMALL_BYTES)
        call.ok("publish", stream="old", symbols=b"abcabc")
        held_creates.clear()
        try:  # on one socket, requests arrive in order: the create is under way before the others
            call.raw(P.encode_request(P.Request(id=1000, op="create", stream="new", config=SMALL_BYTES)))
            for op, fields in [("predict", {}), ("stats", {}), ("drop", {}), ("publish", {"symbols": b"x"}),
                               ("create", {"config": SMALL_BYTES}), ("create", {"exist_ok": True})]:
                reply = call(op, stream="new", **fields)
                assert reply.code == P.BUSY and reply.retry_after_ms, (op, reply)
            assert call.ok("predict", stream="old", min_position=6, wait_ms=30000)["position"] == 6
            call.raw(P.encode_request(P.Request(id=1001, op="create", stream="third", config=SMALL_BYTES)))
            assert call("create", stream="fourth").code == P.LIMIT  # "new" and "third" count against the limit
        finally:
            held_creates.set()
        new, third = sorted((call.reply(), call.reply()), key=lambda r: r.id)
        assert (new.id, third.id) == (1000, 1001) and new.result["created"] and third.result["created"]
        assert call.ok("publish", stream="new", symbols=b"x")["position"] == 1
        assert call.ok("stats")["streams"] == ["new", "old", "third"]
        call.close()


def test_max_state_bytes_refuses_a_stream_only_while_the_learners_in_memory_are_at_work(tmp_path, gate):
    # one learner fits max_state_bytes: an idle one hibernates to make room, a busy one does not
    # (small GLNN byte-model streams: their full size fits a budget of one and a half, as the bitwise model's does not)
    size = resident_bytes(make_config(GLNN_BYTES, SMALL_GLNN))  # what the budget counts of a new stream
    with ThreadServer(tmp_path / "state", max_state_bytes=size * 3 // 2) as srv:
        call = Caller(srv.api)
        call.ok("create", stream="a", preset=GLNN_BYTES, config=SMALL_GLNN)
        call.ok("publish", stream="a", symbols=text(500))  # held at the gate: "a" is at work, it cannot hibernate
        reply = call("create", stream="b", preset=GLNN_BYTES, config=SMALL_GLNN)
        assert reply.code == P.LIMIT and "max_state_bytes" in reply.message and "at work" in reply.message
        gate.set()
        call.ok("predict", stream="a", min_position=500, wait_ms=30000)
        assert sorted(p.name for p in (tmp_path / "state" / "streams").iterdir()) == ["a"]
        assert call.ok("create", stream="b", preset=GLNN_BYTES, config=SMALL_GLNN)["created"]  # "a" is idle now
        assert call.ok("stats")["streams"] == ["a", "b"]
        call.close()


@pytest.mark.parametrize("where", ["before the folder is in place", "in its first log segment"])
def test_a_create_that_fails_on_disk_is_answered_and_frees_the_name(tmp_path, monkeypatch, where):
    failures = [OSError(28, "No space left on device")]
    if where == "before the folder is in place":
        target, name = streams_module.Stream, "create"
        original = streams_module.Stream.create.__func__

        def flaky(cls, *args, **kwargs):
            if failures:
                raise failures.pop()
            return original(cls, *args, **kwargs)
        flaky = classmethod(flaky)
    else:
        target, name = streams_module.wal.WriteAheadLog, "_open_segment"
        original = streams_module.wal.WriteAheadLog._open_segment

        def flaky(self):
            if failures:
                raise failures.pop()
            return original(self)
    monkeypatch.setattr(target, name, flaky)
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        reply = call("create", stream="s", config=SMALL_BYTES)
        assert reply.code == P.INTERNAL and "No space left" in reply.message
        assert call("predict", stream="s").code == P.NO_SUCH_STREAM
        assert not list((tmp_path / "state" / "streams").iterdir())  # nothing claims the name, now or at restart
        assert call.ok("create", stream="s", config=SMALL_BYTES)["created"] is True
        call.close()


def test_a_publish_that_creates_its_stream_is_answered_once_the_stream_is_there(tmp_path):
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        assert call.ok("publish", stream="new", symbols=b"abc", create=True)["position"] == 3
        assert call.ok("predict", stream="new", min_position=3, wait_ms=30000)["position"] == 3
        assert call.ok("stats")["streams"] == ["new"]
        call.close()


def _snapshotted_stream(state_dir: Path, symbols: bytes, preset: str = "bytes", config=SMALL_BYTES) -> dict:
    """A daemon that learns ``symbols`` as stream "s" and stops (writing its snapshot); the stream's stats."""
    with ThreadServer(state_dir) as srv:
        call = Caller(srv.api)
        call.ok("create", stream="s", preset=preset, config=config)
        call.ok("publish", stream="s", symbols=symbols)
        call.ok("predict", stream="s", min_position=len(symbols), wait_ms=30000)
        stats = call.ok("stats", stream="s")
        call.close()
    return stats


def test_a_restart_clears_snapshots_cut_short(tmp_path):
    """Each snapshot is written under a name of its own, then renamed: one a crash cut short is swept at start."""
    _snapshotted_stream(tmp_path / "state", b"abcabc")
    folder = tmp_path / "state" / "streams" / "s"
    (folder / "snapshot.0123abcd.tmp").write_bytes(b"half a snapshot")
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        assert call.ok("stats", stream="s")["position"] == 6
        call.close()
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("snapshot")) == ["snapshot"]


def test_a_drop_is_answered_once_it_survives_a_power_loss(tmp_path, monkeypatch):
    """The folder's move to the trash is made durable (an fsync of the streams' folder, off the I/O loop)
    before the drop is answered; if that fails, the answer says so."""
    synced, fail = [], []
    real = streams_module.wal.fsync_path

    def fsync_path(path):
        if fail and Path(path).name == "streams":
            raise OSError(5, "Input/output error")
        synced.append(Path(path).name)
        real(path)
    monkeypatch.setattr(streams_module.wal, "fsync_path", fsync_path)
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        for name in ("a", "b"):
            call.ok("create", stream=name, config=SMALL_BYTES)
        synced.clear()
        assert call.ok("drop", stream="a")["dropped"] is True
        assert "streams" in synced
        fail.append(True)
        reply = call("drop", stream="b")
        assert reply.code == P.INTERNAL and "may come back" in reply.message
        assert call.ok("stats")["streams"] == []
        call.close()


def test_a_stream_whose_log_failed_can_be_dropped(tmp_path, monkeypatch):
    """A failed fsync leaves the log raising on every later sync; dropping that stream still works whole."""
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        call.ok("create", stream="bad", config=SMALL_BYTES)
        call.ok("create", stream="good", config=SMALL_BYTES)
        stream = srv.server.streams["bad"]
        stream.log._sync_error = OSError(5, "Input/output error")  # as after a failed fsync
        assert call.ok("drop", stream="bad")["dropped"] is True
        assert call.ok("stats")["streams"] == ["good"]
        assert stream.log._fd == -1  # its descriptor closed all the same
        call.close()


@pytest.mark.parametrize("version", [1, 2, 3])
def test_snapshots_of_earlier_versions_are_still_read(tmp_path, version):
    """Version 4 stores the learner's non-zero words; version 3 deflated it whole, version 2 kept it as it is,
    and version 1 also had the recent code lengths as JSON numbers (slow to write with the GIL held); a
    daemon restores any of them, to the same
    statistics and the same learner (a GLNN byte model's: the only one streams held before version 4)."""
    before = _snapshotted_stream(tmp_path / "state", text(3000), GLNN_BYTES, SMALL_GLNN)
    snapshot_as_version(tmp_path / "state" / "streams" / "s" / "snapshot", version)
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        after = call.ok("stats", stream="s")
        predicted = call.ok("predict", stream="s", top=0)["distribution"]
        call.close()
    for key in ("position", "bits_per_symbol", "recent_bits_per_symbol", "code_bits"):
        assert after[key] == before[key], key
    learner_after, _ = reference([text(3000)], GLNN_BYTES, SMALL_GLNN)
    assert np.array_equal(np.array(predicted), learner_after.predict_proba())


def test_a_snapshot_holds_its_learner_deflated_and_a_damaged_one_is_refused(tmp_path):
    before = _snapshotted_stream(tmp_path / "state", text(3000), GLNN_BYTES, SMALL_GLNN)  # tables of mostly zeros
    snap = tmp_path / "state" / "streams" / "s" / "snapshot"
    data = bytearray(snap.read_bytes())
    assert len(data) < before["state_bytes"] / 8  # the tables' zeros take next to nothing
    data[len(data) // 2] ^= 0xFF  # a bit flipped inside the deflated learner
    snap.write_bytes(bytes(data))
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        reply = call("stats", stream="s")
        assert reply.code == P.INTERNAL and "could not be restored" in reply.message
        assert "damaged" in reply.message or "cut short" in reply.message, reply.message
        call.close()
    assert snap.read_bytes() == bytes(data)  # left as it is


def test_a_snapshot_of_an_unknown_version_is_named_and_left_alone(tmp_path):
    _snapshotted_stream(tmp_path / "state", b"abcabc")
    snap = tmp_path / "state" / "streams" / "s" / "snapshot"
    data = bytearray(snap.read_bytes())
    data[7] = 5  # SEQDSNP\x05, from a newer seqd
    snap.write_bytes(bytes(data))
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        reply = call("stats", stream="s")
        assert reply.code == P.INTERNAL and "version 5" in reply.message and "reads versions 1, 2, 3 and 4" in reply.message
        call.close()
    assert snap.read_bytes() == bytes(data)  # left as it is


def _with_learner(tmp_path, payload: bytes, version: int = 4) -> None:
    """A stream's snapshot written, then its learner replaced by ``payload`` (its statistics kept), under the
    header of snapshot format ``version`` (4: the learner's non-zero words; 3: the learner deflated whole)."""
    import struct
    _snapshotted_stream(tmp_path / "state", text(1000), GLNN_BYTES, SMALL_GLNN)  # (version 3 held GLNN learners)
    snap = tmp_path / "state" / "streams" / "s" / "snapshot"
    data = bytearray(snap.read_bytes())
    head = struct.Struct("<8sQII")
    _, _, size, _ = head.unpack_from(data)
    data[7] = version
    snap.write_bytes(bytes(data[:head.size + size]) + payload)


def _sparse(learner: bytes) -> bytes:
    return b"".join(sparse.encoded([learner]))


def _restore_refusal(tmp_path) -> str:
    """What a restarted daemon says of stream "s"."""
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        reply = call("stats", stream="s")
        call.close()
    assert reply.code == P.INTERNAL
    return reply.message


@pytest.mark.parametrize("version", [3, 4])
def test_a_snapshot_that_inflates_to_no_learner_is_refused_as_it_is_read(tmp_path, version):
    import zlib
    zeros = bytes(1 << 28) if version == 3 else bytes(1 << 20)  # (version 4 says its length first: it must fit)
    _with_learner(tmp_path, zlib.compress(zeros, 9) if version == 3 else _sparse(zeros), version)
    assert "wrong magic" in _restore_refusal(tmp_path)  # refused as it is read: what it inflates to is no learner


@pytest.mark.parametrize("version", [3, 4])
def test_a_snapshot_is_refused_before_its_arrays_are_allocated_when_they_exceed_its_configuration(tmp_path, version):
    import zlib
    # a learner of 32 units in the snapshot of a stream whose stream.json says 4: larger than it may be
    big = learner_for(make_config(GLNN_BYTES, dict(SMALL_GLNN, units=32))).to_bytes()
    _with_learner(tmp_path, zlib.compress(big, 1) if version == 3 else _sparse(big), version)
    message = _restore_refusal(tmp_path)
    assert "its configuration holds" in message, message
