"""Crafted ``.sqd`` files: a reader refuses them at once, in one line, in bounded memory and work.

The header's CRC-32 is no defence against whoever writes the file, so every
crafted header here carries a valid checksum.  Each case of the format's known
attacks is a named test; a fuzz test then mutates valid files from a seeded
RNG (header settings, their types, the JSON itself, the record fields) and
holds every case to the same promise: bytes out (a benign mutation) or a
FormatError / ValueError.

"At once" and "bounded work" are counted, not timed: ``counted()`` records the
learners a reader makes (each allocates a model's state) and the symbols it
decodes.  A header refused before its first block makes no learner; no reader
decodes more than a block size for each record the file has room for.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import struct
import subprocess
import sys
import zlib
from unittest import mock

import numpy as np
import pytest

from seqd.core import coder, container, limits
from seqd.core.bits import BitsConfig
from seqd.core.container import FormatError, compress, decompress
from seqd.core.faces import DEFAULT, FACES, GLNN
from seqd.core.online.face import BOUNDS as GLNN_BOUNDS
from seqd.core.online import OnlineConfig, OnlineLearner
from seqd.core.online.state import new_state, state_nbytes, state_shapes

sys.path.insert(0, os.path.dirname(__file__))
import contract  # noqa: E402  (the learner registry: every configuration seqd ships)

# small tables: decoding a crafted file stays cheap unless the crafted settings make it expensive
SMALL = OnlineConfig.bytes_default(context_bits=10, history_bits=12, match_bits=10)
LINES = b"".join(f"2026-11-22 08:{i % 60:02d}:{i * 7 % 60:02d} node{i % 7} GET /item/{i * 31 % 977} 200\n".encode()
                 for i in range(40))
FUZZ_MEMORY_LIMIT = 256 << 20
# what the default model needs to decode a file of default blocks, as the refusal names it (state + buffers)
DEFAULT_NEED = f"decoding needs {sum(limits.decoding_memory(container.default_config(), container.DEFAULT_BLOCK_SIZE)) / (1 << 20):.1f} MiB"


@pytest.fixture(scope="module")
def small_file() -> bytes:
    return compress(LINES, SMALL, block_size=512, chain_size=512)  # every block a chain of its own


@pytest.fixture(scope="module")
def preset_file() -> bytes:
    return compress(LINES[:600])


# -- crafting ---------------------------------------------------------------------------------------

def split(packed: bytes) -> tuple[dict, bytes]:
    """(the header's JSON object, the records after the header)."""
    hlen = int.from_bytes(packed[12:16], "little")
    return json.loads(packed[16:16 + hlen]), packed[16 + hlen + 4:]


def with_body(packed: bytes, body: bytes, length: int | None = None) -> bytes:
    """``packed`` with header JSON text ``body`` (and a length field of ``length``), its CRC recomputed."""
    _, records = split(packed)
    head = container.MAGIC + packed[8:12] + struct.pack("<I", len(body) if length is None else length) + body
    return head + struct.pack("<I", zlib.crc32(head)) + records


def with_meta(packed: bytes, meta: dict) -> bytes:
    return with_body(packed, json.dumps(meta).encode())


def with_settings(packed: bytes, **settings) -> bytes:
    meta, _ = split(packed)
    meta["config"].update(settings)
    return with_meta(packed, meta)


def with_version(packed: bytes, version: int) -> bytes:
    """``packed`` claiming format ``version``, its header CRC recomputed."""
    meta, _ = split(packed)
    relabelled = packed[:8] + struct.pack("<H", version) + packed[10:]
    return with_meta(relabelled, meta)


def block_offsets(packed: bytes) -> list[int]:
    reader = io.BytesIO(packed)
    header = container.read_header(reader)
    return [r.offset for r in container.read_records(reader, header, header.size) if isinstance(r, container.Block)]


def with_record_field(packed: bytes, offset: int, field: int, value: int) -> bytes:
    """Field ``field`` of the block record at ``offset`` (0 kind, 1 n, 2 p, 3 crc, 4 payload crc) set to ``value``."""
    fields = list(container._BLOCK.unpack_from(packed, offset))
    fields[field] = value
    return packed[:offset] + container._BLOCK.pack(*fields) + packed[offset + container._BLOCK.size:]


@dataclasses.dataclass
class Work:
    learners: int = 0  # learners made: each allocates a whole model's state
    symbols: int = 0  # symbols decoded


@contextlib.contextmanager
def counted():
    """The work the container does inside the block: learners made, symbols decoded."""
    from seqd.core.online.face import GlnnCoder

    work, make, decode = Work(), OnlineLearner.__init__, GlnnCoder.decode

    def counting_learner(self, *args, **kwargs):
        work.learners += 1
        make(self, *args, **kwargs)

    def counting_decode(self, *args):
        decoded = decode(self, *args)
        work.symbols += decoded
        return decoded

    with mock.patch.object(OnlineLearner, "__init__", counting_learner), \
            mock.patch.object(GlnnCoder, "decode", counting_decode):
        yield work


def refused(data: bytes, match: str, **kwargs) -> Work:
    """The work done before ``data`` is refused with an error matching ``match``."""
    with counted() as work, pytest.raises(ValueError, match=match):
        decompress(data, **kwargs)
    return work


def work_bound(data: bytes) -> int:
    """The most symbols a reader may decode from ``data``: a block size for each record it has room for."""
    try:
        header = container.read_header(io.BytesIO(data))
    except ValueError:
        return 0
    return (len(data) - header.size) // container._BLOCK.size * header.block_size


UNREAD = Work(learners=0, symbols=0)  # refused from the header or a record's fields, before any learner is made


# -- the cases of the format's known attacks ---------------------------------------------------------

def test_alphabet_cap_300_is_refused_before_the_kernels_write_past_their_buffers(small_file):
    assert refused(with_settings(small_file, alphabet_cap=300), "alphabet_cap must be 256") == UNREAD


def test_alphabet_cap_65536_is_refused(small_file):
    assert refused(with_settings(small_file, alphabet_cap=65536), "alphabet_cap must be 256") == UNREAD


def test_units_and_degree_100_are_refused(small_file):
    assert refused(with_settings(small_file, units=100, degree=100), r"(units|degree) must be in") == UNREAD
    assert refused(with_settings(small_file, units=100), r"units must be in \[0, 64\]") == UNREAD
    assert refused(with_settings(small_file, units=64, degree=64), r"degree must be in \[1, 16\]") == UNREAD


def test_a_window_of_ten_million_is_refused(small_file):
    assert refused(with_settings(small_file, window=10 ** 7), r"window must be in \[1, 256\]") == UNREAD


def test_a_flipped_bit_in_a_block_length_is_caught_at_once():
    """n + 2^20 with the payload intact: the coder reads past the payload within a few symbols."""
    packed = compress(LINES * 10, SMALL)  # one block of 21 kB in a file whose block size is 4 MiB
    (offset,) = block_offsets(packed)
    n = container._BLOCK.unpack_from(packed, offset)[1]
    work = refused(with_record_field(packed, offset, 1, n | 1 << 20), "payload of .* ends before")
    assert work.learners == 1 and n <= work.symbols <= n + 16, (n, work)  # not the 2^20 the record claims
    p = container._BLOCK.unpack_from(packed, offset)[2]
    assert refused(with_record_field(packed, offset, 2, p | 1 << 15), "truncated|not valid") == UNREAD


def test_a_length_beyond_the_block_size_or_the_payload_bound_is_refused_unread(small_file):
    offset = block_offsets(small_file)[0]
    assert refused(with_record_field(small_file, offset, 1, 513), "not valid") == UNREAD
    assert refused(with_record_field(small_file, offset, 2, 4 * 512 + 17), "not valid") == UNREAD
    assert refused(with_record_field(small_file, offset, 2, 2 ** 32 - 1), "not valid") == UNREAD


def test_a_chain_of_continues_blocks_holds_at_most_the_chain_size(small_file):
    offsets = block_offsets(small_file)
    chained = with_record_field(small_file, offsets[1], 0, container.CONTINUES)
    assert refused(chained, "block 1 .* not valid") == Work(learners=1, symbols=512)  # block 0, and no more
    # before format 3 a chain held a block size at most, and a reader holds those files to it
    old = with_meta(with_version(chained, 2), {k: v for k, v in split(chained)[0].items() if k != "chain_size"})
    assert refused(old, "block 1 .* not valid") == Work(learners=1, symbols=512)
    assert refused(with_version(small_file, 2), "format 2 has no chain_size") == UNREAD


def test_numerics_must_be_the_formats(small_file):
    """Format 1 was coded with the C library's exp/log/tanh, format 2 with seqd's own: a header that says
    otherwise is damaged, and the writer writes 'ieee' only."""
    version = GLNN.writes
    refused(with_settings(small_file, numerics="libm"), f"format {version} files are not coded with numerics 'libm'")
    refused(with_version(small_file, 1), "format 1 files are not coded with numerics 'ieee'")
    refused(with_version(small_file, 0), "format version 0 does not exist")
    newest = container.FORMAT_VERSION
    refused(with_version(small_file, newest + 1), f"format version {newest + 1} is newer than this seqd reads")
    with pytest.raises(ValueError, match="format 3 files are not coded with numerics 'libm'"):
        compress(LINES, SMALL.__class__.bytes_default(numerics="libm"))


def test_unknown_keys_are_refused(small_file):
    meta, _ = split(small_file)
    assert refused(with_meta(small_file, {**meta, "dictionary": "x"}), "unknown key 'dictionary'") == UNREAD
    assert refused(with_settings(small_file, vocabulary=3), "unknown setting 'vocabulary'") == UNREAD


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_nan_and_infinities_are_refused(small_file, text):
    meta, _ = split(small_file)
    body = json.dumps(meta).replace('"config": {', '"config": {"input_scale": ' + text + ", ").encode()
    assert refused(with_body(small_file, body), "damaged header")


def test_wrong_types_are_refused(small_file):
    for key, value in [("units", "4"), ("units", 4.0), ("units", True), ("units", None), ("units", [4]),
                       ("input_scale", "16"), ("input_scale", False), ("column_context", 1),
                       ("context_orders", [[1]]), ("context_orders", "1234"), ("method", ["rbpm"]),
                       ("model", None), ("seed", -1), ("seed", 2 ** 64)]:
        assert refused(with_settings(small_file, **{key: value}), f"damaged header: {key}")
    meta, _ = split(small_file)
    for key, value in [("block_size", "512"), ("block_size", 512.0), ("block_size", True), ("config", []),
                       ("preset", 1), ("build", {"a": 1}), ("build", "a\nb"), ("build", "x" * 300)]:
        assert refused(with_meta(small_file, {**meta, key: value}), f"damaged header: {key}")
    assert refused(with_body(small_file, b"[1, 2]"), "not an object")


def test_deep_json_and_a_huge_length_field_are_refused(small_file):
    assert refused(with_body(small_file, b"[" * 100000 + b"]" * 100000), "damaged header")
    assert refused(with_body(small_file, b"{}", length=2 ** 32 - 1), "implausible length")


def test_the_memory_a_file_needs_is_refused_over_the_limit(preset_file):
    assert decompress(preset_file) == LINES[:600]  # the default model within the default limit
    with pytest.raises(limits.MemoryLimitError) as caught:
        decompress(preset_file, memory_limit=20 << 20)
    message = str(caught.value)
    assert DEFAULT_NEED in message and "limit of 20.0 MiB" in message and "memory_limit" in message
    assert "\n" not in message
    def need(**changes) -> str:
        size = changes.pop("block_size", container.DEFAULT_BLOCK_SIZE)
        return f"decoding needs {sum(limits.decoding_memory(DEFAULT.preset(**changes), size)) / (1 << 30):.1f} GiB"

    big = with_settings(preset_file, history_bits=30, table_bits=21)  # a 1 GiB history ring, 1.5 GiB of buckets
    assert need(history_bits=30, table_bits=21) == "decoding needs 2.7 GiB"
    assert refused(big, need(history_bits=30, table_bits=21)) == UNREAD
    meta, _ = split(preset_file)
    assert need(block_size=1 << 30) == "decoding needs 34.3 GiB"
    assert refused(with_meta(preset_file, {**meta, "block_size": 1 << 30, "chain_size": 0}), need(block_size=1 << 30)) \
        == UNREAD


def test_state_shapes_are_the_arrays_new_state_makes():
    configs = [entry.config() for entry in contract.ONLINE] + [
        OnlineConfig(units=0, context_orders=(1,)), OnlineConfig(units=1, degree=1, window=1),
        OnlineConfig.bytes_default(match_min=0), OnlineConfig.bytes_default(context_orders=(), column_context=False,
                                                                           word_context=False)]
    for config in configs:
        shapes = state_shapes(config)
        for name, array in zip(new_state(config)._fields, new_state(config)):
            assert (array.shape, array.dtype) == shapes[name], (config, name)
        assert state_nbytes(config) == OnlineLearner(config).state_bytes


def test_every_setting_has_a_bound_and_the_writer_refuses_what_the_reader_refuses():
    for face in FACES:  # each byte model's face bounds every setting of its configuration, and nothing else
        assert face.bounds.names() == {f.name for f in dataclasses.fields(face.config)}, face.model
    limits.check_config(OnlineConfig.bytes_default())  # the preset, and every configuration of the registry
    for entry in contract.ONLINE:
        if entry.config().alphabet_cap == 256:
            limits.check_config(entry.config())
    for too_far in (dict(units=65), dict(window=257), dict(context_orders=tuple(range(1, 18))),
                    dict(input_scale=2048.0)):
        with pytest.raises(ValueError, match="must be"):
            compress(b"abc", OnlineConfig.bytes_default(**too_far))


def test_quantize_counts_a_nan_probability_as_zero():
    """A softmax over weights that overflowed gives NaN: the coder's range must not collapse."""
    freq = np.zeros(4, dtype=np.int64)
    total = coder.quantize(np.array([np.nan, np.nan, 0.25, 0.75]), 0, 4, freq)
    assert freq.min() >= 1 and total == freq.sum() <= 1 << 16
    assert coder.quantize(np.full(4, np.nan), 0, 4, freq) == 4 and list(freq) == [1, 1, 1, 1]


# -- the fuzz ---------------------------------------------------------------------------------------

HOSTILE_VALUES = [0, 1, -1, 2, 3, 255, 256, 257, 300, 65535, 65536, 10 ** 7, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64,
                  -2 ** 63, 10 ** 30, 0.0, 0.5, -0.5, 1.0, 1e-300, 1e300, -1e300, 2.0 ** 10, 16.0, "", "4", "glnn",
                  "tanh", "rbpm", None, True, False, [], [1], [[1]], [1, 2, 3, 70], list(range(1, 40)), [3, 2, 1],
                  {}, {"a": 1}]
TOP_KEYS = ["preset", "config", "block_size", "build", "extra"]


def _value(rng: np.random.Generator, name: str | None = None):
    """A value for setting ``name``: often one it accepts (to run the models a crafted file may ask for), else hostile."""
    draw = rng.random()
    if draw < 0.35 and name is not None:
        return _accepted_value(rng, name)
    if draw < 0.5:  # a value at or beside a bound of a setting's table
        bounds = list(GLNN_BOUNDS.ints.values()) + list(GLNN_BOUNDS.floats.values())
        lo, hi = GLNN_BOUNDS.ints.get(name) or GLNN_BOUNDS.floats.get(name) or bounds[rng.integers(len(bounds))]
        return [lo, hi, lo - 1, hi + 1, hi * 2][rng.integers(5)]
    return HOSTILE_VALUES[rng.integers(len(HOSTILE_VALUES))]


def _accepted_value(rng: np.random.Generator, name: str):
    if name in GLNN_BOUNDS.ints:
        lo, hi = GLNN_BOUNDS.ints[name]
        return int(lo + rng.integers(0, 1 + min(hi - lo, 2 ** int(rng.integers(0, 12)))))  # small ones often
    if name in GLNN_BOUNDS.floats:
        lo, hi = GLNN_BOUNDS.floats[name]
        return float(rng.uniform(lo, hi)) if lo <= 0 or rng.random() < 0.3 else \
            float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
    if name in GLNN_BOUNDS.choices:
        return GLNN_BOUNDS.choices[name][rng.integers(len(GLNN_BOUNDS.choices[name]))]
    if name in GLNN_BOUNDS.bools:
        return bool(rng.integers(2))
    longest, lo, hi = GLNN_BOUNDS.lists["context_orders"]
    size = int(rng.integers(0, longest + 1))
    return sorted(int(k) for k in rng.choice(np.arange(lo, hi + 1), size, replace=False))


def mutate(packed: bytes, rng: np.random.Generator) -> bytes:
    """One to three random mutations of a valid file; every header keeps a valid checksum."""
    fields = [f.name for f in dataclasses.fields(OnlineConfig)]
    for _ in range(rng.integers(1, 4)):
        kind = rng.integers(8)
        try:
            meta, _ = split(packed)
        except (ValueError, RecursionError):  # an earlier mutation broke the JSON: it is crafted enough
            return packed
        if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict):
            return packed
        if kind <= 2:  # a setting
            name = fields[rng.integers(len(fields))] if rng.random() < 0.9 else f"setting{rng.integers(9)}"
            meta["config"][name] = _value(rng, name)
            packed = with_body(packed, json.dumps(meta).encode())
        elif kind == 3:  # a top-level key
            key = TOP_KEYS[rng.integers(len(TOP_KEYS))]
            if rng.random() < 0.2:
                meta.pop(key, None)
            else:
                meta[key] = _value(rng)
            packed = with_body(packed, json.dumps(meta).encode())
        elif kind == 4:  # the JSON text itself
            choice = rng.integers(4)
            depth = int(rng.integers(1, 5000))
            body = [b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth,
                    json.dumps(meta).replace("{", '{"x": NaN, ', 1).encode(),
                    bytes(rng.integers(0, 256, int(rng.integers(0, 200)), dtype=np.uint8))][choice]
            packed = with_body(packed, body)
        elif kind == 5:  # the JSON length field
            body = json.dumps(meta).encode()
            packed = with_body(packed, body, length=int(rng.choice([0, 1, len(body) + 1, 1 << 20, 2 ** 32 - 1])))
        elif kind == 6:  # a record field
            try:
                offsets = block_offsets(packed)
            except FormatError:
                continue
            if not offsets:
                continue
            offset = offsets[rng.integers(len(offsets))]
            field = int(rng.integers(3))
            old = container._BLOCK.unpack_from(packed, offset)[field]
            limit = 0xFF if field == 0 else 2 ** 32 - 1
            new = int(rng.choice([old ^ (1 << int(rng.integers(8 if field == 0 else 32))), old + 1, old - 1, 0,
                                  limit, rng.integers(0, limit + 1)]))
            packed = with_record_field(packed, offset, field, min(max(new, 0), limit))
        else:  # a byte anywhere
            damaged = bytearray(packed)
            damaged[rng.integers(len(damaged))] ^= 1 << int(rng.integers(8))
            packed = bytes(damaged)
    return packed


