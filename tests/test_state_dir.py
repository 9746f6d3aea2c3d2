"""A hostile state directory: whatever one stream's files hold, the daemon starts, that stream is refused (or
repaired, or loses only a torn write, said in its log line), and every other stream comes back bit for bit.

A crash image of a running daemon is made once (:func:`pristine`): streams of
several models and snapshot versions, each with batches in its log after its
snapshot, one never snapshotted.  Each case copies one victim stream and a
sentinel stream, damages one file of the victim (bit flips, truncations,
zero-filled tails, crafted contents with valid checksums, hostile settings,
deleted or extra files), and restores the directory as ``Server.start``
does (:class:`~seqd.daemon.requests.Requests`, without sockets).  The
promise held in every case:

* the restore completes, and the sentinel is bit-identical;
* the victim is refused with a reason naming its file; or served exactly as
  before; or served shorter only with the loss said (a torn write dropped,
  or a repair made with ``--repair``), never silently;
* the learners held stay within ``max_state_bytes``, and a refused stream
  leaves no learner behind.

The default run draws :data:`CASES` cases; ``-m slow`` draws
:data:`SLOW_CASES` more.  Named tests cover what an operator's bad day was
seen to produce, and the full daemon (sockets, probes) on a few of them.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import struct
import sys
import weakref
import zlib
from pathlib import Path

import numpy as np
import pytest

from seqd.core.bits import BitsLearner
from seqd.core.online import OnlineLearner
from seqd.daemon import stream_meta, wal
from seqd.daemon.config import ServeConfig
from seqd.daemon.metrics import StreamCollector
from seqd.daemon.requests import Requests
from seqd.daemon.state_dir import StateDirectory
from seqd.daemon.waiters import Waiters

sys.path.insert(0, os.path.dirname(__file__))
from daemon_harness import GLNN_BYTES, SMALL_BYTES, SMALL_GLNN, Caller, ThreadServer, snapshot_as_version  # noqa: E402

CASES = 240
SLOW_CASES = 1200
BUDGET = 64 << 20  # max_state_bytes of every restore here: the small learners fit many times over
SENTINEL = "sentinel"
# the victims: (name, preset, config, symbols' alphabet, snapshot version or None for no snapshot)
VICTIMS = [
    ("bytes", "bytes", SMALL_BYTES, 256, 4),
    ("glnn-bytes", GLNN_BYTES, SMALL_GLNN, 256, 4),  # the GLNN byte model ("bytes" until seqd 0.21)
    ("bytes-v1", GLNN_BYTES, SMALL_GLNN, 256, 1),  # streams' snapshots of versions 1-3 held GLNN learners only
    ("bytes-v2", GLNN_BYTES, SMALL_GLNN, 256, 2),
    ("bytes-v3", GLNN_BYTES, SMALL_GLNN, 256, 3),
    ("unsnapshotted", "bytes", SMALL_BYTES, 256, None),
    ("ctw", "ctw", {"depth": 8, "node_bits": 10}, 256, 4),
    ("glnn", "glnn", {"units": 4, "degree": 2, "alphabet_cap": 32}, 32, 4),
]


def text(n: int, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    words = [b"GET /a 200 ", b"POST /b 404 ", b"user=", b"ok\n", b"id=17 ", b"time=0.004 "]
    out = b"".join(words[i] for i in rng.integers(0, len(words), n))
    return out[:n]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    """A crash image: the state directory copied while the daemon runs, every batch learned, the victims'
    logs holding batches after their snapshots."""
    state = tmp_path_factory.mktemp("pristine") / "state"
    image = state.parent / "image"
    with ThreadServer(state) as srv:
        call = Caller(srv.api, timeout=600)  # (the first requests wait while a cold cache compiles)
        for name, preset, config, cap, version in VICTIMS + [(SENTINEL, "ctw", {"depth": 6, "node_bits": 10}, 256, 4)]:
            call.ok("create", stream=name, preset=preset, config=config)
            seed = sum(map(ord, name))
            symbols = lambda n, k: (text(n, seed + k) if cap == 256 else
                                    np.random.default_rng(seed + k).integers(0, cap, n).tolist())
            call.ok("publish", stream=name, symbols=symbols(1500, 0))
            if version is not None:
                call.ok("snapshot", stream=name)
            for k in range(1, 4):
                call.ok("publish", stream=name, symbols=symbols(300 + 100 * k, k))
            call.ok("predict", stream=name, min_position=1500 + 300 * 3 + 600, wait_ms=60000)
        shutil.copytree(state, image)  # every batch acknowledged and learned, no snapshot under way
        call.close()
    for name, *_, version in VICTIMS:
        if version in (1, 2, 3):
            snapshot_as_version(image / "streams" / name / "snapshot", version)
    shutil.rmtree(image / "lock", ignore_errors=True)
    return image


def restore(state: Path, repair: bool = False, budget: int = BUDGET) -> Requests:
    """What ``Server.start`` does with a state directory before it binds its sockets."""
    config = ServeConfig(state_dir=str(state), metrics_port=0, workers=2, max_state_bytes=budget, repair=repair)
    directory = StateDirectory(state)
    requests = Requests(config, directory, Waiters(), stopping=lambda: False)
    directory.lock()
    try:
        directory.empty_trash()
        requests.restore_streams()
    finally:
        for stream in requests.streams.values():
            stream.log.close()
        directory.unlock()
    return requests


def fingerprint(stream) -> tuple:
    """What a stream serves: its position, its code length and its next-symbol distribution, bit for bit."""
    view = stream.view
    return view.position, view.stats["code_bits"], np.asarray(view.distribution()).tobytes()


@pytest.fixture(scope="module")
def expected(pristine, tmp_path_factory) -> dict:
    copy = tmp_path_factory.mktemp("expected") / "state"
    shutil.copytree(pristine, copy)
    requests = restore(copy)
    assert not requests.unavailable, requests.unavailable
    return {name: fingerprint(stream) for name, stream in requests.streams.items()}


def case_dir(pristine: Path, tmp: Path, victim: str) -> Path:
    state = tmp / "state"
    for name in (victim, SENTINEL):
        shutil.copytree(pristine / "streams" / name, state / "streams" / name)
    return state


# -- the mutations: each damages one file (or the folder) of the victim, from a seeded generator ---------------
def flip_bits(path: Path, rng) -> str:
    data = bytearray(path.read_bytes())
    if not data:
        return "empty"
    for _ in range(int(rng.integers(1, 4))):
        i = int(rng.integers(0, len(data)))
        data[i] ^= 1 << int(rng.integers(0, 8))
    path.write_bytes(bytes(data))
    return "bit flips"


def truncate(path: Path, rng) -> str:
    return cut(path, int(rng.integers(0, max(path.stat().st_size, 1))), "truncated")


def truncate_at_page(path: Path, rng) -> str:
    pages = path.stat().st_size // wal.PAGE
    if pages == 0:
        return truncate(path, rng)
    return cut(path, wal.PAGE * int(rng.integers(0, pages + 1)), "cut at a page")


def cut(path: Path, size: int, what: str) -> str:
    """``path`` cut to ``size`` bytes.  A log segment cut exactly after a record (or its header) holds a log
    that ended there, which nothing in the directory tells apart: the label says so (:func:`judge`)."""
    if path.name.startswith("wal-") and size in record_ends(path):
        what += " " + AT_A_RECORD_END
    path.write_bytes(path.read_bytes()[:size])
    return what


AT_A_RECORD_END = "exactly at the end of a record"


def record_ends(path: Path) -> set[int]:
    data, ends, offset = path.read_bytes(), {16}, 16
    while offset + 20 <= len(data):
        offset += 20 + struct.unpack_from("<I", data, offset)[0]
        ends.add(offset)
    return ends


def zero_tail(path: Path, rng) -> str:
    data = bytearray(path.read_bytes())
    start = int(rng.integers(0, len(data) + 1)) // wal.SECTOR * wal.SECTOR
    extra = int(rng.choice([0, 100, 5000]))
    data[start:] = bytes(len(data) - start + extra)
    path.write_bytes(bytes(data))
    return "zero-filled tail"


def garbage_tail(path: Path, rng) -> str:
    with open(path, "ab") as f:
        f.write(rng.integers(0, 256, int(rng.integers(1, 3000)), dtype=np.uint8).tobytes())
    return "garbage appended"


def delete(path: Path, rng) -> str:
    path.unlink()
    return "deleted"


def overwrite_random(path: Path, rng) -> str:
    path.write_bytes(rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8).tobytes())
    return "replaced by garbage"


BYTE_DAMAGE = [flip_bits, truncate, truncate_at_page, zero_tail, garbage_tail, delete, overwrite_random]

HOSTILE_SETTINGS = {
    "units": [20000, -1, 0, 1 << 40, "4", None, 4.5, True], "window": [10 ** 7, 0, -3],
    "context_bits": [26, 40, 3], "history_bits": [30, 64], "match_bits": [30], "degree": [1000, 0],
    "alphabet_cap": [1 << 20, 0, 1, -5], "depth": [10 ** 6], "node_bits": [40], "seed": [-1, 1 << 70, 0.5],
    "context_orders": [[1] * 100, [1000], ["a"], [-1], "1,2"], "writing_rate": [float("nan"), -1.0, 1e300],
    "model": ["other"], "method": ["nope"], "numerics": ["fast"],
}


def hostile_meta(path: Path, rng) -> str:
    meta = json.loads(path.read_text())
    kind = int(rng.integers(0, 7))
    if kind == 0:
        key = str(rng.choice(sorted(HOSTILE_SETTINGS)))
        values = HOSTILE_SETTINGS[key]
        meta["config"][key] = values[int(rng.integers(0, len(values)))]
        what = f"config {key}"
    elif kind == 1:
        meta["name"] = [5, None, "../../evil", "", ".hidden", SENTINEL, "x" * 200, "a/b", "other"][int(rng.integers(0, 9))]
        what = "name"
    elif kind == 2:
        meta["model"] = ["lstm", "esn", "ctw", "glnn", 7, None, "nope"][int(rng.integers(0, 7))]
        what = "model"
    elif kind == 3:
        meta["created"] = ["yesterday", None, float("inf"), [], True][int(rng.integers(0, 5))]
        what = "created"
    elif kind == 4:
        meta = [meta, None, "stream", 17][int(rng.integers(0, 4))]
        what = "not an object"
    elif kind == 5:
        del meta[str(rng.choice(["name", "created", "config"]))]
        what = "a key removed"
    else:
        meta["config"] = [None, [], "units=4", {"unknown_setting": 1}][int(rng.integers(0, 4))]
        what = "config replaced"
    path.write_text(json.dumps(meta))  # (NaN written as NaN: Python's json does; seqd's reader refuses it)
    return f"hostile stream.json: {what}"


def crafted_snapshot_position(path: Path, rng) -> str:
    """A snapshot whose position is edited, its checksum made to match."""
    data = bytearray(path.read_bytes())
    head = struct.Struct("<8sQII")
    magic, position, size, _ = head.unpack_from(data)
    choices = [0, 1, position - 1, position + 1, position + 300, 1 << 40, (1 << 64) - 1]
    new = choices[int(rng.integers(0, len(choices)))] % (1 << 64)
    stats = bytes(data[head.size:head.size + size])
    data[:head.size] = head.pack(magic, new, size, zlib.crc32(stats, new & 0xFFFFFFFF))
    path.write_bytes(bytes(data))
    return f"snapshot position {position} -> {new}, checksum recomputed"


def crafted_log_record(path: Path, rng) -> str:
    """A record header rewritten with a valid header checksum: a huge or wrong length, a wrong position."""
    data = bytearray(path.read_bytes())
    offsets, offset = [], 16
    while offset + 20 <= len(data):
        length = struct.unpack_from("<I", data, offset)[0]
        offsets.append(offset)
        offset += 20 + length
    if not offsets:
        return garbage_tail(path, rng)
    at = offsets[int(rng.integers(0, len(offsets)))]
    length, start, crc = struct.unpack_from("<IQI", data, at)
    change = int(rng.integers(0, 3))
    if change == 0:
        length = [1 << 31, 0xFFFFFFFF, length + 1, max(length - 1, 0)][int(rng.integers(0, 4))] % (1 << 32)
    elif change == 1:
        start = [0, start + 1, start - 1, 1 << 50][int(rng.integers(0, 4))] % (1 << 64)
    else:
        crc ^= 1
    fields = struct.pack("<IQI", length, start, crc)
    data[at:at + 20] = fields + struct.pack("<I", zlib.crc32(fields))
    path.write_bytes(bytes(data))
    return f"crafted record header at byte {at}"


def extra_segment(directory: Path, rng) -> str:
    """A segment that does not belong: one of another stream's, an empty one, one at a wrong position."""
    segs = wal.segments(directory)
    start = segs[-1][0] + int(rng.choice([1, 10 ** 6]))  # (one at an existing start would replace it)
    body = wal._HEAD.pack(wal.MAGIC, wal.VERSION, 1)
    (directory / wal.segment_name(start)).write_bytes(body if rng.integers(0, 2) else body + b"\x01" * 40)
    return f"extra segment at {start}"


