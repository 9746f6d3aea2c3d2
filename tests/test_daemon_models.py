"""A stream of each model the daemon serves besides seed 000's GLNN alone (``core/learners.py``: the default byte
model with tables that grow, the GLNN byte model bytes-12, ctw, esn, lstm, gru, scornn, enrnn, rehearsal): created by
its preset, restored bit for bit after a stop (its snapshot) and after a kill (its log), woken bit for bit from
hibernation, and refused clearly when a request asks for too much."""

from __future__ import annotations

import dataclasses
import json
import signal

import numpy as np
import pytest

from seqd.core.learners import learner_for
from seqd.daemon.models import make_config
from seqd.daemon.streams import Stream

from daemon_harness import Caller, ProcessServer
from test_daemon import text
from test_hibernation import drain, feed, sleep
from test_completions import Loop, answers
from seqd.daemon.budget import STREAM_BYTES
from seqd.daemon.reports import Created

# each model small, as its stream would be created: (preset, settings)
MODELS = {
    # the default byte model, its tables growing and its history in a history file beside its snapshot
    "bytes": ("bytes", {"table_bits": 14, "history_bits": 16, "match_bits": 12, "number_bits": 12}),
    "bytes-12": ("bytes-12", {"context_bits": 10, "history_bits": 12, "match_bits": 10, "units": 4}),  # the GLNN's
    "ctw": ("ctw", {"depth": 6, "node_bits": 12}),
    "esn": ("esn", {"units": 24, "connections": 4}),
    "lstm": ("lstm", {"cells": 10, "layers": 2, "horizon": 7, "clip": 5.0}),
    "gru": ("gru", {"cells": 10, "horizon": 5}),
    "scornn": ("scornn", {"units": 10, "horizon": 6}),
    "enrnn": ("enrnn", {"units": 10, "short": 4, "horizon": 6, "learning_rate": 0.2}),
    # blocks of 256 bytes: the networks drawn from the first, rehearsals every 128 bytes, the ring wrapping
    "rehearsal": ("rehearsal", {"alphabet_cap": 256, "units": 3, "degree": 2, "groups": 2, "block": 256, "blocks": 2,
                                "rehearsals": 2}),
}

MODEL_OF = {"bytes": "bitwise", "bytes-12": "glnn", "ctw": "ctw", "esn": "esn", "lstm": "lstm", "gru": "lstm",
            "scornn": "scornn", "enrnn": "scornn", "rehearsal": "rehearsal"}


def reference(preset: str, settings: dict, batches) -> tuple[object, float]:
    learner = learner_for(make_config(preset, settings))
    return learner, sum(float(learner.learn(b).sum()) for b in batches)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_every_model_is_restored_exactly(tmp_path, sig):
    """SIGTERM: each stream's snapshot; SIGKILL: its write-ahead log alone.  Either way the same bits as a learner
    that read the same batches, and the stream goes on."""
    state = tmp_path / "state"
    batches = [text(700, 1), text(500, 2)]
    srv = ProcessServer(state)
    call = Caller(srv.api)
    try:
        for name, (preset, settings) in MODELS.items():
            reply = call.ok("create", stream=name, preset=preset, config=settings)
            assert reply["config"] == json.loads(json.dumps(reply["config"]))  # every setting, as JSON holds it
            for batch in batches:
                call.ok("publish", stream=name, symbols=batch)
        for name in MODELS:
            call.ok("predict", stream=name, top=0, min_position=1200, wait_ms=60000)
        if sig == signal.SIGTERM:
            call.ok("snapshot", stream="lstm")
    finally:
        call.close()
    assert srv.terminate(sig) == (0 if sig == signal.SIGTERM else -signal.SIGKILL), srv.stderr
    for name, (preset, _) in MODELS.items():
        meta = json.loads((state / "streams" / name / "stream.json").read_text())
        assert meta["model"] == MODEL_OF[preset]
        assert (state / "streams" / name / "snapshot").exists() == (sig == signal.SIGTERM)
    srv = ProcessServer(state)
    call = Caller(srv.api)
    try:
        for name, (preset, settings) in MODELS.items():
            learner, bits = reference(preset, settings, batches)
            got = call.ok("predict", stream=name, top=0, min_position=1200, wait_ms=60000)["distribution"]
            assert np.array_equal(np.array(got), learner.predict_proba()), name
            stats = call.ok("stats", stream=name)
            assert stats["position"] == 1200 and stats["model"] == MODEL_OF[preset]
            assert stats["code_bits"] == pytest.approx(bits, rel=1e-9)
            call.ok("publish", stream=name, symbols=b"more", position=1200)  # and it goes on
    finally:
        call.close()
        assert srv.terminate(signal.SIGTERM) == 0


