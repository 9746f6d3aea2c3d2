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
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import default_model  # noqa: E402
import presets_on_logs  # noqa: E402
from baselines import log_files  # noqa: E402
from common import command_line, report  # noqa: E402

SEQD = [sys.executable, "-m", "seqd"]


def cmd_bits(args) -> int:
    text = presets_on_logs.table("bytes", "bitwise", labels={"bytes": "bytes-12"}, command=command_line("bitwise.py"))
    if text is None:
        print("bench/bitwise.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    report("bitwise_bits", text, args.write)
    return 0








def cmd_speed(args) -> int:
    if not log_files():
        print("bench/bitwise.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    lines = default_model.speed_lines("bitwise.py", args.reference, args.pairs, ["--preset", "bitwise"],
                                      ["--model", "bitwise"], name="bitwise")
    report("bitwise_speed", "\n".join(lines), args.write)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("bits", help="each log's bits/byte with the bitwise model and with bytes-12")
    b.set_defaults(run=cmd_bits)
    s = default_model.speed_parser(sub, cmd_speed)
    for q in (b, s):
        q.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = p.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
