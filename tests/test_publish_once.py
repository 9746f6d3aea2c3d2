"""Every publish of a run sent twice, as after a timeout, and each batch learned once.

A publisher that gets no reply sends its batch again, with the batch id it
chose (``batch`` in the protocol); the daemon acknowledges the repeat at
the first one's position and appends nothing (``daemon/batch_ids.py``).  The
repeats here come at once (overtaking the first one's fsync), a few batches
later, and after a restart, when the ids come back from the snapshot and the
log.  The stream must end exactly as a learner fed each batch once.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from seqd.clients import protocol as P
from seqd.core.learners import learner_for
from seqd.daemon.models import make_config

sys.path.insert(0, os.path.dirname(__file__))
from daemon_harness import SMALL_BYTES, Caller, ThreadServer  # noqa: E402


def batches(n: int, seed: int = 3) -> list[bytes]:
    rng = np.random.default_rng(seed)
    words = [b"GET /a 200\n", b"POST /b 500 ", b"user=7 ", b"ok ", b"time=0.01\n"]
    return [b"".join(words[i] for i in rng.integers(0, len(words), rng.integers(1, 40))) for _ in range(n)]


def publish(call: Caller, batch_id: bytes, symbols: bytes, *, twice: bool) -> int:
    """Publish, the first copy's reply ignored when ``twice`` (a timeout); retried while the daemon says the
    batch is being written; returns the acknowledged position."""
    if twice:
        call.raw(P.encode_request(P.Request(id=10 ** 9 + len(symbols), op="publish", stream="s", symbols=symbols,
                                            batch=batch_id)))
    while True:
        reply = call("publish", stream="s", symbols=symbols, batch=batch_id)
        if reply.ok:
            return reply.result["position"]
        assert reply.code == P.BUSY, (reply.code, reply.message)
        time.sleep(reply.retry_after_ms / 1000)


def test_every_publish_sent_twice_is_learned_once(tmp_path):
    data = batches(80)
    ids = [os.urandom(16) for _ in data]
    acked = {}
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        call.ok("create", stream="s", config=SMALL_BYTES)
        for k in range(50):
            acked[k] = publish(call, ids[k], data[k], twice=True)
            if k >= 5:  # and one from a few batches back, as a retry that took long
                assert publish(call, ids[k - 5], data[k - 5], twice=False) == acked[k - 5]
        call.close()
    with ThreadServer(tmp_path / "state") as srv:  # restarted: the ids come back from the snapshot
        call = Caller(srv.api)
        for k in range(50):
            assert publish(call, ids[k], data[k], twice=False) == acked[k], k
        for k in range(50, 80):
            acked[k] = publish(call, ids[k], data[k], twice=True)
        total = sum(map(len, data))
        assert acked[79] == total and call.ok("stats", stream="s")["accepted"] == total
        learned = call.ok("predict", stream="s", top=0, min_position=total, wait_ms=60000)
        call.close()
    reference = learner_for(make_config("bytes", SMALL_BYTES))
    for symbols in data:
        reference.learn(np.frombuffer(symbols, dtype=np.uint8).astype(np.int64))
    assert learned["position"] == total
    assert np.array_equal(np.array(learned["distribution"]), reference.predict_proba())


def test_the_ids_in_the_log_survive_a_crash(tmp_path):
    """A crash image (the directory copied while the daemon runs): the ids of the batches after the snapshot
    come back from their log records."""
    import shutil
    data = batches(12, seed=9)
    ids = [os.urandom(16) for _ in data]
    with ThreadServer(tmp_path / "state") as srv:
        call = Caller(srv.api)
        call.ok("create", stream="s", config=SMALL_BYTES)
        acked = [publish(call, i, d, twice=False) for i, d in zip(ids, data)]
        call.ok("predict", stream="s", min_position=acked[-1], wait_ms=60000)
        shutil.copytree(tmp_path / "state", tmp_path / "image")
        call.close()
    (tmp_path / "image" / "lock").unlink()
    with ThreadServer(tmp_path / "image") as srv:
        call = Caller(srv.api)
        assert [publish(call, i, d, twice=False) for i, d in zip(ids, data)] == acked
        assert call.ok("stats", stream="s")["accepted"] == acked[-1]
        call.close()
