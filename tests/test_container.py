"""The range coder, the learner-driven codec and the .sqd container (docs/format.md)."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import contract
from early import Early
from seqd.core import coder, container
from seqd.core.bits import BitsConfig, BitsLearner
from seqd.core.bits import versions as bitwise
from seqd.core.faces import DEFAULT, FACES, GLNN
from seqd.core.container import FormatError, compress, decompress
from seqd.core.online import OnlineConfig, OnlineLearner

LOGS = Path(__file__).resolve().parents[2] / "shared" / "data" / "logs"
# small tables: a learner per test case stays cheap; the coder does not care about the model's size
SMALL = OnlineConfig.bytes_default(context_bits=10, history_bits=12, match_bits=10)


# -- the range coder alone ---------------------------------------------------------------------------

def _encode_static(symbols, freq):
    cum = np.concatenate([[0], np.cumsum(freq)])
    st = coder.encoder_state()
    out = np.zeros(4 * len(symbols) + 16, dtype=np.uint8)
    for s in symbols:
        coder.encode(st, out, int(cum[s]), int(freq[s]), int(cum[-1]))
    return out[:coder.finish(st, out)].copy()


def _decode_static(data, n, freq):
    cum = np.concatenate([[0], np.cumsum(freq)])
    st = coder.decoder_state(data)
    got = []
    for _ in range(n):
        v = coder.target(st, int(cum[-1]))
        s = int(np.searchsorted(cum, v, side="right") - 1)
        coder.consume(st, data, int(cum[s]), int(freq[s]), int(cum[-1]))
        got.append(s)
    return got


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5000), min_size=1, max_size=40), st.integers(0, 2**32 - 1), st.integers(0, 3000))
def test_range_coder_round_trip_and_size(freq, seed, n):
    freq = np.array(freq, dtype=np.int64)
    total = int(freq.sum())
    if total > 1 << 16:
        freq = np.maximum(freq * (1 << 16) // total, 1)
    rng = np.random.default_rng(seed)
    symbols = rng.choice(len(freq), size=n, p=freq / freq.sum())
    data = _encode_static(symbols, freq)
    assert _decode_static(data, n, freq) == list(symbols)
    ideal = -np.log2(freq[symbols] / freq.sum()).sum() / 8
    # range truncation costs at most log2(1 / (1 - 2^16 / 2^24)) bits per symbol; 5 bytes of flush, 1 leading
    assert len(data) <= ideal + n * 0.0057 / 8 + 7


def test_carry_propagation_round_trip():
    """Long runs of a near-certain symbol push low towards 0xFF.. and make carries run through the cache."""
    freq = np.array([65535, 1], dtype=np.int64)
    symbols = [0] * 5000 + [1] + [0] * 5000 + [1, 1, 0] * 50
    data = _encode_static(symbols, freq)
    assert _decode_static(data, len(symbols), freq) == symbols


def test_quantize_keeps_every_symbol_codable():
    pi = np.array([0.0, 1.0 - 1e-300, 1e-300, 0.0])
    freq = np.zeros(4, dtype=np.int64)
    total = coder.quantize(pi, 0, 4, freq)
    assert freq.min() >= 1 and total == freq.sum() <= 1 << 16
    total = coder.quantize(pi, 1, 4, freq)
    assert freq[0] == 0 and freq[1:].min() >= 1 and total == freq.sum()
    pi = np.full(300, 1 / 300)
    freq = np.zeros(300, dtype=np.int64)
    assert coder.quantize(pi, 0, 300, freq) <= 1 << 16


# -- the container -----------------------------------------------------------------------------------

STRUCTURED = [
    b"",
    b"a",
    bytes(range(256)),
    bytes(range(256))[::-1] * 3,
    b"\x00" * 20000,
    b"ab" * 5000 + b"c",
    b"2026-11-22 08:00:01 INFO [main] started worker 17\n" * 60,
]


@pytest.mark.parametrize("data", STRUCTURED, ids=lambda d: f"{len(d)}B")
def test_round_trip_structured(data):
    packed = compress(data, SMALL)
    assert decompress(packed) == data


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=3000), st.integers(1, 4096))
def test_round_trip_random(data, block_size):
    assert decompress(compress(data, SMALL, block_size=block_size)) == data


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from([b"GET /index.html 200\n", b"POST /api 500\n", b"0", b"1", b" ", b"\n"]),
                max_size=300))
def test_round_trip_text_like(parts):
    data = b"".join(parts)
    assert decompress(compress(data, SMALL)) == data


def test_size_is_the_prequential_code_length_plus_a_small_overhead():
    data = b"".join(f"2026-11-22 08:{i % 60:02d}:{i * 7 % 60:02d} node{i % 7} ok id={i * 7919 % 10007}\n".encode()
                    for i in range(1500))
    bits = OnlineLearner(SMALL).learn(data).sum()
    packed = compress(data, SMALL)
    header = len(container.Header(SMALL, container.DEFAULT_BLOCK_SIZE, container.build_info()).to_bytes())
    framing = header + 17 + 13  # header, one block record, the end record
    payload = len(packed) - framing
    # quantisation floor (<= 2^-16 per other code) and range truncation (<= 2^-8): < 0.006 bits per symbol
    assert bits / 8 <= payload + 1
    assert payload <= bits / 8 + len(data) * 0.006 / 8 + 6, (payload, bits / 8)


def test_every_single_byte_flip_is_detected():
    data = b"user=alice action=login ok\nuser=bob action=logout ok\n" * 8
    packed = compress(data, SMALL)
    for i in range(len(packed)):
        damaged = bytearray(packed)
        damaged[i] ^= 0x01 << (i % 8)
        with pytest.raises(FormatError):
            decompress(bytes(damaged))


def test_truncation_and_trailing_data_are_detected():
    packed = compress(b"hello world\n" * 50, SMALL)
    for cut in (0, 5, 20, len(packed) // 2, len(packed) - 1):
        with pytest.raises(FormatError, match="truncated|wrong magic"):
            decompress(packed[:cut])
    with pytest.raises(FormatError, match="after the end record"):
        decompress(packed + b"x")


def test_header_errors_are_clear():
    packed = compress(b"abc", SMALL)
    with pytest.raises(FormatError, match="wrong magic"):
        decompress(b"PK\x03\x04" + packed[4:])
    newer = bytearray(packed)
    newer[8] = container.FORMAT_VERSION + 1
    with pytest.raises(FormatError, match="newer"):
        decompress(bytes(newer))
    head_len = int.from_bytes(packed[12:16], "little")
    meta = json.loads(packed[16:16 + head_len])
    meta["preset"] = "bytes-99"
    body = json.dumps(meta).encode()
    head = container.MAGIC + packed[8:12] + len(body).to_bytes(4, "little") + body
    rebuilt = head + zlib.crc32(head).to_bytes(4, "little") + packed[16 + head_len + 4:]
    with pytest.raises(FormatError, match="preset 'bytes-99' is newer"):
        decompress(rebuilt)


def test_blocks_continue_one_learner_unless_chains_are_bounded():
    """By default every block continues the learner of the block before it: the input is one stream, and a
    damaged block takes the rest of its chain with it.  A chain size bounds the chains."""
    data = bytes(np.random.default_rng(1).integers(97, 100, 5000, dtype=np.uint8))
    packed = bytearray(compress(data, SMALL, block_size=1000))
    header = container.read_header(io.BytesIO(bytes(packed)))
    assert header.chain_size is None and header.version == GLNN.writes == 3
    records = list(container.read_records(io.BytesIO(bytes(packed[header.size:])), header, header.size))
    assert [r.kind for r in records[:-1]] == [container.FRESH] + [container.CONTINUES] * 4
    assert decompress(bytes(packed)) == data
    packed[records[2].offset + 25] ^= 0xFF
    decoder = container.BlockDecoder(header.config)
    decoded, errors = {}, {}
    for r in container.read_records(io.BytesIO(bytes(packed[header.size:])), header, header.size):
        if isinstance(r, container.Block):
            try:
                decoded[r.index] = decoder.decode(r)
            except FormatError as exc:
                errors[r.index] = str(exc)
    assert sorted(decoded) == [0, 1] and sorted(errors) == [2, 3, 4]
    assert "damaged" in errors[2] and "continues a block that could not be decoded" in errors[3]
    chained = compress(data, SMALL, block_size=1000, chain_size=2000)
    header = container.read_header(io.BytesIO(chained))
    records = list(container.read_records(io.BytesIO(chained[header.size:]), header, header.size))
    assert header.chain_size == 2000 and decompress(chained) == data
    assert [r.kind for r in records[:-1]] == [container.FRESH, container.CONTINUES] * 2 + [container.FRESH]
    with pytest.raises(ValueError, match="below the block size"):
        compress(data, SMALL, block_size=1000, chain_size=999)


def test_blocks_are_independent_with_chains_of_one_block():
    data = bytes(np.random.default_rng(1).integers(97, 100, 5000, dtype=np.uint8))
    packed = bytearray(compress(data, SMALL, block_size=1000, chain_size=1000))
    header = container.read_header(__import__("io").BytesIO(bytes(packed)))
    records = list(container.read_records(__import__("io").BytesIO(bytes(packed[header.size:])), header, header.size))
    assert [r.kind for r in records[:-1]] == [container.FRESH] * 5
    # damage block 2: every other block still decodes on its own
    packed[records[2].offset + 25] ^= 0xFF
    decoder = container.BlockDecoder(header.config)
    reader = __import__("io").BytesIO(bytes(packed[header.size:]))
    out = {}
    for r in container.read_records(reader, header, header.size):
        if isinstance(r, container.Block):
            try:
                out[r.index] = decoder.decode(r)
            except FormatError as exc:
                assert "block 2" in str(exc)
    assert sorted(out) == [0, 1, 3, 4]
    assert out[3] == data[3000:4000]


def test_the_encoders_progress_reports_the_payload_written_so_far():
    rng = np.random.default_rng(5)
    data = b"".join(b"GET /item/%d %d\n" % (rng.integers(10**6), rng.integers(100, 600)) for _ in range(400))
    calls = []
    record = container.BlockEncoder(SMALL).encode(data, progress=lambda done, coded: calls.append((done, coded)),
                                                   step=1000)
    assert [done for done, _ in calls] == list(range(1000, len(data), 1000)) + [len(data)]
    coded = [c for _, c in calls]
    assert coded == sorted(coded) and 0 < coded[0] and coded[-1] <= len(record)  # grows with the block
    assert coded[len(coded) // 2] < coded[-1]  # not only at the end: a progress line can show it mid-block


def test_the_header_names_the_package_version_that_wrote_it():
    import io
    from importlib import metadata

    header = container.read_header(io.BytesIO(compress(b"a line\n" * 10, SMALL)))
    assert header.build.startswith(f"seqd {metadata.version('seqd')}, numba ")


def test_each_byte_model_s_configuration_is_its_newest_frozen_preset():
    """Changing a byte model's defaults must add a row to its table of versions, or old files would decode with
    new settings: the GLNN byte model's bytes_default() is bytes-12, frozen, and BitsConfig() the bitwise
    model's newest; the default byte model is seqd compress's, and a file written today names its newest."""
    settings_now = json.loads(json.dumps(dataclasses.asdict(OnlineConfig.bytes_default())))
    assert settings_now == GLNN.versions.presets[GLNN.versions.preset] and GLNN.versions.preset == "bytes-12"
    assert dataclasses.asdict(BitsConfig()) == bitwise.PRESETS[bitwise.PRESET]
    assert list(bitwise.PRESETS)[-1] == bitwise.PRESET
    assert container.default_config() == BitsConfig() == DEFAULT.preset() and DEFAULT.config is BitsConfig
    for face in FACES:
        header = container.read_header(io.BytesIO(compress(b"x", face.preset())))
        assert header.preset == face.versions.preset and header.version == face.writes


@pytest.mark.parametrize("block_size, chain_size", [(1 << 20, None), (3000, None), (3000, 6000)])
def test_bitwise_files_round_trip_at_the_prequential_code_length(block_size, chain_size):
    """Format 4: the bitwise model's files decode to their input, their header names it, and a chain's payload
    is its prequential code length within a few bytes (the coder's split points, and its 4-byte flush and start
    in each block)."""
    data = contract.log_bytes(12000, 7) + bytes(range(256)) + b"\x00" * 500
    config = BitsConfig(table_bits=12, history_bits=14, match_bits=12)
    packed = compress(data, config, block_size=block_size, chain_size=chain_size)
    assert decompress(packed) == data
    reader = io.BytesIO(packed)
    header = container.read_header(reader)
    assert header.version == 4 and header.config == config and header.preset == bitwise.PRESET
    blocks = [r for r in container.read_records(reader, header, header.size) if isinstance(r, container.Block)]
    chains, start = [], 0
    for block in blocks:
        if block.kind == container.FRESH:
            chains.append([start, start, 0, 0])
        chains[-1][1] += block.length
        chains[-1][2] += len(block.payload)
        chains[-1][3] += 1
        start += block.length
    for first, end, payload, count in chains:
        bits = BitsLearner(config).learn(data[first:end]).sum()
        assert bits / 8 - 4 <= payload <= bits / 8 * 1.002 + 8 * count, (first, end, payload, bits / 8)


def test_a_header_s_learner_must_be_its_format_s():
    """Format 4 files are the bitwise model's ("learner": "bitwise"), formats 1 to 3 the GLNN byte model's."""
    bitwise_file = compress(b"a bitwise file\n" * 20, BitsConfig(table_bits=10, history_bits=10, match_bits=10))
    byte_file = compress(b"a byte model file\n" * 20, SMALL)
    assert byte_file[8] == 3 and bitwise_file[8] == 4

    def with_meta(packed: bytes, version: int, **changes) -> bytes:
        head = container._HEAD.size
        length = int.from_bytes(packed[12:16], "little")
        meta = {**json.loads(packed[head:head + length]), **changes}
        meta = {k: v for k, v in meta.items() if v is not None}
        body = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
        new = container._HEAD.pack(container.MAGIC, version, 0, len(body)) + body
        return new + zlib.crc32(new).to_bytes(4, "little") + packed[head + length + 4:]

    for packed, message in [
        (with_meta(byte_file, 4), "format 4 files are not coded by the online learner"),
        (with_meta(bitwise_file, 3), "format 3 files are not coded by the bitwise learner"),
        (with_meta(bitwise_file, 4, learner="neural"), "learner 'neural' is not one this seqd knows"),
        (with_meta(bitwise_file, 4, config={"table_bits": 30}), "table_bits must be in \\[10, 24\\]"),
        (with_meta(bitwise_file, 4, config={"context_orders": [1]}), "unknown setting 'context_orders'"),
        (with_meta(bitwise_file, 4, config={"units": 65}), "units must be in \\[0, 64\\]"),
        (with_meta(bitwise_file, 4, config={"runs": 1}), "runs must be true or false"),
        (with_meta(bitwise_file, 4, preset="bitwise-9"), "model preset 'bitwise-9' is newer"),
    ]:
        with pytest.raises(container.FormatError, match=message):
            decompress(packed)
    assert decompress(with_meta(bitwise_file, 4)) == b"a bitwise file\n" * 20


def _header_naming(preset: str, config: dict) -> bytes:
    """A file's header as another seqd would have written it: ``preset`` and the settings that differ."""
    body = json.dumps({"preset": preset, "config": config, "block_size": 1 << 20, "build": "elsewhere"},
                      sort_keys=True, separators=(",", ":")).encode()
    head = container._HEAD.pack(container.MAGIC, 2, 0, len(body)) + body  # the format those presets were written in
    return head + zlib.crc32(head).to_bytes(4, "little")