def mutate(state: Path, victim: str, rng) -> str:
    """One damage to the victim's folder, or to the state directory's own files; what was done."""
    folder = state / "streams" / victim
    files = {"stream.json": folder / "stream.json", "snapshot": folder / "snapshot",
             "history": folder / "history"}
    segs = wal.segments(folder)
    kind = str(rng.choice(["stream.json", "snapshot", "log", "log", "history", "lock", "trash", "folder"]))
    if kind == "log":
        if not segs:
            kind = "snapshot"
        else:
            path = segs[int(rng.integers(0, len(segs)))][1]
            how = int(rng.integers(0, len(BYTE_DAMAGE) + 2))
            if how == len(BYTE_DAMAGE):
                return "log: " + crafted_log_record(path, rng)
            if how == len(BYTE_DAMAGE) + 1:
                return "log: " + extra_segment(folder, rng)
            return f"log {path.name}: " + BYTE_DAMAGE[how](path, rng)
    if kind == "history" and not files["history"].exists():
        kind = "snapshot"
    if kind in ("snapshot", "history") and not files[kind].exists():
        kind = "stream.json"
    if kind == "stream.json":
        if rng.integers(0, 2):
            return hostile_meta(files["stream.json"], rng)
        return "stream.json: " + BYTE_DAMAGE[int(rng.integers(0, len(BYTE_DAMAGE)))](files["stream.json"], rng)
    if kind == "snapshot":
        if rng.integers(0, 4) == 0:
            return crafted_snapshot_position(files["snapshot"], rng)
        return "snapshot: " + BYTE_DAMAGE[int(rng.integers(0, len(BYTE_DAMAGE)))](files["snapshot"], rng)
    if kind == "history":
        return "history: " + BYTE_DAMAGE[int(rng.integers(0, len(BYTE_DAMAGE)))](files["history"], rng)
    if kind == "lock":
        (state / "lock").write_bytes(rng.integers(0, 256, int(rng.integers(0, 64)), dtype=np.uint8).tobytes())
        return "lock: garbage (no daemon holds it)"
    if kind == "trash":
        trash = state / "trash"
        if rng.integers(0, 2):
            trash.write_bytes(b"not a folder")
            return "trash: a file"
        (trash / "old.0123" / "deep").mkdir(parents=True)
        (trash / "old.0123" / "deep" / "snapshot").write_bytes(b"x" * 1000)
        return "trash: a dropped stream's leftovers"
    leftover = ["junk-file", ".new-half-made", "no-stream-json"][int(rng.integers(0, 3))]
    target = state / "streams" / leftover
    if leftover == "junk-file":
        target.write_bytes(b"junk")
    else:
        target.mkdir()
        (target / "wal-00000000000000000000.log").write_bytes(b"\x00" * 10)
    return f"streams folder: {leftover}"


