"""bench/baselines.py: the KT context model against a plain dictionary version, and the peers as they run here."""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import baselines  # noqa: E402
from baselines import compressed_bits, kt_code_length_bits  # noqa: E402

DECOMPRESS = {"gzip-9": ["gzip", "-dc"], "bzip2-9": ["bzip2", "-dc"], "xz-9e": ["xz", "-dc"], "zstd-19": ["zstd", "-dcq"]}


def naive_kt_bits(data: bytes, order: int) -> float:
    """Obviously correct: counts in dictionaries keyed by the context bytes themselves."""
    half_alphabet = len(set(data)) / 2
    pair, total = defaultdict(int), defaultdict(int)
    bits = 0.0
    for t, x in enumerate(data):
        context = data[max(0, t - order):t]
        bits -= math.log2((pair[context, x] + 0.5) / (total[context] + half_alphabet))
        pair[context, x] += 1
        total[context] += 1
    return bits


def samples():
    rng = np.random.default_rng(7)
    yield b"ab"
    yield b"abracadabra"
    yield rng.integers(0, 256, 500, dtype=np.uint8).tobytes()  # nearly every byte value, few repeats
    yield rng.integers(0, 3, 800, dtype=np.uint8).tobytes()  # small alphabet, many repeats
    yield rng.choice(np.frombuffer(b"ACGT\n", np.uint8), 600).tobytes()
    yield b"GET /index.html 200\n" * 40 + b"POST /login 302\n" * 15
    yield bytes(range(256)) * 3


@pytest.mark.parametrize("order", [0, 1, 2, 3])
@pytest.mark.parametrize("data", list(samples()), ids=lambda d: f"{len(d)}B")
def test_kt_matches_dictionary_reference(data, order):
    assert kt_code_length_bits(data, order) == pytest.approx(naive_kt_bits(data, order), rel=1e-9)


def test_kt_first_symbols():
    # order 0 on "ab": 1 bit for 'a' (1/2), then (0 + 1/2) / (1 + 1) = 1/4 for 'b'
    assert kt_code_length_bits(b"ab", order=0) == pytest.approx(3.0)
    # order 1: 'a' in the empty start context (1 bit), then 'b' in the fresh context "a" (1 bit)
    assert kt_code_length_bits(b"ab", order=1) == pytest.approx(2.0)


@pytest.mark.parametrize("order", [0, 1, 3, 7])
def test_kt_empty_input_costs_nothing(order):
    assert kt_code_length_bits(b"", order) == 0.0


@pytest.mark.parametrize("order", [0, 3])
def test_kt_repeated_byte_costs_below_one_bit_per_byte(order):
    assert kt_code_length_bits(b"x" * 1000, order) == 0.0  # S = {x}: every prediction is certain
    # with a second symbol in S the repeated byte still costs far less than a bit each after the first few
    data = b"x" * 1000 + b"y"
    head, whole = kt_code_length_bits(data[:10], order), kt_code_length_bits(data[:1000], order)
    assert whole - head < 0.1 * 990
    assert kt_code_length_bits(data, order) < len(data)


def test_kt_rejects_orders_it_cannot_key():
    with pytest.raises(ValueError, match="order"):
        kt_code_length_bits(b"abc", order=8)
    with pytest.raises(ValueError, match="order"):
        kt_code_length_bits(b"abc", order=-1)


def test_kt_peer_is_the_code_length_rounded_up():
    data = b"abracadabra" * 20
    assert compressed_bits("kt-o3", data) == math.ceil(kt_code_length_bits(data, 3))
    assert compressed_bits("kt-o0", data) == math.ceil(kt_code_length_bits(data, 0))


@pytest.mark.parametrize("name", list(DECOMPRESS))
def test_cli_peers_count_whole_bytes_and_round_trip(name):
    for tool in (baselines.TOOLS[name][0], DECOMPRESS[name][0]):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    data = b"2024-01-01 12:00:00 INFO  request served in 12 ms\n" * 50 + bytes(range(256))
    bits = compressed_bits(name, data)
    assert bits > 0 and bits % 8 == 0
    packed = subprocess.run(baselines.TOOLS[name], input=data, capture_output=True, check=True).stdout
    assert len(packed) * 8 == bits
    assert subprocess.run(DECOMPRESS[name], input=packed, capture_output=True, check=True).stdout == data


def test_ppmd_counts_whole_bytes_and_round_trips():
    pyppmd = pytest.importorskip("pyppmd", reason="pyppmd is not installed (pip install -e '.[bench]')")
    data = b"sshd[24200]: Failed password for invalid user webmaster from 173.234.31.186\n" * 30
    bits = compressed_bits("ppmd-o16", data)
    assert bits > 0 and bits % 8 == 0
    packed = pyppmd.compress(data, max_order=16, mem_size=256 << 20)
    assert len(packed) * 8 == bits
    assert pyppmd.decompress(packed, max_order=16, mem_size=256 << 20) == data


def test_missing_tool_gives_none_and_says_why(monkeypatch):
    monkeypatch.setitem(baselines.TOOLS, "gzip-9", ["no-such-compressor-here", "-9"])
    assert compressed_bits("gzip-9", b"abc") is None
    assert "no-such-compressor-here" in baselines.unavailable("gzip-9")
    rows = baselines.table([], peers=("gzip-9",))
    assert rows == []
    assert "Not measured here: gzip-9" in baselines.markdown(rows, peers=("gzip-9",))


def test_unknown_peer_is_an_error():
    with pytest.raises(ValueError, match="unknown peer"):
        compressed_bits("lz4-9", b"abc")


def test_table_rows_and_weighted_mean(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_bytes(b"alpha beta gamma\n" * 30)
    b.write_bytes(b"0123456789" * 7)
    rows = baselines.table([a, b], peers=("kt-o3", "kt-o0"))
    assert [(r["name"], r["bytes"]) for r in rows] == [("a.log", 510), ("b.log", 70)]
    assert rows[0]["kt-o3"] == pytest.approx(math.ceil(kt_code_length_bits(a.read_bytes(), 3)) / 510)
    mean = baselines.weighted_mean(rows, "kt-o0")
    assert mean == pytest.approx((rows[0]["kt-o0"] * 510 + rows[1]["kt-o0"] * 70) / 580)
    text = baselines.markdown(rows, peers=("kt-o3", "kt-o0"))
    assert "| a.log | 510 |" in text and "mean (weighted by size)" in text and baselines.LOGHUB in text


def test_main_without_logs_says_so_and_exits_zero(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(baselines, "LOGS", tmp_path / "absent")
    assert baselines.log_files() == []
    assert baselines.main([]) == 0
    assert "absent" in capsys.readouterr().out


def test_kt_o3_on_a_real_log():
    path = baselines.LOGS / "Apache_2k.log"
    if not path.is_file():
        pytest.skip(f"{path} is absent (the shared real-log samples are not on this machine)")
    data = path.read_bytes()
    assert kt_code_length_bits(data, 3) / len(data) == pytest.approx(0.737, abs=5e-4)
