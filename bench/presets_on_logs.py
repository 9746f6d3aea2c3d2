"""Two presets of seqd on the logs, file by file: each one's bits per byte, their difference, and the second's speed.

    python bench/presets_on_logs.py glnn rehearsal            # print the table
    python bench/presets_on_logs.py glnn rehearsal --write    # also record it in docs/benchmarks.md

Each preset runs ``seqd eval --preset P --json`` once over the nine public
logs and this machine's own (the held-out logs, which choose nothing), a
fresh learner per file, one process at a time: prequential bits per byte,
and the size-weighted mean of each group of files.  The speed column is the
second preset's bytes per second as ``seqd eval`` reports it (the learner's
time, in a process that ran nothing else); read it as a figure of this
machine at that moment, not as a ratio (``bench/bitwise.py speed`` pairs
whole processes for that).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import held_out_files, log_files  # noqa: E402
from common import command_line, machine, report, seqd_json  # noqa: E402


def table(base: str, new: str, labels: dict | None = None, command: str | None = None) -> str | None:
    """The markdown table of presets ``base`` and ``new`` on the logs (None when the public logs are absent);
    ``labels`` names a preset's column otherwise than by its name; ``command`` is the table's Command line."""
    public, held = log_files(), held_out_files()
    if not public:
        return None
    label = {base: base, new: new, **(labels or {})}
    files = [str(p) for p in public + held]
    runs = {preset: seqd_json(["eval", "--preset", preset, *files]) for preset in (base, new)}
    rows = {preset: {Path(f["file"]).name: f for f in runs[preset]["files"]} for preset in runs}
    lines = [f"Command: `{command or command_line('presets_on_logs.py')}` (`seqd eval --preset {new} --json LOGS "
             f"HELD_OUT`, and `--preset {base}`: a fresh learner per file, prequential bits/byte)  ",
             f"Machine: {machine()}", "",
             f"| file | bytes | {label[base]} | {label[new]} | difference | {label[new]} bytes/s |",
             "|---|---:|---:|---:|---:|---:|"]
    for group, name in ((public, "public logs, size-weighted"), (held, "held-out logs, size-weighted")):
        if not group:
            continue
        bits, size = {base: 0.0, new: 0.0}, 0
        for path in group:
            old, now = rows[base][path.name], rows[new][path.name]
            a, b = old["bits"] / old["bytes"], now["bits"] / now["bytes"]
            lines.append(f"| {path.name} | {now['bytes']:,} | {a:.5f} | {b:.5f} | {b - a:+.5f} | "
                         f"{now['bytes_per_second']:,.0f} |")
            bits[base] += old["bits"]
            bits[new] += now["bits"]
            size += now["bytes"]
        a, b = bits[base] / size, bits[new] / size
        lines.append(f"| **{name}** | {size:,} | **{a:.5f}** | **{b:.5f}** | {b - a:+.5f} | |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base", help="the preset compared against (its column first)")
    p.add_argument("new", help="the preset measured")
    p.add_argument("--section", help="the docs/benchmarks.md section to write (default presets_on_logs_BASE_NEW)")
    p.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = p.parse_args(argv)
    text = table(args.base, args.new)
    if text is None:
        print("bench/presets_on_logs.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    report(args.section or f"presets_on_logs_{args.base}_{args.new}", text, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
