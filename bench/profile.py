"""Where the byte model's time goes, kernel by kernel: a sampling profile of its learning under Linux ``perf``.

    python bench/profile.py [--file Apache_2k.log] [--passes 4] [--no-write]

The learner runs a first pass over a public log, then ``--passes`` passes of
copies of it that have seen the log once (the steady state: every symbol
active, the tables filled), under ``perf record``.  Numba's compiled code has
no symbols perf can read, so the profiled process compiles every kernel afresh
(an empty ``NUMBA_CACHE_DIR``: about two minutes) and, before it exits,
writes perf's map of JIT code (``/tmp/perf-<pid>.map``) from the addresses
LLVM gave each function.  Samples are counted per kernel; an inline kernel
(``jit.inline_kernel``) counts in the kernel it was inlined into.  Shares are of
the samples in seqd's kernels during the timed passes (perf's clock is set to
CLOCK_MONOTONIC, which the process reads around them).

Needs ``perf`` (Debian: linux-perf) and permission to sample the process;
without them it says so and writes nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import log_files  # noqa: E402
from common import command_line, machine, report  # noqa: E402


def _child(name: str, passes: int) -> None:
    """The profiled process: learn, then write the perf map of every compiled kernel."""
    import gc

    import numba

    from seqd.core.online import OnlineConfig, OnlineLearner

    data = next(p for p in log_files() if p.name == name).read_bytes()
    learner = OnlineLearner(OnlineConfig.bytes_default())
    learner.learn(data)
    snapshot = learner.to_bytes()
    copies = [OnlineLearner.from_bytes(snapshot) for _ in range(passes)]
    start, t0 = time.clock_gettime(time.CLOCK_MONOTONIC), time.process_time()
    for copy in copies:
        copy.learn(data)
    cpu, end = time.process_time() - t0, time.clock_gettime(time.CLOCK_MONOTONIC)
    print(f"cpu {cpu:.6f} bytes {passes * len(data)} window {start:.6f},{end:.6f}", flush=True)
    functions = []
    for obj in gc.get_objects():
        if isinstance(obj, numba.core.registry.CPUDispatcher):
            for result in obj.overloads.values():
                library = result.library
                engine = library._codegen._engine
                for fn in library._final_module.functions:
                    if not fn.is_declaration and (address := engine.get_function_address(fn.name)):
                        functions.append((address, fn.name))
    functions = sorted(set(functions))
    ends = [a for a, _ in functions[1:]] + [functions[-1][0] + 4096]
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as out:
        for (address, fn), end in zip(functions, ends):
            out.write(f"{address:x} {end - address:x} {fn}\n")


def _kernel_name(symbol: str) -> str | None:
    """``online.sources.activities`` from an Itanium-mangled Numba symbol of seqd's; None for anything else."""
    if not symbol.startswith("_ZN4seqd4core"):
        return None
    names, i = [], 3
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while symbol[j].isdigit():
            j += 1
        n = int(symbol[i:j])
        names.append(symbol[j:j + n])
        i = j + n
    return ".".join(names[2:])


def profile(args) -> str:
    if shutil.which("perf") is None:
        return "No perf on this machine (Debian: linux-perf): no profile."
    if not any(p.name == args.file for p in log_files()):
        return f"No {args.file} in ../shared/data/logs: no profile."
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "perf.data"
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / "cache")}  # compiled here: perf can map it
        record = ["perf", "record", "-k", "mono", "-F", str(args.frequency), "-o", str(data)]
        run = subprocess.run([*record, sys.executable, __file__, "--child", "--file", args.file,
                              "--passes", str(args.passes)], env=env, capture_output=True, text=True)
        timing = re.search(r"cpu ([\d.]+) bytes (\d+) window (\S+)", run.stdout)
        if run.returncode != 0 or timing is None:
            return f"perf record failed (exit {run.returncode}):\n{run.stderr[-2000:]}"
        text = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "symbol",
                               "--time", timing.group(3)],  # the timed passes only, not the compile
                              capture_output=True, text=True).stdout
    shares: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[\.\]\s+(\S+)", line)
        if m and (name := _kernel_name(m.group(2))):
            shares[name] = shares.get(name, 0.0) + float(m.group(1))
    total = sum(shares.values())
    if not total:
        return "perf recorded no sample in seqd's kernels: is the JIT map readable (perf report -i)?"
    cpu, n = float(timing.group(1)), int(timing.group(2))
    per_byte = 1e6 * cpu / n
    lines = [f"Command: `{command_line('profile.py')}`  ", f"Machine: {machine()}  ",
             f"Learning {args.file} {args.passes} times after a first pass: {per_byte:.2f} µs per byte "
             f"({n / cpu:.0f} bytes/s) of CPU time, perf's sampling running (it slows the process a little).", "",
             "| kernel | share of the samples in seqd's kernels | µs per byte (share × total) |",
             "|---|---:|---:|"]
    small = 0.0
    for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
        if share / total < 0.01:
            small += share
            continue
        lines.append(f"| `{name}` | {100 * share / total:.1f}% | {per_byte * share / total:.2f} |")
    lines.append(f"| the rest (each under 1%) | {100 * small / total:.1f}% | {per_byte * small / total:.2f} |")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--file", default="Apache_2k.log", help="a log of ../shared/data/logs (default Apache_2k.log)")
    p.add_argument("--passes", type=int, default=4, help="passes after the first (default 4)")
    p.add_argument("--frequency", type=int, default=2000, help="samples per second (default 2000)")
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        _child(args.file, args.passes)
        return 0
    report("byte_model_profile", profile(args), not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
