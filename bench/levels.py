"""``seqd compress -1 ... -9``: each level's model measured on the real logs, and on logs that chose nothing.

    python bench/levels.py              # writes docs/benchmarks.md ("Compression levels")
    python bench/levels.py --no-write

For each distinct model of the levels (the default byte model's face, ``core/faces.py``): the size-weighted bits per
byte of its ``.sqd`` files (whole containers) on the nine logs of
../shared/data/logs, compression and decompression speed on one core (CPU
time), the range over the files of its size against the default's (an
average hides the log where a level costs most), the learner's state when it
starts and at the most it grows to, and the memory decoding needs with the
default 4 MiB blocks (``limits.decoding_memory``, the figure
``--memory-limit`` is checked against).  Then the same sizes on held-out
logs: the benchmark machine's own apt and alternatives logs, which played no
part in choosing the levels (skipped where absent).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import held_out_files, log_files  # noqa: E402
from common import command_line, machine, report  # noqa: E402

from seqd.core import container  # noqa: E402
from seqd.core.faces import DEFAULT  # noqa: E402
from seqd.core.learners import first_resident_nbytes  # noqa: E402
from seqd.core.limits import DEFAULT_MEMORY_LIMIT, decoding_memory  # noqa: E402


def _levels_of(model: str) -> str:
    levels = [n for n, m in DEFAULT.level_names.items() if m == model]
    return f"-{levels[0]}" if len(levels) == 1 else f"-{levels[0]} … -{levels[-1]}"


def _measure(config, files: list[Path], timed: bool) -> dict:
    total = packed_total = 0
    c_cpu = d_cpu = 0.0
    sizes = {}
    for path in files:
        data = path.read_bytes()
        t0 = time.process_time()
        packed = container.compress(data, config)
        t1 = time.process_time()
        if timed:
            assert container.decompress(packed) == data, f"{path}: round trip failed"
        t2 = time.process_time()
        total += len(data)
        packed_total += len(packed)
        sizes[path.name] = len(packed)
        c_cpu += t1 - t0
        d_cpu += t2 - t1
    return {"bpb": 8 * packed_total / total, "c": total / c_cpu, "d": total / d_cpu if timed else None,
            "bytes": total, "sizes": sizes}


def _spread(sizes: dict, default: dict) -> str:
    """The smallest and largest ratio, file by file, of a level's sizes to the default's."""
    ratios = [sizes[name] / default[name] for name in sizes]
    return f"{min(ratios):.3f}–{max(ratios):.3f}"


def run() -> str:
    files = log_files()
    if not files:
        return "No logs: ../shared/data/logs is absent here."
    held = held_out_files()
    container.decompress(container.compress(b"warm up the kernels\n" * 10))
    rows = []
    for model, changes in DEFAULT.levels.items():
        config = DEFAULT.preset(**changes)
        container.compress(b"warm up\n" * 10, config)
        public = _measure(config, files, timed=True)
        own = _measure(config, held, timed=False) if held else None
        state, buffers = decoding_memory(config, container.DEFAULT_BLOCK_SIZE)
        rows.append({"model": model, "levels": _levels_of(model), "public": public, "held": own, "state": state,
                     "start": first_resident_nbytes(config), "decode": state + buffers})
        print(f"{model}: {public['bpb']:.4f} bits/byte, {public['c']:.0f} / {public['d']:.0f} B/s"
              + (f", held out {own['bpb']:.4f}" if own else ""), flush=True)
    default = next(r for r in rows if r["model"] == "default")
    mib = lambda n: f"{n / 2 ** 20:.1f}"  # noqa: E731
    lines = [f"Command: `{command_line('levels.py')}`  ", f"Machine: {machine()}  ",
             f"Public logs: the {len(files)} files of ../shared/data/logs ({default['public']['bytes']} bytes). "
             f"Held out: {', '.join(str(p) for p in held) or 'none on this machine'}"
             + (f" ({default['held']['bytes']} bytes)." if held else "."), "",
             "| level | model (changes to the default) | bits/byte | vs -6 | vs -6, file by file | compress B/s "
             "| decompress B/s | speed vs -6 | state MiB (start, most) | decoding MiB | held-out bits/byte | vs -6 "
             "| vs -6, file by file |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        changes = ", ".join(f"{k}={v}" for k, v in DEFAULT.levels[r["model"]].items()) or "—"
        p, h = r["public"], r["held"]
        lines.append(
            f"| {r['levels']} | {r['model']}: {changes} | {p['bpb']:.4f} | "
            f"{p['bpb'] / default['public']['bpb']:.3f} | {_spread(p['sizes'], default['public']['sizes'])} | "
            f"{p['c']:.0f} | {p['d']:.0f} | {p['c'] / default['public']['c']:.2f} | "
            f"{mib(r['start'])}, {mib(r['state'])} | {mib(r['decode'])} | "
            + (f"{h['bpb']:.4f} | {h['bpb'] / default['held']['bpb']:.3f} | "
               f"{_spread(h['sizes'], default['held']['sizes'])} |" if h else "— | — | — |"))
    lines += ["", "Bits per byte are whole `.sqd` files (header and framing included), size-weighted; speeds are "
              "CPU time on one core; 'decoding MiB' is the state plus the buffers of one 4 MiB block, what "
              f"`--memory-limit` (default {DEFAULT_MEMORY_LIMIT >> 30} GiB) is checked against."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args()
    report("compress_levels", run(), write=not args.no_write)


if __name__ == "__main__":
    main()
