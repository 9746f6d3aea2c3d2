"""``seqd compress`` on each case of ``bench/conformance.py``: seqd's own outcome, whatever gzip does.

Cases that cannot be built on this machine (a tmpfs and a device node need
root; an immutable directory needs chattr) are skipped with the reason.
"""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
import sys

import pytest

from seqd.cli import main
from seqd.core import container
from seqd.core.faces import DEFAULT

TEXT = b"".join(f"2026-11-22 08:{i % 60:02d}:{i % 59:02d} INFO worker-{i % 5} job {i}\n".encode() for i in range(300))
SEQD = [sys.executable, "-m", "seqd"]


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_bytes(TEXT)
    return tmp_path


def names(d) -> list[str]:
    return sorted(p.name for p in d.iterdir())


def test_every_name_is_an_input(here):
    assert main(["compress", "-f", "a.log", "b.log"]) == 0  # not "compress a.log into b.log"
    assert names(here) == ["a.log.sqd", "b.log.sqd"]
    assert main(["decompress", "a.log.sqd", "b.log.sqd"]) == 0
    assert (here / "a.log").read_bytes() == TEXT == (here / "b.log").read_bytes()


def test_levels_as_gzip_takes_them(here):
    assert main(["compress", "-1", "a.log"]) == 0 and names(here) == ["a.log.sqd", "b.log"]
    assert main(["compress", "-9k", "b.log"]) == 0 and names(here) == ["a.log.sqd", "b.log", "b.log.sqd"]
    assert main(["decompress", "-f", "a.log.sqd", "b.log.sqd"]) == 0
    assert (here / "a.log").read_bytes() == TEXT == (here / "b.log").read_bytes()


def test_keep_and_existing_output(here, capsys):
    assert main(["compress", "-k", "a.log"]) == 0 and (here / "a.log").exists()
    (here / "b.log.sqd").write_bytes(b"precious")
    assert main(["compress", "b.log"]) == 2
    assert (here / "b.log.sqd").read_bytes() == b"precious" and (here / "b.log").exists()
    assert "seqd compress: b.log.sqd: already exists; not overwritten (use -f" in capsys.readouterr().err
    assert main(["compress", "-f", "b.log"]) == 0 and not (here / "b.log").exists()


def test_stdout_with_several_inputs_decodes_back_to_their_concatenation(here):
    both = subprocess.run(SEQD + ["compress", "-c", "a.log", "b.log"], cwd=here, capture_output=True, check=True)
    assert names(here) == ["a.log", "b.log"]
    back = subprocess.run(SEQD + ["decompress", "-c"], input=both.stdout, capture_output=True, check=True)
    assert back.stdout == TEXT + TEXT
    bad = subprocess.run(SEQD + ["decompress", "-c"], input=both.stdout + b"junk", capture_output=True)
    assert bad.returncode == 1 and b"unexpected data after the end record" in bad.stderr


def test_output_option_and_stdin(here, capsys):
    assert main(["compress", "-o", "out", "a.log"]) == 0
    assert names(here) == ["b.log", "out"]
    assert main(["compress", "-o", "x", "b.log", "out"]) == 1  # -o names one output
    assert "-o names the output of a single input" in capsys.readouterr().err
    piped = subprocess.run(SEQD + ["compress"], input=TEXT, capture_output=True, check=True)
    assert container.decompress(piped.stdout) == TEXT


def test_mode_and_times_carry_over_both_ways(here):
    os.chmod("a.log", 0o600)
    os.utime("a.log", ns=(1_600_000_000_123_456_789, 1_600_000_000_987_654_321))
    assert main(["compress", "a.log"]) == 0
    st = os.stat("a.log.sqd")
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_mtime_ns == 1_600_000_000_987_654_321
    assert main(["decompress", "a.log.sqd"]) == 0
    st = os.stat("a.log")
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_mtime_ns == 1_600_000_000_987_654_321


