"""The default byte model (the bitwise model since seqd 0.22) against its elders and its peers: bits, memory, speed.

    python bench/default_model.py bits [--write]        # each log, bytes-12, bitwise-2 and the default
    python bench/default_model.py memory [--write]      # the nine logs three times; a new stream's state
    python bench/default_model.py text DIR [--write]    # a real text of 8 MiB or more (not a log), and its repeat
    python bench/default_model.py speed --reference SEQD [--pairs 5] [--write]

* ``bits``: ``seqd eval --json`` of the nine public logs and of this
  machine's own (the held-out logs, which choose nothing), a fresh learner
  per file, once per preset: ``bytes-12`` (the default to seqd 0.21),
  ``bitwise-2`` (seqd 0.21's bitwise model) and ``bytes`` (today's
  default); then the ``.sqd`` files of the nine logs, one per log, with
  every header and checksum.
* ``memory``: one learner of each model fed the nine logs back to back three
  times (passes 2 and 3: what a repeat costs, in bits and CPU time),
  ``seqd compress`` of that file (its size, and its CPU time against
  ``--model bytes-12``, paired), and what a new stream of each model takes
  in memory (``learner_store.resident_bytes``, what a daemon counts).
* ``text``: a real text of 8 MiB or more that is no log, from ``DIR``
  (``files``: the Node.js API documentation's ``all.html``, 8.0 MiB, where
  installed): ``seqd compress`` of it by each model beside ``xz -9e``,
  ``zstd -19 --long=27`` and PPMd order 16; then the same text followed by
  its first MiB again, and what the repeat costs each model.
* ``speed``: three commands with default options against the same commands
  of another seqd (``--reference``: the ``seqd`` program of seqd 0.16 in a
  venv of its own): ``seqd eval LOGS``, ``seqd compress -c -q LOGS`` and
  ``seqd decompress -c SQD`` of each version's own files, as whole processes
  in turn (new, old, new, old, ...), one warm-up pair then ``--pairs``
  counted pairs, CPU time (user + system) of each process; and ``xz -9e`` of
  the same logs the same way.

Run nothing else heavy beside ``speed`` and the CPU columns.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import held_out_files, log_files  # noqa: E402
from common import command_line, machine, paired_cpu, report, seqd_json, span  # noqa: E402

SEQD = [sys.executable, "-m", "seqd"]
MIB = 1 << 20
PRESETS = ("bytes-12", "bitwise-2", "bytes")  # the GLNN byte model, seqd 0.21's bitwise one, today's default
LABEL = {"bytes-12": "bytes-12", "bitwise-2": "bitwise-2", "bytes": "default (bitwise-3)"}
TEXTS = [Path("/usr/share/doc/nodejs/api/all.html")]  # real texts of 8 MiB or more that chose nothing here








def _compressed(cmd: list[str]) -> int:
    return len(subprocess.run(cmd, capture_output=True, check=True).stdout)


def cmd_bits(args) -> int:
    public, held = log_files(), held_out_files()
    if not public:
        print("bench/default_model.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    files = [str(p) for p in public + held]
    runs = {p: {Path(f["file"]).name: f for f in seqd_json(["eval", "--preset", p, *files])["files"]} for p in PRESETS}
    head = " | ".join(LABEL[p] for p in PRESETS)
    lines = [f"Command: `{command_line('default_model.py')}` (`seqd eval --preset P --json LOGS HELD_OUT` for each "
             "preset P: a fresh learner per file, prequential bits/byte)  ", f"Machine: {machine()}", "",
             f"| file | bytes | {head} | default − bitwise-2 | default bytes/s |",
             "|---|---:|" + "---:|" * len(PRESETS) + "---:|---:|"]
    for group, name in ((public, "public logs, size-weighted"), (held, "held-out logs, size-weighted")):
        if not group:
            continue
        bits, size = {p: 0.0 for p in PRESETS}, 0
        for path in group:
            row = {p: runs[p][path.name] for p in PRESETS}
            rates = [row[p]["bits"] / row[p]["bytes"] for p in PRESETS]
            lines.append(f"| {path.name} | {row['bytes']['bytes']:,} | " + " | ".join(f"{r:.5f}" for r in rates)
                         + f" | {rates[-1] - rates[1]:+.5f} | {row['bytes']['bytes_per_second']:,.0f} |")
            for p in PRESETS:
                bits[p] += row[p]["bits"]
            size += row["bytes"]["bytes"]
        rates = [bits[p] / size for p in PRESETS]
        lines.append(f"| **{name}** | {size:,} | " + " | ".join(f"**{r:.5f}**" for r in rates)
                     + f" | {rates[-1] - rates[1]:+.5f} | |")
    with tempfile.TemporaryDirectory() as tmp:
        sizes = {}
        for preset in PRESETS:
            model = [] if preset == "bytes" else ["--model", preset]
            sizes[preset] = sum(_compressed(SEQD + ["compress", "-c", "-q", *model, str(p)]) for p in public)
    total = sum(p.stat().st_size for p in public)
    lines += ["", "The nine `.sqd` files, one per log, with every header and checksum (`seqd compress -c -q "
              "[--model P] LOG`): " + "; ".join(f"{LABEL[p]} {sizes[p]:,} bytes, {8 * sizes[p] / total:.4f} "
                                                 "bits/byte" for p in PRESETS) + "."]
    report("default_bits", "\n".join(lines), args.write)
    return 0


_PASSES = r"""
import json, sys, time
import numpy as np
from seqd.core import faces
from seqd.daemon.learner_store import resident_bytes
preset, path = sys.argv[1], sys.argv[2]
face = faces.face_of_preset(preset) or faces.DEFAULT
config = face.preset(None if preset == "bytes" else preset)
data = np.frombuffer(open(path, "rb").read(), np.uint8).astype(np.int64)
learner = face.learner(config)
new = resident_bytes(config)
passes = []
n = len(data) // 3
for k in range(3):
    t0 = time.process_time()
    bits = learner.learn(data[k * n:(k + 1) * n])
    passes.append({"bits": float(bits.sum()), "cpu": time.process_time() - t0})
