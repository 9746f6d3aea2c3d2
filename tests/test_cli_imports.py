"""What the ``seqd`` program imports: the model (NumPy, Numba) only for the subcommands that need it.

Each case runs the program's ``main`` in a fresh interpreter and reads back
which NumPy and Numba modules that interpreter imported: ``seqd --help``,
``seqd --version`` and the client subcommands must import none, since a
health probe may run ``seqd stats`` every few seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest

from fake_seqd import FakeServer
from seqd.cli import COMMANDS, build_parser, main

HEAVY = ("numba", "numpy")

# Runs seqd's main with the given arguments, then prints (as the last line of stderr) the heavy modules it imported.
PROBE = f"""
import json, sys
from seqd.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r})
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


def probe(*argv: str) -> tuple[dict, str]:
    """(exit code and heavy modules imported, standard output) of ``seqd argv`` in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stderr.splitlines()[-1]), proc.stdout


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["-V"], ["--help", "eval"], ["stats", "--help"]])
def test_help_and_version_import_no_model(argv):
    result, out = probe(*argv)
    assert result == {"code": 0, "heavy": []}
    assert out.startswith("usage: seqd") or out.startswith("seqd ")


def test_client_commands_import_no_model(server, tmp_path):
    server.streams["web"] = bytearray(b"abc")
    result, out = probe("stats", "--api", server.endpoint)
    assert result == {"code": 0, "heavy": []}
    assert "symbols_learned" in out  # the daemon's answer, printed
    result, out = probe("stats", "web", "--api", server.endpoint)
    assert result == {"code": 0, "heavy": []} and "accepted" in out
    result, out = probe("predict", "web", "--api", server.endpoint, "--top", "2")
    assert result == {"code": 0, "heavy": []} and "position 3" in out
    log = tmp_path / "app.log"
    log.write_bytes(b"line one\n")
    result, out = probe("publish", "web", str(log), "--api", server.endpoint)
    assert result == {"code": 0, "heavy": []} and "published 9 symbols to web; position 12" in out
    result, out = probe("streams", "--api", server.endpoint)
    assert result == {"code": 0, "heavy": []} and "web" in out
    result, out = probe("drop", "web", "--yes", "--api", server.endpoint)
    assert result == {"code": 0, "heavy": []} and "dropped stream web" in out


def test_the_model_is_imported_for_the_commands_that_need_it(tmp_path):
    src = tmp_path / "a.log"
    src.write_bytes(b"x")
    result, _ = probe("compress", "-k", str(src), "-o", str(tmp_path / "a.sqd"))
    assert result["code"] == 0 and "numba" in result["heavy"]  # the probe would see a model if one were imported


def test_version_is_the_package_metadata(capsys):
    expected = f"seqd {metadata.version('seqd')}"
    for flag in ("--version", "-V"):
        with pytest.raises(SystemExit) as stop:
            main([flag])
        assert stop.value.code == 0 and capsys.readouterr().out.strip() == expected
    proc = subprocess.run([sys.executable, "-m", "seqd", "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == expected
    proc = subprocess.run([sys.executable, "-m", "seqd.cli", "-V"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == expected


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_subcommand_in_the_table_has_its_module(name, capsys):
    parser = build_parser(name)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args([name, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: seqd {name}") and "--help" in out


def test_usage_errors_exit_2_with_one_line_under_the_commands_usage(capsys):
    for argv, usage in (([], "usage: seqd [-h]"), (["nope"], "usage: seqd [-h]"),
                        (["stats", "--timeout", "soon"], "usage: seqd stats"), (["predict", "s", "--tpo", "3"],
                                                                                "usage: seqd predict")):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(usage) and err.splitlines()[-1].startswith("seqd"), err


def test_the_client_library_from_the_package_and_from_seqd_clients():
    code = ("import sys; import seqd.clients; cheap = not [m for m in sys.modules if m.split('.')[0] in "
            f"{HEAVY!r}]; from seqd import Client, AsyncClient; from seqd.clients import Client as C, "
            "AsyncClient as A; from seqd.clients.client import Client as C2; "
            "print(cheap, Client is C is C2, AsyncClient is A, sorted(m for m in sys.modules if m.split('.')[0] in "
            f"{HEAVY!r}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True", "True", "[]"]