LEARNERS: weakref.WeakSet = weakref.WeakSet()  # every byte-model learner made while a test here runs


@pytest.fixture(autouse=True)
def tracked_learners(monkeypatch):
    for kind in (OnlineLearner, BitsLearner):
        def init(self, *args, _real=kind.__init__, **kwargs):
            _real(self, *args, **kwargs)
            LEARNERS.add(self)
        monkeypatch.setattr(kind, "__init__", init)


def learners_alive() -> int:
    """The byte-model learners still in memory, without a collection of our own: what a refused restore allocated
    must be gone by the time the restore returns (the daemon collects what a failure left in cycles)."""
    return len(LEARNERS)


def check_case(pristine: Path, expected: dict, tmp: Path, seed: int, repair: bool) -> str:
    rng = np.random.default_rng(seed)
    victim = VICTIMS[int(rng.integers(0, len(VICTIMS)))][0]
    state = case_dir(pristine, tmp, victim)
    what = mutate(state, victim, rng)
    label = f"case {seed} ({victim}: {what})"
    earlier = list(LEARNERS)  # (held, so that their ids stay theirs)
    requests = restore(state, repair=repair)
    made = [learner for learner in LEARNERS if all(learner is not e for e in earlier)]
    resident = sum(1 for s in requests.streams.values() if s.resident)
    assert len(made) <= resident, label  # a refused restore left no learner behind
    del earlier, made
    return judge(requests, victim, expected, label)


