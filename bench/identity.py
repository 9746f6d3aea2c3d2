"""Bit identity between two installations of seqd: the same bits out of the learner and the coder.

    python bench/identity.py                                  # this checkout's figures only
    python bench/identity.py --reference /tmp/ref/.venv/bin/seqd --write

A change that only moves code (a refactoring, a new build of the kernels)
must leave every number the learner and the coder produce exactly as it was.
This script runs the ``seqd`` program of this checkout and, with
``--reference``, another ``seqd`` program (typically a checkout of the last
released commit in a virtual environment of its own, made with
``git worktree add /tmp/ref <commit> && python3 -m venv /tmp/ref/.venv &&
/tmp/ref/.venv/bin/pip install -e /tmp/ref``) over every log of
``../shared/data/logs``:

* ``seqd eval --json``: each file's total code length in bits under the
  GLNN byte model's ``OnlineConfig.bytes_default()`` (preset ``bytes-12``,
  the default byte model until seqd 0.21: ``--preset bytes-12`` from seqd
  0.22 on);
* the same under ``OnlineConfig()``, seed 000's GLNN alone (32 units, no
  context units; the settings that give it are in :data:`GLNN_SETTINGS`);
* ``seqd compress -c``: the SHA-256 of each file's ``.sqd`` of the same
  model, header included (the header names the seqd version that wrote it,
  so two installations of different versions differ there by design).

An installation is asked which way it takes settings (``--set`` from seqd
0.22 on, a flag per setting before), so any two can be compared.

Code lengths are compared as exact floating-point values (their ``repr``),
not rounded: one changed operation anywhere in a learner shows.  The exit
status is 1 when anything differs.  Timing is not measured here.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, command_line, machine, report  # noqa: E402

LOGS = ROOT.parent / "shared" / "data" / "logs"
# OnlineConfig() from the byte model's preset: no context units (seqd 0.6 and later), 32 units, and, from seqd 0.9,
# no probability maps
GLNN_SETTINGS = {"context_orders": "", "column_context": "false", "field_column_context": "false",
                 "word_context": "false", "indirect_context": "false", "number_context": "false", "match_min": "0",
                 "units": "32"}
MAPS_OFF = {"probability_maps": "false"}


def arguments(seqd: str) -> tuple[list[str], list[str], list[str]]:
    """The installation's ``eval`` arguments for bytes-12 and for OnlineConfig(), and its ``compress`` ones for
    bytes-12: by ``--set`` (seqd 0.22 on, where bytes-12 is a frozen preset), or a flag per setting (before, where
    it was the default)."""
    helps = subprocess.run([seqd, "eval", "--help"], capture_output=True, text=True).stdout
    if "--set" in helps:
        model = ["--preset", "bytes-12"]
        settings = {**GLNN_SETTINGS, **MAPS_OFF}
        return model, model + [a for k, v in settings.items() for a in ("--set", f"{k}={v}")], \
            ["--model", "bytes-12"]
    flags = []
    for key, value in GLNN_SETTINGS.items():
        flag = "--" + key.replace("_", "-")
        flags += [f"--no-{key.replace('_', '-')}"] if value == "false" else [flag, value]
    if "--no-probability-maps" in helps:
        flags.append("--no-probability-maps")
    return [], flags, []


def this_seqd() -> str:
    """The ``seqd`` program of the environment running this script."""
    beside = Path(sys.executable).parent / "seqd"
    found = str(beside) if beside.exists() else shutil.which("seqd")
    if not found:
        raise SystemExit("no seqd program beside this Python or on PATH: pip install -e . first")
    return found


def measure(seqd: str, files: list[Path]) -> dict:
    """Every figure of one installation: code lengths per file under both configurations, .sqd digests."""
    default, glnn, compressing = arguments(seqd)

    def eval_bits(extra: list[str]) -> dict[str, float]:
        proc = subprocess.run([seqd, "eval", "--json", *extra, *map(str, files)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"{seqd} eval failed:\n{proc.stderr}")
        return {Path(r["file"]).name: r["bits"] for r in json.loads(proc.stdout)["files"]}

    digests = {}
    for path in files:
        proc = subprocess.run([seqd, "compress", "-c", *compressing, str(path)], capture_output=True)
        if proc.returncode != 0:
            raise SystemExit(f"{seqd} compress failed on {path}:\n{proc.stderr.decode(errors='replace')}")
        digests[path.name] = (len(proc.stdout), hashlib.sha256(proc.stdout).hexdigest())
    return {"bytes_default": eval_bits(default), "glnn": eval_bits(glnn), "sqd": digests}


def table(files: list[Path], ours: dict, theirs: dict | None) -> tuple[str, bool]:
    def same(key, name):
        if theirs is None:
            return ""
        return " | yes" if ours[key][name] == theirs[key][name] else " | **no**"

    compare = theirs is not None
    head = ("| file | bytes_default() bits |" + (" equal |" if compare else "") + " OnlineConfig() bits |"
            + (" equal |" if compare else "") + " .sqd bytes | .sqd SHA-256 (first 16) |" + (" equal |" if compare else ""))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    identical = True
    for path in files:
        name = path.name
        size, digest = ours["sqd"][name]
        lines.append(f"| {name} | {ours['bytes_default'][name]!r}{same('bytes_default', name)} | "
                     f"{ours['glnn'][name]!r}{same('glnn', name)} | {size} | {digest[:16]}{same('sqd', name)} |")
        if compare:
            identical &= all(ours[key][name] == theirs[key][name] for key in ("bytes_default", "glnn", "sqd"))
    return "\n".join(lines), identical


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", metavar="SEQD", help="another installation's seqd program to compare with")
    parser.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = parser.parse_args(argv)
    files = sorted(LOGS.glob("*.log")) if LOGS.is_dir() else []
    if not files:
        print(f"no logs in {LOGS}: nothing to measure")
        return 0
    ours = measure(this_seqd(), files)
    theirs = measure(args.reference, files) if args.reference else None
    text, identical = table(files, ours, theirs)
    verdict = ""
    if theirs is not None:
        verdict = ("\n\nEvery code length and every `.sqd` file is identical to the reference's."
                   if identical else "\n\n**Something differs from the reference** (rows marked no).")
    report("identity", f"Command: `{command_line('identity.py', argv)}`  \nMachine: {machine()}\n\n{text}{verdict}",
           args.write)
    return 0 if theirs is None or identical else 1


if __name__ == "__main__":
    sys.exit(main())