print(json.dumps({"passes": passes, "bytes": n, "new": new, "resident": learner.resident_bytes,
                  "full": learner.state_bytes}))
"""


def _passes(preset: str, path: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _PASSES, preset, str(path)], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cmd_memory(args) -> int:
    public = log_files()
    if not public:
        print("bench/default_model.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    nine = b"".join(p.read_bytes() for p in public)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nine-x3.log"
        path.write_bytes(nine * 3)
        lines = [f"Command: `{command_line('default_model.py')}`  ", f"Machine: {machine()}", "",
                 f"One learner of each model, the nine logs back to back ({len(nine):,} bytes) three times "
                 "(prequential bits/byte and CPU seconds of each pass, one process each); the memory a new "
                 "stream of the model takes in a daemon (its learner and recent code lengths), and the learner's "
                 "at the end, in memory and at its full size:", "",
                 "| model | pass 1 | pass 2 | pass 3 | CPU s, pass 1 / 2 / 3 | passes 2+3 CPU / pass 1 | new stream MiB "
                 "| at the end MiB (full) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for preset in PRESETS:
            r = _passes(preset, path)
            bpb = [p["bits"] / r["bytes"] for p in r["passes"]]
            cpu = [p["cpu"] for p in r["passes"]]
            lines.append(f"| {LABEL[preset]} | {bpb[0]:.4f} | {bpb[1]:.4f} | {bpb[2]:.4f} | "
                         f"{cpu[0]:.1f} / {cpu[1]:.1f} / {cpu[2]:.1f} | {(cpu[1] + cpu[2]) / cpu[0]:.2f} | "
                         f"{r['new'] / MIB:.1f} | {r['resident'] / MIB:.1f} ({r['full'] / MIB:.1f}) |")
            print(lines[-1], flush=True)
        sizes = {p: _compressed(SEQD + ["compress", "-c", "-q"] + ([] if p == "bytes" else ["--model", p])
                                + [str(path)]) for p in PRESETS}
        new, old = paired_cpu(SEQD + ["compress", "-c", "-q", str(path)],
                           SEQD + ["compress", "-c", "-q", "--model", "bytes-12", str(path)], args.pairs)
        ratios = [a / b for a, b in zip(new, old)]
    lines += ["", f"`seqd compress -c -q [--model P]` of that file ({3 * len(nine):,} bytes): "
              + "; ".join(f"{LABEL[p]} {sizes[p]:,} bytes" for p in PRESETS)
              + f". Its CPU time, the default against `--model bytes-12`, {args.pairs} pairs of whole processes "
              f"in turn: {span(new, 1)} s against {span(old, 1)} s, ratio {statistics.median(ratios):.3f} "
              f"({min(ratios):.3f}–{max(ratios):.3f})."]
    report("default_memory", "\n".join(lines), args.write)
    return 0


def _peers(path: Path) -> dict:
    """Sizes of the peers' output for ``path``: xz -9e, zstd -19 --long=27 (where installed), PPMd order 16."""
    out = {}
    if shutil.which("xz"):
        out["xz -9e"] = _compressed(["xz", "-9e", "-c", str(path)])
    if shutil.which("zstd"):
        out["zstd -19 --long=27"] = _compressed(["zstd", "-19", "--long=27", "-c", "-q", str(path)])
    try:
        import pyppmd
        out["PPMd order 16"] = len(pyppmd.compress(path.read_bytes(), max_order=16, mem_size=256 << 20))
    except ImportError:
        pass
    return out


