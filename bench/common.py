"""Shared helpers for the benchmarks: machine description, running `seqd` subprocesses, docs sections."""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS_MD = ROOT / "docs" / "benchmarks.md"


def machine() -> str:
    """One line naming the machine, Python and Numba, for the record."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import numba
    import numpy

    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, NumPy {numpy.__version__}, "
        f"Numba {numba.__version__}; {datetime.now(timezone.utc):%Y-%m-%d}"
    )


def seqd_json(args: list[str]) -> dict:
    """Run ``seqd <args> --json`` in a fresh process (one core) and parse its output."""
    cmd = [sys.executable, "-m", "seqd", *args, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def run_all(jobs: list[list[str]], workers: int, on_done=None) -> list[dict]:
    """Run the ``seqd`` argument lists ``jobs``, ``workers`` at a time; results in job order."""
    results: list[dict | None] = [None] * len(jobs)

    def one(k):
        results[k] = seqd_json(jobs[k])
        if on_done is not None:
            on_done(k, results[k])

    with ThreadPoolExecutor(max_workers=workers) as pool:
        for f in [pool.submit(one, k) for k in range(len(jobs))]:
            f.result()
    return results  # type: ignore[return-value]


def write_section(name: str, body: str, path: Path = BENCHMARKS_MD) -> None:
    """Replace (or append) the section between ``<!-- BEGIN name -->`` and ``<!-- END name -->``."""
    begin, end = f"<!-- BEGIN {name} -->", f"<!-- END {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def serve_process(state: str, api: str, pub: str, metrics_port: int = 0, *extra: str) -> subprocess.Popen:
    """``seqd serve`` as a process of its own on ``state``, logging warnings only; ``extra`` flags after."""
    return subprocess.Popen([sys.executable, "-m", "seqd", "serve", "--state-dir", state, "--api", api,
                             "--pub", pub, "--metrics-port", str(metrics_port), "--log-level", "warning", *extra])


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_in(folder: Path, toml: str) -> tuple[subprocess.Popen, str, int, Path]:
    """``seqd serve`` on loopback ports of its own, its configuration (``toml``, written to ``folder/seqd.toml``)
    and its state directory (``folder/state``) in ``folder``: (the process, its request endpoint, its metrics
    port, its state directory)."""
    config = folder / "seqd.toml"
    config.write_text(toml)
    api, pub, port = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}", free_port()
    state = folder / "state"
    return serve_process(str(state), api, pub, port, "--config", str(config)), api, port, state


def wait_until_serving(client, seconds: float = 120) -> None:
    """Ping ``client``'s daemon until it answers (a first start compiles the kernels); the last error after
    ``seconds``."""
    import time
    deadline = time.monotonic() + seconds
    while True:
        try:
            client.ping()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise


def command_line(script: str, argv: list[str] | None = None) -> str:
    """How a benchmark was run, for its table: ``python bench/<script>`` and its arguments, shell-quoted,
    without ``--no-write`` (such a run prints its table and writes nothing)."""
    args = sys.argv[1:] if argv is None else argv
    return " ".join(["python", f"bench/{script}", *(shlex.quote(a) for a in args if a != "--no-write")])


def report(section: str, text: str, write: bool) -> None:
    """Print a benchmark's table; with ``write``, also put it into docs/benchmarks.md as ``section``."""
    print(text)
    if write:
        write_section(section, text)


def process_cpu(cmd: list[str], stdout=subprocess.DEVNULL, stdin=None) -> float:
    """CPU seconds (user + system) of one whole process running ``cmd``; raises if it fails."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, stdin=stdin)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')[-400:]}")
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def paired_cpu(new: list[str], old: list[str], pairs: int) -> tuple[list[float], list[float]]:
    """CPU seconds of ``new`` and ``old`` run in turn (new, old, new, old, ...) as whole processes, after one
    uncounted warm-up pair (kernels in the cache, files in the page cache)."""
    process_cpu(new), process_cpu(old)
    a, b = [], []
    for _ in range(pairs):
        a.append(process_cpu(new))
        b.append(process_cpu(old))
    return a, b


def span(values: list[float], digits: int = 2) -> str:
    """``median (min–max)`` of a few timings."""
    import statistics

    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"
