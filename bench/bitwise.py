"""The bitwise byte model against ``bytes-12`` and against seqd 0.16: its bits per file, and its speed in paired
whole processes.

    python bench/bitwise.py bits [--write]                       # each log's bits/byte, bitwise and bytes-12
    python bench/bitwise.py speed --reference SEQD [--pairs 5] [--write]

``bits`` runs ``seqd eval --json`` of the nine public logs and of this
machine's own (the held-out logs, which choose nothing), once with the
``bitwise`` preset and once with ``bytes`` (``bytes-12``), a fresh learner
per file.  ``speed`` times three commands of this seqd against the same
commands of another (``--reference``: the ``seqd`` program of seqd 0.16 in a
venv of its own): ``seqd eval``, ``seqd compress -c -q`` of the nine logs and
``seqd decompress -c`` of the nine ``.sqd`` files each version wrote, as whole
processes in turn (new, old, new, old, ...), one warm-up pair then
``--pairs`` counted pairs, CPU time (user + system, from the kernel's
accounting of each child); and ``xz -9e`` of the same logs the same way.
Run nothing else heavy beside it.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import presets_on_logs  # noqa: E402
from baselines import log_files  # noqa: E402
from common import command_line, machine, report  # noqa: E402

SEQD = [sys.executable, "-m", "seqd"]


def cmd_bits(args) -> int:
    text = presets_on_logs.table("bytes", "bitwise", labels={"bytes": "bytes-12"}, command=command_line("bitwise.py"))
    if text is None:
        print("bench/bitwise.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    report("bitwise_bits", text, args.write)
    return 0


def _timed(cmd: list[str], stdout=subprocess.DEVNULL) -> float:
    """CPU seconds (user + system) of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')[-400:]}")
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _paired(new: list[str], old: list[str], pairs: int) -> tuple[list[float], list[float]]:
    _timed(new), _timed(old)  # the warm-up pair: kernels in the cache, files in the page cache
    a, b = [], []
    for _ in range(pairs):
        a.append(_timed(new))
        b.append(_timed(old))
    return a, b


def _span(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def cmd_speed(args) -> int:
    logs = [str(p) for p in log_files()]
    if not logs:
        print("bench/bitwise.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    reference = [args.reference]
    version = subprocess.run(reference + ["--version"], capture_output=True, text=True, check=True).stdout.strip()
    lines = [f"Command: `{command_line('bitwise.py')}`: each command below against the same work by {version} "
             f"(`{Path(args.reference).name}` of its own venv: `seqd eval LOGS`, `seqd compress -c -q LOGS`, "
             "`seqd decompress -c SQD`), as whole processes in turn (new, old, new, old, ...), one warm-up pair "
             f"then {args.pairs} counted pairs; CPU time (user + system) of each process, kernels loaded from "
             "the cache; `LOGS` is the nine public logs, `SQD` the nine `.sqd` files each version wrote of them  ",
             f"Machine: {machine()}", "",
             "| command | bitwise CPU s (median, range) | reference CPU s (median, range) | new / reference (median) "
             "| range of the pairs' ratios |", "|---|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        new_sqd, old_sqd = [], []
        for log in logs:  # each version's own .sqd files of the logs
            for cmd, out, name in ((SEQD + ["compress", "-c", "-q", "--model", "bitwise", log], new_sqd, "new"),
                                   (reference + ["compress", "-c", "-q", log], old_sqd, "old")):
                path = Path(tmp) / f"{Path(log).name}.{name}.sqd"
                with open(path, "wb") as f:
                    subprocess.run(cmd, stdout=f, check=True)
                out.append(str(path))
        sizes = sum(Path(p).stat().st_size for p in new_sqd)
        commands = [
            ("`seqd eval --preset bitwise LOGS`", SEQD + ["eval", "--preset", "bitwise", *logs],
             reference + ["eval", *logs]),
            ("`seqd compress -c -q --model bitwise LOGS`",
             SEQD + ["compress", "-c", "-q", "--model", "bitwise", *logs], reference + ["compress", "-c", "-q", *logs]),
            ("`seqd decompress -c SQD`", SEQD + ["decompress", "-c", *new_sqd],
             reference + ["decompress", "-c", *old_sqd]),
        ]
        for label, new, old in commands:
            a, b = _paired(new, old, args.pairs)
            ratios = [x / y for x, y in zip(a, b)]
            lines.append(f"| {label} | {_span(a)} | {_span(b)} | {statistics.median(ratios):.3f} | "
                         f"{min(ratios):.3f}–{max(ratios):.3f} |")
            print(lines[-1], flush=True)
        xz = shutil.which("xz")
        if xz:
            cat = ["sh", "-c", 'cat "$@" | xz -9e -c', "sh", *logs]
            x, c = _paired(cat, SEQD + ["compress", "-c", "-q", "--model", "bitwise", *logs], args.pairs)
            ratios = [cc / xx for xx, cc in zip(x, c)]
            lines += ["", f"`sh -c 'cat LOGS | xz -9e -c'` against `seqd compress -c -q --model bitwise LOGS`, "
                      f"paired the same way: xz {_span(x)} s; the bitwise compress takes "
                      f"{statistics.median(ratios):.1f} times xz -9e's CPU time ({min(ratios):.1f}–"
                      f"{max(ratios):.1f})."]
        total = sum(Path(p).stat().st_size for p in logs)
        lines += ["", f"The nine `.sqd` files of the bitwise model hold {sizes:,} bytes of {total:,}: "
                  f"{8 * sizes / total:.4f} bits/byte with every header and checksum."]
    report("bitwise_speed", "\n".join(lines), args.write)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("bits", help="each log's bits/byte with the bitwise model and with bytes-12")
    b.set_defaults(run=cmd_bits)
    s = sub.add_parser("speed", help="CPU time in paired whole processes against another seqd")
    s.add_argument("--reference", required=True, metavar="SEQD", help="the seqd program of the release to compare")
    s.add_argument("--pairs", type=int, default=5, help="counted pairs per command (default 5)")
    s.set_defaults(run=cmd_speed)
    for q in (b, s):
        q.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = p.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