def test_a_file_with_seqd_0_3s_field_column_is_refused_and_a_newer_preset_asks_for_an_upgrade():
    """seqd 0.3 had a field column without the "same so far" part: a file whose model used it would decode
    to garbage (and fail its checksum) with this seqd's, so its header is refused, naming the version to use."""
    for preset in ("bytes-2", "bytes-3"):
        with pytest.raises(FormatError, match="field column of seqd 0.3.*decompress it with seqd 0.3"):
            container.read_header(io.BytesIO(_header_naming(preset, {"field_column_context": True})))
    before_12 = dict(context_step_floor=0.0)  # every voted symbol's context weights stepped before bytes-12
    before_11 = dict(before_12, history_bits=20, match_bits=18, context_bits=16,  # fixed tables before bytes-11
                     table_growth=False)
    before_10 = dict(before_11, close_escape=False)  # the escape kept until the window ended before bytes-10
    before_9 = dict(before_10, unit_selected_weights=False, probability_maps=False)  # no unit set, no maps before bytes-9
    rows_0_7 = dict(before_9, field_selecting_fields=1, field_selecting_positions=4)  # the field set's rows before bytes-8
    header = container.read_header(io.BytesIO(_header_naming("bytes-4", {})))
    assert header.config == OnlineConfig.bytes_default(field_selected_weights=False, number_context=False,
                                                       order2_selected_weights=False, **rows_0_7) \
        and header.preset == "bytes-4"
    assert container.read_header(io.BytesIO(_header_naming("bytes-3", {}))).config.field_column_context is False
    assert container.read_header(io.BytesIO(_header_naming("bytes-5", {}))).config \
        == OnlineConfig.bytes_default(number_context=False, order2_selected_weights=False, **rows_0_7)
    assert container.read_header(io.BytesIO(_header_naming("bytes-6", {}))).config \
        == OnlineConfig.bytes_default(order2_selected_weights=False, **rows_0_7)
    assert container.read_header(io.BytesIO(_header_naming("bytes-7", {}))).config \
        == OnlineConfig.bytes_default(**rows_0_7)
    assert container.read_header(io.BytesIO(_header_naming("bytes-8", {}))).config \
        == OnlineConfig.bytes_default(**before_9)
    assert container.read_header(io.BytesIO(_header_naming("bytes-9", {}))).config \
        == OnlineConfig.bytes_default(**before_10)
    assert container.read_header(io.BytesIO(_header_naming("bytes-10", {}))).config \
        == OnlineConfig.bytes_default(**before_11)
    assert container.read_header(io.BytesIO(_header_naming("bytes-11", {}))).config \
        == OnlineConfig.bytes_default(**before_12)
    with pytest.raises(FormatError, match="newer than this seqd knows: upgrade seqd"):
        container.read_header(io.BytesIO(_header_naming("bytes-99", {})))