def judge(requests: Requests, victim: str, expected: dict, label: str) -> str:
    """The case's outcome, after checking the promise (the module's docstring)."""
    served = requests.streams
    assert SENTINEL in served, label
    assert fingerprint(served[SENTINEL]) == expected[SENTINEL], label
    assert requests.budget.held <= BUDGET, label
    assert set(served) <= {victim, SENTINEL} and set(requests.unavailable) <= {victim, "no-stream-json"}, label
    if victim in requests.unavailable:
        reason = requests.unavailable[victim]
        assert any(name in reason for name in ("stream.json", "snapshot", "wal-", "history", victim)), (label, reason)
        outcome = "refused"
    else:
        stream = served[victim]
        got, want = fingerprint(stream), expected[victim]
        if got == want:
            outcome = "served as before"
        elif AT_A_RECORD_END in label and not (stream.torn or stream.repairs):
            assert got[0] < want[0], label  # a log that ended there: the one loss nothing can tell (docs)
            outcome = "served shorter, cut at a record's end"
        else:  # a loss is never silent: a torn write said, or a repair made
            assert got[0] < want[0] and (stream.torn or stream.repairs), (label, got[0], want[0])
            outcome = "served shorter, said"
    return outcome


def run_cases(pristine, expected, tmp_path, seeds, repair=False) -> dict:
    outcomes: dict[str, int] = {}
    for seed in seeds:
        case_tmp = tmp_path / f"c{seed}"
        outcome = check_case(pristine, expected, case_tmp, seed, repair)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        shutil.rmtree(case_tmp, ignore_errors=True)
    return outcomes