_REPEAT = r"""
import json, sys
import numpy as np
from seqd.core import faces
preset, path, tail = sys.argv[1], sys.argv[2], int(sys.argv[3])
face = faces.face_of_preset(preset) or faces.DEFAULT
learner = face.learner(face.preset(None if preset == "bytes" else preset))
data = np.frombuffer(open(path, "rb").read(), np.uint8).astype(np.int64)
head = float(learner.learn(data[:-tail]).sum())
print(json.dumps({"head": head, "tail": float(learner.learn(data[-tail:]).sum())}))
"""


def cmd_text(args) -> int:
    texts = [p for p in (TEXTS if not args.files else map(Path, args.files)) if p.is_file()]
    if not texts:
        print("bench/default_model.py: no text of 8 MiB here (the Node.js API documentation's all.html)",
              file=sys.stderr)
        return 1
    lines = [f"Command: `{command_line('default_model.py')}`  ", f"Machine: {machine()}", "",
             "| file | bytes | compressor | compressed bytes | bits/byte | vs xz -9e |", "|---|---:|---|---:|---:|---:|"]
    repeats = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in texts:
            sizes = {LABEL[p]: _compressed(SEQD + ["compress", "-c", "-q"] + ([] if p == "bytes" else ["--model", p])
                                           + [str(path)]) for p in PRESETS}
            sizes.update(_peers(path))
            n = path.stat().st_size
            xz = sizes.get("xz -9e")
            for name, size in sizes.items():
                lines.append(f"| {path.name} | {n:,} | {name} | {size:,} | {8 * size / n:.4f} | "
                             + (f"{size / xz:.3f} |" if xz else "— |"))
            print("\n".join(lines[-len(sizes):]), flush=True)
            data = path.read_bytes()
            again = Path(tmp) / f"{path.name}+first-MiB"
            again.write_bytes(data + data[:MIB])
            for preset in PRESETS:
                proc = subprocess.run([sys.executable, "-c", _REPEAT, preset, str(again), str(MIB)],
                                      capture_output=True, text=True, check=True)
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                size = _compressed(SEQD + ["compress", "-c", "-q"] + ([] if preset == "bytes" else ["--model", preset])
                                   + [str(again)])
                repeats.append(f"| {path.name} + its first MiB | {len(data) + MIB:,} | {LABEL[preset]} | "
                               f"{r['tail'] / MIB:.4f} | {r['tail'] / 8:,.0f} | {size:,} |")
                print(repeats[-1], flush=True)
            peers = _peers(again)
            repeats += [f"| {path.name} + its first MiB | {len(data) + MIB:,} | {name} | | | {size:,} |"
                        for name, size in peers.items()]
    lines += ["", "The same text followed by its first MiB again: what the repeat costs each model (prequential "
              "bits/byte of the last MiB, one learner over the whole), and the whole file's `seqd compress`:", "",
              "| file | bytes | model | the repeat, bits/byte | the repeat, bytes | whole file compressed |",
              "|---|---:|---|---:|---:|---:|", *repeats]
    report("default_text", "\n".join(lines), args.write)
    return 0