@pytest.mark.skipif(not LOGS.is_dir(), reason="../shared/data/logs is absent: no real logs to round-trip")
@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")) if LOGS.is_dir() else [])
def test_round_trip_log_prefixes(name):
    data = (LOGS / name).read_bytes()[:20000]
    assert decompress(compress(data, SMALL, block_size=8192)) == data


@pytest.mark.slow
@pytest.mark.skipif(not LOGS.is_dir(), reason="../shared/data/logs is absent: no real logs to round-trip")
@pytest.mark.parametrize("name", sorted(p.name for p in LOGS.glob("*.log")) if LOGS.is_dir() else [])
def test_round_trip_whole_logs_default_model(name):
    data = (LOGS / name).read_bytes()
    assert decompress(compress(data)) == data


TARGET_DATA = b"".join(f"{i:05d} GET /item/{i * 31 % 977} 200 {i * 7 % 113}ms\n".encode() for i in range(800))
_SMALL_CODE = ("from seqd.core.online import OnlineConfig; "
               "small = OnlineConfig.bytes_default(context_bits=10, history_bits=12, match_bits=10); ")
GENERIC_BUILD = Early(  # compiles the kernels for a generic x86-64 CPU and writes a file there
    "generic target", "-c",
    "import sys; from seqd.core.container import compress, decompress; " + _SMALL_CODE
    + f"data = {TARGET_DATA!r}; packed = compress(data, small); assert decompress(packed) == data; "
    "open(sys.argv[1], 'wb').write(packed)", "{folder}/generic.sqd",
    env={"NUMBA_CPU_NAME": "generic", "NUMBA_CACHE_DIR": "{folder}/cache"})