def test_hostile_state_directories(pristine, expected, tmp_path):
    outcomes = run_cases(pristine, expected, tmp_path, range(CASES))
    assert outcomes.get("refused", 0) > CASES // 4 and outcomes.get("served as before", 0) > 0, outcomes


def test_hostile_logs_with_repair(pristine, expected, tmp_path):
    outcomes = run_cases(pristine, expected, tmp_path, range(10_000, 10_000 + CASES // 4), repair=True)
    assert outcomes.get("served shorter, said", 0) > 0, outcomes


@pytest.mark.slow
def test_hostile_state_directories_many(pristine, expected, tmp_path):
    outcomes = run_cases(pristine, expected, tmp_path, range(100_000, 100_000 + SLOW_CASES))
    print(f"\n{SLOW_CASES} cases: {outcomes}")  # (docs/benchmarks.md quotes them: pytest -s)
    outcomes = run_cases(pristine, expected, tmp_path, range(200_000, 200_000 + SLOW_CASES // 4), repair=True)
    print(f"{SLOW_CASES // 4} cases with --repair: {outcomes}")


# -- what was seen on an operator's bad day, by name ---------------------------------------------------------------
def with_meta(state: Path, victim: str, **changes) -> None:
    path = state / "streams" / victim / "stream.json"
    meta = json.loads(path.read_text())
    for key, value in changes.items():
        if key in ("name", "model", "created"):
            meta[key] = value
        else:
            meta["config"][key] = value
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize("victim, changes, reason", [
    ("bytes", dict(name=5), "not a stream name"),
    ("bytes", dict(name="../../evil"), "not a stream name"),
    ("bytes", dict(name=SENTINEL), f"names stream '{SENTINEL}', but its folder is 'bytes'"),
    ("bytes", dict(table_bits=22), "table_bits = 22 is above what this daemon serves"),
    ("bytes", dict(history_bits=30), "history_bits = 30 is above"),
    ("bytes", dict(units=20000), "need 0 <= units <= 64"),
    ("bytes", dict(context_bits=16), "unexpected keyword argument 'context_bits'"),  # another model's setting
    ("glnn-bytes", dict(context_bits=26), "context_bits = 26 is above what this daemon serves"),
    ("glnn-bytes", dict(window=10 ** 7), "window = 10000000 is above"),
    ("glnn-bytes", dict(units=20000), "units = 20000 is above"),
    ("glnn-bytes", dict(units="4"), "is not of its type"),
])
def test_a_hostile_stream_json_is_refused_before_anything_is_allocated(pristine, expected, tmp_path, victim, changes,
                                                                       reason):
    state = case_dir(pristine, tmp_path, victim)
    with_meta(state, victim, **changes)
    gc.collect()
    before = learners_alive()
    requests = restore(state)
    assert reason in requests.unavailable[victim] and "stream.json" in requests.unavailable[victim]
    assert fingerprint(requests.streams[SENTINEL]) == expected[SENTINEL]
    assert learners_alive() == before  # (the sentinel is a CTW model; the victim's learner was never built)


def test_a_number_that_overflows_to_infinity_is_refused(pristine, tmp_path):
    state = case_dir(pristine, tmp_path, "glnn")
    path = state / "streams" / "glnn" / "stream.json"
    path.write_text(path.read_text().replace('"writing_rate": ', '"writing_rate": 1e999, "_": ', 1))
    assert "out of a float's range" in restore(state).unavailable["glnn"]


def test_a_model_larger_than_the_budget_is_refused_by_its_stream_json(pristine, tmp_path):
    state = case_dir(pristine, tmp_path, "bytes")
    with_meta(state, "bytes", history_bits=26)  # within the served bounds, over this server's 64 MiB
    requests = restore(state)
    assert "more than this server serves in all" in requests.unavailable["bytes"]


def test_a_snapshot_position_edited_with_its_checksum_is_caught_by_the_learner_count(pristine, tmp_path):
    state = case_dir(pristine, tmp_path, "bytes")
    path = state / "streams" / "bytes" / "snapshot"
    data = bytearray(path.read_bytes())
    head = struct.Struct("<8sQII")
    magic, position, size, _ = head.unpack_from(data)
    data[:head.size] = head.pack(magic, position - 1, size, zlib.crc32(bytes(data[head.size:head.size + size]),
                                                                        position - 1))
    path.write_bytes(bytes(data))
    reason = restore(state).unavailable["bytes"]
    assert f"says position {position - 1}, but its learner has learned {position} symbols" in reason


def test_log_damage_is_an_error_line_and_repair_says_what_was_lost(pristine, expected, tmp_path, caplog):
    state = case_dir(pristine, tmp_path, "bytes")
    (_, segment), = wal.segments(state / "streams" / "bytes")
    data = segment.read_bytes()
    segment.write_bytes(data[:len(data) - 250])  # cut inside the last record, not where a crash cuts
    with caplog.at_level(logging.INFO, logger="seqd"):
        refused = restore(state)
    assert "LogDamage" in refused.unavailable["bytes"] and segment.name in refused.unavailable["bytes"]
    assert any(r.levelno == logging.ERROR and "seqd serve --repair" in r.getMessage() for r in caplog.records)
    assert segment.stat().st_size == len(data) - 250  # left as it is
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="seqd"):
        repaired = restore(state, repair=True)
    stream = repaired.streams["bytes"]
    assert stream.view.position == expected["bytes"][0] - 600  # the last batch (600 symbols) is lost
    assert stream.repairs[-1]["position"] == stream.view.position and stream.repairs[-1]["lost_log_bytes"] > 0
    assert any(r.levelno == logging.ERROR and "REPAIRED" in r.getMessage() for r in caplog.records)
    gauges = {m.name: m.samples[0].value for m in StreamCollector(
        streams=lambda: list(repaired.streams.values()), unavailable=lambda: 0, labelled=lambda names: []).collect()
        if m.samples and not m.samples[0].labels}
    assert gauges["seqd_streams_repaired"] == 1 and gauges["seqd_streams_torn_writes"] == 0
    assert stream.repairs[-1]["lost_symbols_at_least"] >= 0
    again = restore(state)  # the repair is remembered, and a later start serves the stream as repaired
    assert again.streams["bytes"].view.position == stream.view.position and again.streams["bytes"].repairs


def test_a_torn_write_is_an_info_line(pristine, expected, tmp_path, caplog):
    state = case_dir(pristine, tmp_path, "bytes")
    (_, segment), = wal.segments(state / "streams" / "bytes")
    with open(segment, "ab") as f:
        f.truncate(segment.stat().st_size + (64 << 20))  # a 64 MiB zero-filled tail: a torn write, seen at once
    with caplog.at_level(logging.INFO, logger="seqd"):
        requests = restore(state)
    assert fingerprint(requests.streams["bytes"]) == expected["bytes"]
    assert any(r.levelno == logging.INFO and "cut short by a crash" in r.getMessage() for r in caplog.records)


def test_refused_streams_leave_no_learner_in_memory(pristine, tmp_path):
    """A dozen streams whose snapshots fail late, after their learners' arrays were allocated: none of those
    arrays lives on (a traceback kept with the refusal would hold them; the restore keeps only the message)."""
    import tracemalloc
    state = case_dir(pristine, tmp_path, "bytes")
    for k in range(12):
        folder = state / "streams" / f"broken-{k}"
        shutil.copytree(state / "streams" / "bytes", folder)
        with_meta(state, folder.name, name=folder.name)
        data = bytearray((folder / "snapshot").read_bytes())
        data[-5] ^= 0xFF
        (folder / "snapshot").write_bytes(bytes(data))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        requests = restore(state)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(requests.unavailable) == 12
    held = sum(s.learner_bytes for s in requests.streams.values() if s.resident)
    assert grown < held + (4 << 20), (grown, held)  # each refused learner would be some 4.5 MB


def test_the_daemon_starts_and_serves_the_rest_when_one_stream_json_is_hostile(pristine, expected, tmp_path):
    state = case_dir(pristine, tmp_path, "bytes")
    with_meta(state, "bytes", name=5)
    with ThreadServer(state) as srv:
        call = Caller(srv.api)
        reply = call("stats", stream="bytes")
        assert not reply.ok and "stream.json" in reply.message
        assert call.ok("stats", stream=SENTINEL)["position"] == expected[SENTINEL][0]
        listed = call.ok("stats")
        assert "bytes" in listed["unavailable"] and listed["streams"] == [SENTINEL]
        call.close()


def test_stream_json_round_trips_every_preset(tmp_path):
    from seqd.core.learners import PRESETS
    from seqd.daemon.models import make_config
    for preset in PRESETS:
        config = make_config(preset, None)
        folder = tmp_path / preset
        folder.mkdir()
        (folder / "stream.json").write_bytes(stream_meta.encode(preset, 1.5, config))
        assert stream_meta.read(folder) == (preset, 1.5, config)
