"""``seqd compress`` / ``seqd decompress`` from the command line: files, pipes, flags, errors, exit codes."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from seqd.cli import main
from seqd.core import container
from seqd.core.faces import DEFAULT

PRESET = DEFAULT.versions.preset  # what seqd compress writes today

LINES = b"".join(f"2026-11-22 08:{i % 60:02d}:{i % 59:02d} INFO worker-{i % 5} done job {i}\n".encode()
                 for i in range(400))
SEQD = [sys.executable, "-m", "seqd"]


def test_file_round_trip_like_gzip(tmp_path, capsys):
    src = tmp_path / "app.log"
    src.write_bytes(LINES)
    assert main(["compress", str(src), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["exit"] == 0 and len(report["files"]) == 1
    report = report["files"][0]
    packed = tmp_path / "app.log.sqd"
    assert not src.exists() and packed.exists()  # the input goes, as with gzip
    assert report["status"] == "ok" and report["error"] is None and report["output"] == str(packed)
    assert report["bytes_in"] == len(LINES) and report["bytes_out"] == packed.stat().st_size
    assert report["bits_per_byte"] < 2
    assert main(["decompress", str(packed)]) == 0
    assert src.read_bytes() == LINES and not packed.exists()


def test_keep_force_and_refusals(tmp_path, capsys):
    src = tmp_path / "app.log"
    src.write_bytes(LINES)
    assert main(["compress", "-k", str(src)]) == 0
    assert src.exists()
    assert main(["compress", "-k", str(src)]) == 2  # refuses to overwrite: a warning, as gzip's
    assert "already exists" in capsys.readouterr().err
    assert main(["compress", "-k", "-f", str(src)]) == 0
    assert main(["decompress", str(src)]) == 2  # skipped with a warning, as gzip's
    err = capsys.readouterr().err
    assert "unknown suffix" in err and err.count("\n") == 1 and str(src) in err
    out = tmp_path / "copy.log"
    assert main(["decompress", "-k", str(tmp_path / "app.log.sqd"), "-o", str(out)]) == 0
    assert out.read_bytes() == LINES
    assert main(["compress", str(tmp_path / "missing.log")]) == 1
    assert main(["compress", str(tmp_path)]) == 1
    with pytest.raises(SystemExit) as stop:
        main(["compress", "-k", "--block-size", "0", str(src)])
    assert stop.value.code == 2  # a usage error, argparse's code


@pytest.mark.parametrize("flip", ["header", "payload", "end"])
def test_damage_is_one_clear_line_and_leaves_no_output(tmp_path, capsys, flip):
    src = tmp_path / "app.log"
    src.write_bytes(LINES)
    assert main(["compress", "-k", str(src)]) == 0
    packed = tmp_path / "app.log.sqd"
    data = bytearray(packed.read_bytes())
    data[{"header": 20, "payload": len(data) // 2, "end": len(data) - 2}[flip]] ^= 0x40
    bad = tmp_path / "bad.sqd"
    bad.write_bytes(bytes(data))
    assert main(["decompress", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"seqd decompress: {bad}: ") and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "bad").exists() and bad.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_salvage_keeps_the_good_blocks_with_exit_code_2(tmp_path, capsys):
    src = tmp_path / "app.log"
    src.write_bytes(LINES)
    assert main(["compress", "-k", "--block-size", "4K", str(src)]) == 0
    packed = (tmp_path / "app.log.sqd").read_bytes()
    reader = io.BytesIO(packed)
    header = container.read_header(reader)
    last = [r for r in container.read_records(reader, header, header.size) if isinstance(r, container.Block)][-1]
    cut = tmp_path / "cut.sqd"
    cut.write_bytes(packed[:last.offset + 20])  # inside the last block's record: the blocks before it decode
    out = tmp_path / "cut.log"
    assert main(["decompress", str(cut), "-o", str(out)]) == 1
    assert not out.exists()
    assert main(["decompress", "--salvage", str(cut), "-o", str(out)]) == 2
    got = out.read_bytes()
    assert len(got) % 4096 == 0 and 0 < len(got) < len(LINES) and LINES.startswith(got)
    assert "warning" in capsys.readouterr().err


def test_pipes_and_threads(tmp_path):
    packed = subprocess.run(SEQD + ["compress", "-T", "2", "--block-size", "8K"], input=LINES,
                            capture_output=True, check=True).stdout
    assert packed.startswith(b"\x89SQD")
    plain = subprocess.run(SEQD + ["decompress", "-T", "2", "-"], input=packed, capture_output=True, check=True)
    assert plain.stdout == LINES and plain.stderr == b""


def test_follow_writes_decodable_blocks_while_the_file_grows(tmp_path):
    log = tmp_path / "live.log"
    log.write_bytes(LINES[:2000])
    out = tmp_path / "live.log.sqd"
    proc = subprocess.Popen(SEQD + ["compress", "--follow", "--flush-seconds", "0.5", str(log)],
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        with open(log, "ab") as f:
            f.write(LINES[2000:5000])
        # while it runs, what is on disk decodes (salvage: no end record yet) to a prefix of the log
        while time.monotonic() < deadline:
            time.sleep(0.5)
            got = subprocess.run(SEQD + ["decompress", "--salvage", "-c", str(out)], capture_output=True)
            if got.returncode == 2 and len(got.stdout) == 5000:
                break
        assert got.stdout == LINES[:5000]
        with open(log, "ab") as f:
            f.write(LINES[5000:])
        time.sleep(1.5)
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    assert log.exists()  # --follow keeps its input
    done = subprocess.run(SEQD + ["decompress", "-c", str(out)], capture_output=True)
    assert done.returncode == 0 and done.stdout == LINES


def test_refuses_binary_to_a_terminal_and_bad_flags(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["compress", "--threads", "x"])
    src = tmp_path / "a.log"
    src.write_bytes(b"x")
    assert main(["compress", "-k", "--threads=-1", str(src)]) == 1
    with pytest.raises(SystemExit):  # -1 is the fastest level, so "--threads -1" lacks its number, as in gzip
        main(["compress", "-k", "--threads", "-1", str(src)])
    assert main(["compress", "--follow", "-"]) == 1
    assert "needs one file" in capsys.readouterr().err


def test_out_of_disk_is_a_clear_error(tmp_path, capsys):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    src = tmp_path / "a.log"
    src.write_bytes(LINES)
    code = subprocess.run(SEQD + ["compress", "-c", str(src)], stdout=open("/dev/full", "wb"), stderr=subprocess.PIPE)
    assert code.returncode == 1
    assert code.stderr.startswith(b"seqd compress: standard output: No space left on device (free some space")
    assert code.stderr.count(b"\n") == 1


def test_verbose_test_names_each_file_its_size_and_blocks(tmp_path, capsys):
    one, two = tmp_path / "one.log", tmp_path / "two.log"
    one.write_bytes(b"a short log line\n" * 20)
    two.write_bytes(b"another log line\n" * 300)
    assert main(["compress", "-q", str(one)]) == 0
    assert main(["compress", "-q", "--block-size", "2K", str(two)]) == 0
    capsys.readouterr()
    assert main(["decompress", "-t", "-v", str(one) + ".sqd", str(two) + ".sqd"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith(f"{one}.sqd: OK (340 bytes, 1 block, ")
    assert lines[1].startswith(f"{two}.sqd: OK (5100 bytes, 3 blocks, ")


# -- levels -----------------------------------------------------------------------------------------

def _header_config(path):
    from seqd.core.container import read_header

    with open(path, "rb") as f:
        return read_header(f).config


def test_levels_pick_their_models_and_decode(tmp_path, capsys):
    from seqd.core.container import level_config

    data = b"".join(b"2026-11-24 05:%02d:%02d GET /item/%d 200\n" % (i % 60, i * 7 % 60, i * 31 % 97)
                    for i in range(600))
    src = tmp_path / "a.log"
    src.write_bytes(data)
    for case, (flags, level) in enumerate(((["-1"], 1), (["-9"], 9), (["--level", "4"], 4), ([], 6),
                                           (["-9", "-1"], 1), (["-k3"], 3))):
        out = tmp_path / f"a{case}.sqd"
        assert main(["compress", "-k", "-q", *flags, "-o", str(out), str(src)]) == 0, flags
        assert _header_config(out) == level_config(level), flags
        back = tmp_path / f"back{case}.log"
        assert main(["decompress", "-q", "-k", "-9", "-o", str(back), str(out)]) == 0  # -N is ignored with -d
        assert back.read_bytes() == data, flags
    assert main(["decompress", "-l", "--json", str(tmp_path / "a0.sqd"), str(tmp_path / "a1.sqd"),
                 str(tmp_path / "a3.sqd")]) == 0
    models = [f["model"] for f in json.loads(capsys.readouterr().out)["files"]]
    assert models == [f"{PRESET} fast", f"{PRESET} max", PRESET]


def test_a_level_out_of_range_is_a_usage_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["compress", "--level", "10", str(tmp_path / "a.log")])
    assert exc.value.code != 0
    assert "1 (fastest) to 9 (most compression)" in capsys.readouterr().err


def test_every_level_decodes_within_the_default_memory_limit():
    """A file of any level, with the default 4 MiB blocks, decodes under the default --memory-limit, two chains
    at once (-T 2)."""
    from seqd.core import limits

    for level in DEFAULT.level_names:
        model, buffers = limits.decoding_memory(container.level_config(level), container.DEFAULT_BLOCK_SIZE)
        assert model + buffers < limits.DEFAULT_MEMORY_LIMIT / 2, level