def speed_lines(script: str, reference: str, pairs: int, eval_flags=(), compress_flags=(),
                name: str = "new") -> list[str]:
    """The rows of a speed table: ``seqd eval``, ``seqd compress -c -q`` and ``seqd decompress -c`` of the nine
    logs by this seqd (with ``eval_flags`` and ``compress_flags``) against the same commands of ``reference``,
    in paired whole processes, then ``xz -9e`` the same way, and what the ``.sqd`` files hold."""
    logs = [str(p) for p in log_files()]
    version = subprocess.run([reference, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    ev, co = ["eval", *eval_flags], ["compress", "-c", "-q", *compress_flags]
    shown = {"eval": " ".join(["seqd", *ev]), "compress": " ".join(["seqd", *co])}
    lines = [f"Command: `{command_line(script)}`: each command below against the same work by {version} "
             f"(`{Path(reference).name}` of its own venv, default options), as whole processes in turn (new, old, "
             f"new, old, ...), one warm-up pair then {pairs} counted pairs; CPU time (user + system) of each "
             "process, kernels loaded from the cache; `LOGS` is the nine public logs, `SQD` the nine `.sqd` files "
             "each version wrote of them  ", f"Machine: {machine()}", "",
             f"| command | {name} CPU s (median, range) | reference CPU s (median, range) | new / reference (median) "
             "| range of the pairs' ratios |", "|---|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        new_sqd, old_sqd = [], []
        for log in logs:  # each version's own .sqd files of the logs
            for cmd, out, who in ((SEQD + co + [log], new_sqd, "new"),
                                  ([reference, "compress", "-c", "-q", log], old_sqd, "old")):
                path = Path(tmp) / f"{Path(log).name}.{who}.sqd"
                with open(path, "wb") as f:
                    subprocess.run(cmd, stdout=f, check=True)
                out.append(str(path))
        for label, new, old in ((f"`{shown['eval']} LOGS`", SEQD + ev + logs, [reference, "eval", *logs]),
                                (f"`{shown['compress']} LOGS`", SEQD + co + logs,
                                 [reference, "compress", "-c", "-q", *logs]),
                                ("`seqd decompress -c SQD`", SEQD + ["decompress", "-c", *new_sqd],
                                 [reference, "decompress", "-c", *old_sqd])):
            a, b = paired_cpu(new, old, pairs)
            ratios = [x / y for x, y in zip(a, b)]
            lines.append(f"| {label} | {span(a)} | {span(b)} | {statistics.median(ratios):.3f} | "
                         f"{min(ratios):.3f}–{max(ratios):.3f} |")
            print(lines[-1], flush=True)
        if shutil.which("xz"):
            cat = ["sh", "-c", 'cat "$@" | xz -9e -c', "sh", *logs]
            x, c = paired_cpu(cat, SEQD + co + logs, pairs)
            ratios = [cc / xx for xx, cc in zip(x, c)]
            lines += ["", f"`sh -c 'cat LOGS | xz -9e -c'` against `{shown['compress']} LOGS`, paired the same "
                      f"way: xz {span(x)} s; seqd compress takes {statistics.median(ratios):.1f} times xz -9e's CPU "
                      f"time ({min(ratios):.1f}–{max(ratios):.1f})."]
        sizes, total = sum(Path(p).stat().st_size for p in new_sqd), sum(Path(p).stat().st_size for p in logs)
        lines += ["", f"The nine `.sqd` files hold {sizes:,} bytes of {total:,}: {8 * sizes / total:.4f} bits/byte "
                  "with every header and checksum."]
    return lines


def speed_parser(sub, run):
    """The ``speed`` subcommand's parser (``--reference``, ``--pairs``), running ``run``."""
    s = sub.add_parser("speed", help="CPU time in paired whole processes against another seqd")
    s.add_argument("--reference", required=True, metavar="SEQD", help="the seqd program of the release to compare")
    s.add_argument("--pairs", type=int, default=5, help="counted pairs per command (default 5)")
    s.set_defaults(run=run)
    return s


def cmd_speed(args) -> int:
    if not log_files():
        print("bench/default_model.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    report("default_speed", "\n".join(speed_lines("default_model.py", args.reference, args.pairs)), args.write)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    b = sub.add_parser("bits", help="each log's bits/byte: bytes-12, bitwise-2 and the default")
    b.set_defaults(run=cmd_bits)
    m = sub.add_parser("memory", help="the nine logs three times; a new stream's memory")
    m.add_argument("--pairs", type=int, default=3, help="pairs of compress runs against bytes-12 (default 3)")
    m.set_defaults(run=cmd_memory)
    t = sub.add_parser("text", help="a real text of 8 MiB or more, and its repeat")
    t.add_argument("files", nargs="*", help="the texts (default: the Node.js API documentation's all.html)")
    t.set_defaults(run=cmd_text)
    s = speed_parser(sub, cmd_speed)
    for q in (b, m, t, s):
        q.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = p.parse_args(argv)
    started = time.time()
    code = args.run(args)
    print(f"({time.time() - started:.0f} s)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