def limit(loop: Loop, max_state_bytes: int) -> None:
    config = dataclasses.replace(loop.config, max_state_bytes=max_state_bytes)
    loop.config = loop.completions.config = loop.requests.config = config
    loop.requests.budget.limit = max_state_bytes


@pytest.fixture
def loop(tmp_path):
    lp = Loop(tmp_path, fsync=False, hibernate_after_seconds=0)
    yield lp
    lp.close()


@pytest.mark.parametrize("name", list(MODELS))
def test_a_hibernated_learner_of_every_model_wakes_and_continues_bit_for_bit(loop, name):
    preset, settings = MODELS[name]
    (job,) = loop("create", stream=name, preset=preset, config=settings).jobs
    stream = Stream.create(name, loop.state.streams, job.config, fsync=False)
    out = loop.completions.report(Created(name, stream))
    assert answers(out) == [("ok", "create")]
    drain(loop, out)
    feed(loop, name, text(600, 3))
    stream.last_active = 0.0
    limit(loop, STREAM_BYTES + stream.learner_bytes // 2)  # no room for its learner: it hibernates
    assert sleep(loop, 100.0) == [name] and not stream.resident
    limit(loop, STREAM_BYTES + 2 * stream.learner_bytes)
    feed(loop, name, text(400, 4))
    assert stream.resident
    learner, bits = reference(preset, settings, [text(600, 3), text(400, 4)])
    assert np.array_equal(stream.learner.predict_proba(), learner.predict_proba())
    assert stream.code_bits == pytest.approx(bits, rel=1e-12)


@pytest.mark.parametrize("preset, settings, message", [
    ("lstm", {"cells": 600}, "cells = 600 is above what this daemon serves"),
    ("esn", {"units": 4096}, "units = 4096 is above what this daemon serves"),
    ("ctw", {"node_bits": 23, "alphabet_cap": 4}, "node_bits = 23 is above"),
    ("gru", {"units": 8}, "unknown model setting.s. units for the gru preset"),
    ("lstm", {"cells": 0}, "cells must be in"),
    ("rnn", {}, "unknown preset 'rnn'"),
    ("rehearsal", {"units": 40, "degree": 4}, "units = 40 is above what this daemon serves"),
    ("rehearsal", {"alphabet_cap": 256, "block": 1 << 17}, "a rehearsal over blocks of 131,072 symbols of 256 would "
                                                           "take 578 MiB, more than this daemon gives one"),
])
def test_a_model_asked_beyond_what_is_served_is_refused_clearly(preset, settings, message):
    with pytest.raises(ValueError, match=message):
        make_config(preset, settings)


def test_the_clients_know_the_daemons_presets():
    """The client side names the presets without importing the models (``clients/protocol.py``)."""
    from seqd.clients.protocol import PRESETS
    from seqd.core.learners import PRESETS as SERVED

    assert PRESETS == tuple(SERVED)


def test_a_costly_model_learns_in_small_pieces_and_a_too_costly_one_is_refused():
    """A worker yields after about a second of one stream's work: fewer symbols at a time for an LSTM than the
    GLNN's 65,536; a model whose single symbol would cost more than the daemon serves is refused."""
    from seqd.daemon.models import CHUNK, MAX_WORK_PER_SYMBOL, chunk_for

    assert chunk_for(make_config("bytes", None)) == chunk_for(make_config("ctw", None)) == CHUNK
    small, large = chunk_for(make_config("lstm", None)), chunk_for(make_config("lstm", {"layers": 3}))
    assert 16 <= large < small < CHUNK
    with pytest.raises(ValueError, match="multiply-adds on a symbol, more than this daemon serves"):
        make_config("lstm", {"cells": 512, "layers": 4, "alphabet_cap": 65536})
    assert MAX_WORK_PER_SYMBOL >= 1 << 20


def test_a_long_batch_of_a_costly_model_is_learned_in_pieces_with_the_same_bits(loop):
    """The pieces change nothing: the bits are a learner's that read the batch whole."""
    name, (preset, settings) = "lstm", MODELS["lstm"]
    (job,) = loop("create", stream=name, preset=preset, config=settings).jobs
    stream = Stream.create(name, loop.state.streams, job.config, fsync=False)
    drain(loop, loop.completions.report(Created(name, stream)))
    stream.chunk = 97  # pieces of 97 symbols
    reports = feed(loop, name, text(1000, 6))
    assert sum(1 for r in reports if type(r).__name__ == "Learned") == -(-1000 // 97)
    learner, bits = reference(preset, settings, [text(1000, 6)])
    assert np.array_equal(stream.learner.predict_proba(), learner.predict_proba())
    assert stream.code_bits == pytest.approx(bits, rel=1e-12)