def fuzz(files: list[bytes], cases: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for case in range(cases):
        data = mutate(files[case % len(files)], rng)
        with counted() as work:
            try:
                decompress(data, memory_limit=FUZZ_MEMORY_LIMIT)
            except ValueError as exc:  # FormatError, MemoryLimitError: one line
                assert "\n" not in str(exc), (case, str(exc)[:200])
        assert work.symbols <= work_bound(data), f"case {case} (seed {seed}) decoded {work.symbols} symbols"


def test_fuzz_crafted_files(small_file, preset_file):
    fuzz([small_file] * 9 + [preset_file], cases=500, seed=2026)


@pytest.mark.slow
def test_fuzz_crafted_files_many(small_file, preset_file):
    fuzz([small_file] * 9 + [preset_file], cases=10_000, seed=11)


# -- the command ------------------------------------------------------------------------------------

# Runs seqd's main, then writes the process's peak resident memory (VmHWM, which starts afresh at exec, unlike
# getrusage's maxrss, which keeps the forking parent's) to the file named by $SEQD_TEST_PEAK.
_PEAK_PROBE = """
import os, sys
from seqd.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
with open("/proc/self/status") as status:
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
with open(os.environ["SEQD_TEST_PEAK"], "w") as out:
    out.write(peak)
sys.exit(code)
"""


def _run_decompress(path, *flags) -> tuple[int, str, int]:
    """(exit code, standard error, peak resident memory in bytes) of ``seqd decompress -c`` in a child process."""
    peak_file = path.with_name(path.name + ".peak")
    proc = subprocess.run([sys.executable, "-c", _PEAK_PROBE, "decompress", "-c", "-f", *flags, str(path)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          env={**os.environ, "SEQD_TEST_PEAK": str(peak_file)}, timeout=300)
    return proc.returncode, proc.stderr.decode(), int(peak_file.read_text()) * 1024


def test_the_command_refuses_crafted_files_in_one_line_and_bounded_memory(tmp_path, small_file):
    packed = compress(LINES * 10, SMALL)
    (offset,) = block_offsets(packed)
    n = container._BLOCK.unpack_from(packed, offset)[1]
    crafted = {
        "alphabet-300": (with_settings(small_file, alphabet_cap=300), "alphabet_cap must be 256"),
        "units-100": (with_settings(small_file, units=100, degree=100), "(units|degree) must be"),
        "window-1e7": (with_settings(small_file, window=10 ** 7), "window must be"),
        "history-1GiB": (with_settings(small_file, history_bits=30, context_bits=22), "needs 3.9 GiB .* --memory-limit"),
        "flipped-length": (with_record_field(packed, offset, 1, n | 1 << 20), "ends before"),
    }
    for name, (data, message) in crafted.items():
        path = tmp_path / f"{name}.sqd"
        path.write_bytes(data)
        code, err, peak = _run_decompress(path)
        assert code == 1, (name, err)
        assert err.count("\n") == 1 and "Traceback" not in err, (name, err)
        assert err.startswith(f"seqd decompress: {path}: ") and re.search(message, err), (name, err)
        assert peak < 600 << 20, (name, peak)


def test_memory_limit_option_names_the_file_the_need_and_the_fix(tmp_path, capsys):
    from seqd.cli import main

    path = tmp_path / "app.log.sqd"
    path.write_bytes(compress(LINES[:600]))
    assert main(["decompress", "-k", "--memory-limit", "40M", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and DEFAULT_NEED in err
    assert "limit of 40.0 MiB" in err and "--memory-limit" in err
    assert main(["decompress", "-k", "-T", "2", "--memory-limit", "500M", str(path)]) == 0  # one chain, one learner
    assert (tmp_path / "app.log").read_bytes() == LINES[:600]
    chains = tmp_path / "chains.log.sqd"
    chains.write_bytes(compress(LINES[:600], block_size=300, chain_size=300))
    assert main(["decompress", "-k", "-T", "2", "--memory-limit", "500M", str(chains)]) == 1  # two learners at once
    assert "× 2" in capsys.readouterr().err
    assert main(["decompress", "-k", "--memory-limit", "500M", str(chains)]) == 0
    assert (tmp_path / "chains.log").read_bytes() == LINES[:600]
    with pytest.raises(SystemExit):
        main(["decompress", "--memory-limit", "lots", str(path)])