@pytest.mark.early(GENERIC_BUILD)
def test_generic_and_host_cpu_targets_decode_each_others_files():
    """Numba compiles for the host CPU (AVX, FMA units...); a file written there decodes when the kernels
    are compiled for a generic x86-64 target, and a file written there decodes here, both bit for bit."""
    assert SMALL == OnlineConfig.bytes_default(context_bits=10, history_bits=12, match_bits=10)
    built = GENERIC_BUILD.result()  # the generic kernels compiled into the process's cache, a file written
    assert built.returncode == 0, built.stderr[-2000:]
    folder = Path(GENERIC_BUILD.folder)
    host_file = compress(TARGET_DATA, SMALL)
    (folder / "host.sqd").write_bytes(host_file)
    code = "import sys; from seqd.core.container import decompress; " \
           "sys.stdout.buffer.write(decompress(open(sys.argv[1], 'rb').read()))"
    proc = subprocess.run([sys.executable, "-c", code, str(folder / "host.sqd")], capture_output=True,
                          env=GENERIC_BUILD.env, timeout=1800)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout == TARGET_DATA
    generic_file = (folder / "generic.sqd").read_bytes()
    def blocks(packed):  # after the header, which names the CPU target that wrote it
        return packed[container.read_header(io.BytesIO(packed)).size:]
    assert blocks(generic_file) == blocks(host_file)  # the same learner, the same bits: the same blocks
    assert decompress(generic_file) == TARGET_DATA