def test_test_and_list(here, capsys):
    assert main(["compress", "-k", "--block-size", "4K", "a.log"]) == 0
    capsys.readouterr()
    assert main(["compress", "-t", "-v", "a.log.sqd"]) == 0
    assert "a.log.sqd: OK" in capsys.readouterr().err
    assert main(["decompress", "-l", "--json", "a.log.sqd"]) == 0
    listed = json.loads(capsys.readouterr().out)["files"][0]
    assert listed["bytes_out"] == len(TEXT) and listed["bytes_in"] == os.path.getsize("a.log.sqd")
    assert listed["blocks"] == -(-len(TEXT) // 4096) and listed["model"] == DEFAULT.versions.preset
    assert listed["written_by"].startswith("seqd ")
    data = bytearray((here / "a.log.sqd").read_bytes())
    data[-13 - 8] ^= 0x40  # in the last block's payload (the end record is the last 13 bytes)
    (here / "bad.sqd").write_bytes(bytes(data))
    assert main(["decompress", "-t", "bad.sqd"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("seqd decompress: bad.sqd: block ") and err.count("\n") == 1
    assert names(here) == ["a.log", "a.log.sqd", "b.log", "bad.sqd"]  # -t writes nothing


def test_json_has_one_shape_and_holds_errors(here, capsys):
    keys = None
    for argv in (["compress", "-k", "a.log"], ["decompress", "-t", "a.log.sqd"], ["decompress", "-l", "a.log.sqd"],
                 ["decompress", "-k", "-f", "a.log.sqd"], ["compress", "nope.log"]):
        main([*argv, "--json"])
        report = json.loads(capsys.readouterr().out)
        file = report["files"][0]
        keys = keys or list(file)
        assert list(file) == keys and set(report) == {"files", "exit"}
    assert file["status"] == "error" and "nope.log" in file["error"] and report["exit"] == 1
    for key in ("input", "output", "bytes_in", "bytes_out", "bits_per_byte", "seconds", "cpu_seconds", "status",
                "error", "warnings"):
        assert key in keys


def test_several_files_go_on_after_an_error_with_the_worst_code(here, capsys):
    (here / "x.sqd").write_bytes(b"x")
    assert main(["compress", "-k", "nope.log", "x.sqd", "a.log"]) == 1  # an error beats a warning
    assert (here / "a.log.sqd").exists()
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("seqd compress: nope.log: No such file") and "already has the .sqd suffix" in err[1]


@pytest.mark.parametrize("argv, code, text", [
    (["compress", "sub"], 1, "sub: is a directory"),
    (["compress", "nope.log"], 1, "nope.log: No such file or directory"),
    (["compress", "x.sqd"], 2, "x.sqd: already has the .sqd suffix -- unchanged"),
    (["decompress", "a.log"], 2, "a.log: unknown suffix"),
    (["compress", "l.log"], 1, "l.log: is a symbolic link"),
])
def test_refusals_name_the_file(here, capsys, argv, code, text):
    (here / "sub").mkdir()
    (here / "x.sqd").write_bytes(b"x")
    (here / "l.log").symlink_to("a.log")
    before = names(here)
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.startswith(f"seqd {argv[0]}: {text}") and err.count("\n") == 1
    assert names(here) == before


def test_a_file_named_like_an_option(here):
    (here / "-x").write_bytes(TEXT)
    assert main(["compress", "--", "-x"]) == 0 and (here / "-x.sqd").exists()


def test_symbolic_links_need_force(here):
    (here / "l.log").symlink_to("a.log")
    assert main(["compress", "-f", "-k", "l.log"]) == 0  # -f follows an input link
    assert container.decompress((here / "l.log.sqd").read_bytes()) == TEXT
    (here / "b.log.sqd").symlink_to("a.log")
    assert main(["compress", "b.log"]) == 2 and (here / "b.log.sqd").is_symlink()
    assert main(["compress", "-f", "b.log"]) == 0  # the link is replaced, not its target
    assert not (here / "b.log.sqd").is_symlink() and (here / "a.log").read_bytes() == TEXT


def test_special_files(here):
    os.mkfifo("f")
    assert main(["compress", "f"]) == 2 and names(here) == ["a.log", "b.log", "f"]
    assert main(["compress", "-k", "-o", "/dev/null", "a.log"]) == 0  # written into, kept
    assert os.path.exists("/dev/null") and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert main(["compress", "-o", "/dev/null", "a.log"]) == 0
    assert (here / "a.log").exists()  # the data went nowhere that keeps it: the input stays


def test_fifo_as_output_is_written_into(here):
    os.mkfifo("a.log.sqd")
    reader = subprocess.Popen(["cat", "a.log.sqd"], cwd=here, stdout=subprocess.PIPE)
    assert main(["compress", "-f", "a.log"]) == 0
    assert container.decompress(reader.communicate(timeout=60)[0]) == TEXT
    assert stat.S_ISFIFO(os.lstat("a.log.sqd").st_mode) and (here / "a.log").exists()


def test_device_node_as_output_is_kept(here):
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    os.mknod("a.log.sqd", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    assert main(["compress", "-f", "-k", "a.log"]) == 0
    assert stat.S_ISCHR(os.lstat("a.log.sqd").st_mode)


def test_unreadable_input(here, capsys):
    if os.geteuid() == 0:
        pytest.skip("root reads a mode-000 file: permission is not enforced")
    os.chmod("a.log", 0)
    assert main(["compress", "a.log"]) == 1
    assert "a.log: Permission denied" in capsys.readouterr().err


def test_read_only_directory_leaves_nothing(here, capsys):
    if subprocess.run(["chattr", "+i", str(here)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        assert main(["compress", "a.log"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("seqd compress: a.log.sqd: Operation not permitted") and err.count("\n") == 1
    finally:
        subprocess.run(["chattr", "-i", str(here)], check=True)
    assert names(here) == ["a.log", "b.log"]


@pytest.mark.parametrize("options", ["size=64k", "size=1m,nr_inodes=2"])
def test_disk_full_leaves_nothing(tmp_path, capsys, options):
    small = tmp_path / "small"
    small.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(small)],
                                           capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    try:
        (small / "a.log").write_bytes(os.urandom(48 << 10))
        assert main(["compress", str(small / "a.log")]) == 1
        err = capsys.readouterr().err
        assert f"{small / 'a.log.sqd'}: No space left on device (free some space" in err and err.count("\n") == 1
        assert names(small) == ["a.log"]
    finally:
        subprocess.run(["umount", str(small)], check=True)


def _on_terminal(argv: list[str], cwd) -> tuple[int, bytes]:
    """Run seqd with its standard input and output on a new pseudo-terminal: (exit code, what it printed)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(SEQD + argv, cwd=cwd, stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    return proc.wait(timeout=60), out


def test_no_binary_data_to_or_from_a_terminal(here):
    code, out = _on_terminal(["compress", "-c", "a.log"], here)
    assert code == 1 and b"compressed data not written to a terminal; use -f" in out and b"\x89SQD" not in out
    code, out = _on_terminal(["decompress"], here)
    assert code == 1 and b"compressed data not read from a terminal; use -f" in out


def test_version_option(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["compress", "-V"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("seqd ")


def test_a_finer_progress_step_codes_the_same_bits():
    config = container.default_config()
    coarse = container.BlockEncoder(config).encode(TEXT)
    fine = container.BlockEncoder(config).encode(TEXT, progress=lambda k, coded: None, step=1 << 10)
    assert coarse == fine
