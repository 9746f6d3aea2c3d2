"""Lifelong memory: what seqd pays for content it has seen, on big files and in the daemon.

    python bench/lifelong.py files DIR                 # write the two big files into DIR, with their sha256
    python bench/lifelong.py repeats [--previous PY]   # one learner over the nine logs x3; the logs one by one
    python bench/lifelong.py compress DIR              # seqd compress beside xz, zstd --long and PPMd on them
    python bench/lifelong.py speed --previous PY       # per-byte cost against a previous seqd, paired runs
    python bench/lifelong.py daemon                    # a byte stream fed 64 MiB through seqd serve

The big files (``files``):

* ``nine-x3.log``: the nine logs of ``../shared/data/logs`` back to back,
  sorted by name (2,140,307 bytes), three times;
* ``interleaved.log``: 8 MiB of real logs made from the nine logs and the
  benchmark machine's own (``baselines.HELD_OUT``), interleaved the way a log
  collector interleaves services: a source is drawn at random, weighted by
  its size, and gives its next run of whole lines (a geometric number, mean
  16); each source is read in order and starts again at its end, until the
  file holds 8 MiB.  The draws come from NumPy's ``default_rng(INTERLEAVE_SEED)``.
  No setting of seqd was chosen on this file.

``--previous PY`` names the Python of a virtual environment where an earlier
seqd is installed: the same measurement then runs under it too, in turn, in
processes of their own.  Every section prints its table, and with
``--write`` puts it into ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import HELD_OUT, held_out_files, log_files  # noqa: E402
from common import command_line, machine, report  # noqa: E402

MIB = 1 << 20
INTERLEAVE_SEED = 20261128
INTERLEAVED_BYTES = 8 * MIB
RUN_LINES = 16  # mean lines of a run from one source
PEERS = {  # name -> command reading standard input and writing the compressed stream to standard output
    "xz -9e": ["xz", "-9e", "-c"],
    "zstd -19 --long=27": ["zstd", "-19", "--long=27", "-q", "-c"],
}


# -- the files ------------------------------------------------------------------------------------

def nine_logs() -> bytes:
    return b"".join(p.read_bytes() for p in log_files())


def interleaved(sources: list[bytes], size: int, seed: int = INTERLEAVE_SEED) -> bytes:
    """Whole lines of ``sources`` interleaved as a collector would: runs of lines from a source drawn by size."""
    lines = [s.splitlines(keepends=True) for s in sources]
    weights = np.array([len(s) for s in sources], float)
    rng = np.random.default_rng(seed)
    cursor = [0] * len(sources)
    out, n = [], 0
    while n < size:
        k = int(rng.choice(len(sources), p=weights / weights.sum()))
        for _ in range(int(rng.geometric(1 / RUN_LINES))):
            line = lines[k][cursor[k]]
            cursor[k] = (cursor[k] + 1) % len(lines[k])
            out.append(line)
            n += len(line)
    return b"".join(out)


def big_files() -> dict[str, bytes]:
    own = [p.read_bytes() for p in held_out_files()]
    return {"nine-x3.log": nine_logs() * 3,
            "interleaved.log": interleaved([p.read_bytes() for p in log_files()] + own, INTERLEAVED_BYTES)}


def cmd_files(args) -> int:
    target = Path(args.dir)
    target.mkdir(parents=True, exist_ok=True)
    for name, data in big_files().items():
        (target / name).write_bytes(data)
        print(f"{target / name}: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    print(f"machine logs used: {', '.join(str(p) for p in held_out_files()) or 'none'}")
    return 0


# -- one learner over repeats, and the logs one by one --------------------------------------------

_WORKER = r"""
import json, sys, time
import numpy as np
from importlib.metadata import version
try:  # seqd 0.22 on: the default byte model, whichever it is
    from seqd.core.container import default_config
    from seqd.core.learners import learner_for
    new = lambda: learner_for(default_config())
except ImportError:  # before: the GLNN byte model was the only default
    from seqd.core.online import OnlineConfig, OnlineLearner
    new = lambda: OnlineLearner(OnlineConfig.bytes_default())
task, paths = sys.argv[1], sys.argv[2:]
out = {"seqd": version("seqd")}
if task == "passes":
    data = np.frombuffer(b"".join(open(p, "rb").read() for p in paths), np.uint8).astype(np.int64)
    learner, passes = new(), []
    for _ in range(3):
        t0 = time.process_time()
        bits = learner.learn(data)
        passes.append({"bits": float(bits.sum()), "cpu": time.process_time() - t0})
    out.update(bytes=len(data), passes=passes, state_mib=learner.state_bytes / 2**20,
               resident_mib=getattr(learner, "resident_bytes", learner.state_bytes) / 2**20)
else:
    files = []
    for p in paths:
        data = np.frombuffer(open(p, "rb").read(), np.uint8).astype(np.int64)
        t0 = time.process_time()
        bits = new().learn(data)
        files.append({"name": p.rsplit("/", 1)[-1], "bytes": len(data), "bits": float(bits.sum()),
                      "cpu": time.process_time() - t0})
    out.update(files=files)
print(json.dumps(out))
"""


def worker(python: str, task: str, paths: list[Path]) -> dict:
    # -I: nothing from the working directory on the path (a checkout's metadata would name the wrong seqd)
    proc = subprocess.run([python, "-I", "-c", _WORKER, task, *map(str, paths)], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{python}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cmd_repeats(args) -> int:
    files, own = log_files(), held_out_files()
    if not files:
        print("bench/lifelong.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    pythons = [sys.executable] + ([args.previous] if args.previous else [])
    runs = {py: (worker(py, "passes", files), worker(py, "files", files), worker(py, "files", own) if own else None)
            for py in pythons}
    lines = [f"Command: `{command_line('lifelong.py')}`  ", f"Machine: {machine()}", "",
             "One learner (the default byte model: `bytes-12` to seqd 0.21, the bitwise model from 0.22; prequential "
             "bits/byte), the nine logs back to back "
             f"({runs[sys.executable][0]['bytes']:,} bytes) three times:", "",
             "| seqd | pass 1 | pass 2 | pass 3 | passes 2 and 3, bytes | state MiB (full) | in memory MiB |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for py, (passes, _, _) in runs.items():
        n = passes["bytes"]
        bpb = [p["bits"] / n for p in passes["passes"]]
        lines.append(f"| {passes['seqd']} | {bpb[0]:.4f} | {bpb[1]:.4f} | {bpb[2]:.4f} | "
                     f"{(passes['passes'][1]['bits'] + passes['passes'][2]['bits']) / 8:,.0f} | "
                     f"{passes['state_mib']:.1f} | {passes['resident_mib']:.1f} |")
    lines += ["", "A fresh learner for each file (prequential bits/byte; held-out logs below the line chose "
              "nothing):", ""]
    versions = [runs[py][1]["seqd"] for py in pythons]
    lines += ["| file | bytes | " + " | ".join(f"seqd {v}" for v in versions) + (" | difference |" if args.previous
                                                                                  else " |"),
              "|---|---:|" + "---:|" * len(versions) + ("---:|" if args.previous else "")]
    for group in (1, 2):
        if group == 2 and not own:
            continue
        tables = [runs[py][group]["files"] for py in pythons]
        for rows in zip(*tables):
            vals = [r["bits"] / r["bytes"] for r in rows]
            lines.append(f"| {rows[0]['name']} | {rows[0]['bytes']:,} | " + " | ".join(f"{v:.5f}" for v in vals)
                         + (f" | {vals[0] - vals[1]:+.5f} |" if args.previous else " |"))
        means = [sum(r["bits"] for r in t) / sum(r["bytes"] for r in t) for t in tables]
        label = "public logs, size-weighted" if group == 1 else "held-out logs, size-weighted"
        lines.append(f"| **{label}** | {sum(r['bytes'] for r in tables[0]):,} | "
                     + " | ".join(f"**{m:.5f}**" for m in means)
                     + (f" | {means[0] - means[1]:+.5f} |" if args.previous else " |"))
    report("lifelong_repeats", "\n".join(lines), args.write)
    return 0


# -- seqd compress on the big files ---------------------------------------------------------------

def timed(cmd: list[str], data: bytes | None = None, stdout=subprocess.PIPE) -> tuple[bytes, float, float]:
    """(standard output, CPU seconds of the child, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, input=data, stdout=stdout, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 2):
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}")
    return proc.stdout or b"", (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), wall


def damaged_in_the_middle(packed: bytes) -> bytes:
    """``packed`` with one byte of its middle block's payload flipped."""
    import io
    from seqd.core import container
    reader = io.BytesIO(packed)
    header = container.read_header(reader)
    blocks = [r for r in container.read_records(reader, header, header.size) if isinstance(r, container.Block)]
    middle = blocks[len(blocks) // 2]
    at = middle.offset + container._BLOCK.size + len(middle.payload) // 2
    return packed[:at] + bytes([packed[at] ^ 0x5A]) + packed[at + 1:]


def cmd_compress(args) -> int:
    seqd = [sys.executable, "-m", "seqd"]
    src = Path(args.dir)
    names = [n for n in ("nine-x3.log", "interleaved.log") if (src / n).exists()]
    if not names:
        print(f"bench/lifelong.py: no big files in {src} (python bench/lifelong.py files {src})", file=sys.stderr)
        return 1
    variants = [("seqd, one chain, -T 1", "1", []), ("seqd --chain-size 4M, -T 2", "2", ["--chain-size", "4M"])]
    lines = [f"Command: `{command_line('lifelong.py')}`  ", f"Machine: {machine()}", "",
             "| file | bytes | compressor | compressed bytes | bits/byte | vs xz | compress CPU s | wall s | "
             "decompress CPU s | wall s | after one damaged byte (--salvage) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            data = (src / name).read_bytes()
            digest = hashlib.sha256(data).hexdigest()[:16]
            rows = []
            for peer, cmd in PEERS.items():
                out, cpu, wall = timed(cmd, data)
                back, dcpu, dwall = timed([cmd[0], "-d", "-c"] + (["--long=27"] if "zstd" in cmd[0] else []), out)
                assert back == data, peer
                rows.append((peer, len(out), cpu, wall, dcpu, dwall, ""))
            import pyppmd
            t0 = time.process_time()
            ppmd = pyppmd.compress(data, max_order=16, mem_size=256 << 20)
            rows.append(("PPMd order 16, 256 MiB", len(ppmd), time.process_time() - t0, None, None, None, ""))
            for label, threads, flags in variants:
                path = Path(tmp) / "out.sqd"
                with open(path, "wb") as out:
                    _, cpu, wall = timed(seqd + ["compress", "-c", "-q", "-T", threads, *flags, "-"], data, stdout=out)
                packed = path.read_bytes()
                back, dcpu, dwall = timed(seqd + ["decompress", "-c", "-q", "-T", threads, "-"], packed)
                assert back == data, label
                salvaged, _, _ = timed(seqd + ["decompress", "-c", "-q", "--salvage", "-"],
                                       damaged_in_the_middle(packed))
                rows.append((label, len(packed), cpu, wall, dcpu, dwall,
                             f"{len(salvaged):,} of {len(data):,} bytes back"))
            xz = rows[0][1]
            for label, size, cpu, wall, dcpu, dwall, salvage in rows:
                lines.append(f"| {name} ({digest}…) | {len(data):,} | {label} | {size:,} | {8 * size / len(data):.4f} "
                             f"| {size / xz:.3f} | {cpu:.1f} | {_seconds(wall)} | {_seconds(dcpu)} | "
                             f"{_seconds(dwall)} | {salvage} |")
            print(lines[-1], flush=True)
    lines += ["", f"Files: `python bench/lifelong.py files DIR` (sha256 prefixes above; the interleaved file holds "
              f"the machine's own {', '.join(str(p) for p in HELD_OUT)} where present). CPU seconds are the "
              "child processes' user + system time; PPMd is `pyppmd.compress` in this process (its size and "
              "CPU time only: `pyppmd.decompress` refused its own output of the interleaved file here). "
              "'After one damaged byte': one byte flipped in the middle block's payload, then "
              "`seqd decompress --salvage`."]
    report("lifelong_compress", "\n".join(lines), args.write)
    return 0


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


# -- per-byte cost against a previous release -----------------------------------------------------

def cmd_speed(args) -> int:
    """CPU seconds of the learning, the current seqd and ``--previous`` in turn: the nine logs with a fresh
    learner each, and (``--stream-pairs``) one learner over the nine logs three times."""
    files = log_files()
    lines = [f"Command: `{command_line('lifelong.py')}`  ", f"Machine: {machine()}"]
    cases = [("files", "the nine logs, a fresh learner for each", args.pairs),
             ("passes", "one learner over the nine logs three times", args.stream_pairs)]
    for task, what, count in cases:
        if not count:
            continue
        runs = []
        for _ in range(count):
            for py in (sys.executable, args.previous):
                run = worker(py, task, files)
                parts = run["files"] if task == "files" else run["passes"]
                n = sum(r["bytes"] for r in run["files"]) if task == "files" else 3 * run["bytes"]
                runs.append((py, sum(r["cpu"] for r in parts), n, run["seqd"]))
        now = [cpu for py, cpu, _, _ in runs if py == sys.executable]
        before = [cpu for py, cpu, _, _ in runs if py == args.previous]
        ratios = sorted(a / b for a, b in zip(now, before))
        n = runs[0][2]
        lines += ["", f"{what[0].upper() + what[1:]} ({n:,} bytes), CPU seconds of the learning, in turn "
                      f"(seqd {runs[0][3]}, then seqd {runs[1][3]}), {count} pairs:", "",
                  f"| pair | seqd {runs[0][3]} s | seqd {runs[1][3]} s | ratio |", "|---:|---:|---:|---:|"]
        lines += [f"| {k + 1} | {a:.2f} | {b:.2f} | {a / b:.3f} |" for k, (a, b) in enumerate(zip(now, before))]
        lines += ["", f"Median ratio {ratios[len(ratios) // 2]:.3f} (range {ratios[0]:.3f}–{ratios[-1]:.3f}); "
                      f"{n / np.median(now):,.0f} against {n / np.median(before):,.0f} bytes per CPU second."]
    report("lifelong_speed", "\n".join(lines), args.write)
    return 0


# -- a byte stream fed 64 MiB through the daemon ---------------------------------------------------

DAEMON_BYTES = 64 * MIB
DAEMON_BATCH = 256 << 10
DAEMON_STEP = 4 * MIB  # a row of the table every so many bytes
HIBERNATE_AFTER = 3.0  # seconds idle before a learner hibernates, in this benchmark's daemon


def cmd_daemon(args) -> int:
    from many_streams import histogram_quantile
    from soak import rss_bytes

    from common import serve_in, wait_until_serving
    from seqd.clients.client import Client

    own = [p.read_bytes() for p in held_out_files()]
    data = interleaved([p.read_bytes() for p in log_files()] + own, args.mib * MIB)[:args.mib * MIB]
    rows, notes = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        proc, api, port, state = serve_in(Path(tmp), f"[limits]\nhibernate_after_seconds = {HIBERNATE_AFTER}\n"
                                          "[durability]\nsnapshot_interval_seconds = 3600\n"
                                          "snapshot_interval_symbols = 1073741824\n")
        try:
            with Client(api, timeout=600) as c:
                wait_until_serving(c)
                # the kernels loaded by a first stream, which then hibernates: the daemon's base
                ack = c.publish("warm-up", data[-65536:], create=True)
                c.predict("warm-up", min_position=ack.position, wait=600)
                _until(lambda: c.stats("warm-up").resident is False)
                base = rss_bytes(proc.pid)
                t0 = time.perf_counter()
                last = (0, 0.0)  # position and code length at the last row
                for start in range(0, len(data), DAEMON_BATCH):
                    ack = c.publish("big", data[start:start + DAEMON_BATCH], create=True)
                    fed = min(start + DAEMON_BATCH, len(data))
                    if fed % DAEMON_STEP == 0 or fed == len(data):
                        c.predict("big", min_position=ack.position, wait=3600)
                        st = c.stats("big")
                        rows.append((st.position, (st.code_bits - last[1]) / (st.position - last[0]), st.state_bytes,
                                     rss_bytes(proc.pid) - base, time.perf_counter() - t0))
                        last = (st.position, st.code_bits)
                        print(rows[-1], flush=True)
                t1 = time.perf_counter()
                snap = c.snapshot("big")
                notes["snapshot_s"] = time.perf_counter() - t1
                directory = state / "streams" / "big"
                notes["files"] = {p.name: p.stat().st_size for p in sorted(directory.iterdir()) if p.is_file()}
                _until(lambda: c.stats("big").resident is False)
                time.sleep(1.0)
                notes["hibernated_rss"] = rss_bytes(proc.pid) - base
                t1 = time.perf_counter()
                ack = c.publish("big", data[:4096])
                c.predict("big", min_position=ack.position, wait=600)
                notes["wake_learn_s"] = time.perf_counter() - t1
                notes["wake_p99"] = histogram_quantile(_get(f"http://127.0.0.1:{port}/metrics"),
                                                       "seqd_wake_duration_seconds", 0.99)
                notes["snapshot_position"] = snap.position
        finally:
            proc.terminate()
            proc.wait(60)
    lines = [f"Command: `{command_line('lifelong.py')}`  ", f"Machine: {machine()}", "",
             f"One byte stream (preset `bytes`) fed {len(data) / MIB:.0f} MiB of the logs, repeated and interleaved "
             f"(`interleaved()` of {args.mib} MiB: the sources and seed of `interleaved.log`), in batches of "
             f"{DAEMON_BATCH >> 10} KiB through `seqd serve`; a row every {DAEMON_STEP // MIB} MiB:", "",
             f"| learned MiB | bits/byte of the last {DAEMON_STEP // MIB} MiB | learner in memory MiB (its budget "
             "count) | daemon RSS above its base MiB | elapsed s |", "|---:|---:|---:|---:|---:|"]
    for position, bpb, state_bytes, rss, elapsed in rows:
        lines.append(f"| {position / MIB:.0f} | {bpb:.4f} | {state_bytes / MIB:.1f} | {rss / MIB:.1f} | {elapsed:.0f} |")
    files = ", ".join(f"`{name}` {size / MIB:.2f} MiB" for name, size in notes["files"].items())
    lines += ["", f"At {notes['snapshot_position'] / MIB:.0f} MiB: a snapshot on request took "
              f"{notes['snapshot_s']:.2f} s; the stream's files: {files}. Hibernated (after "
              f"{HIBERNATE_AFTER:.0f} s idle), the daemon's RSS was {notes['hibernated_rss'] / MIB:.2f} MiB above "
              f"its base (a first stream's kernels loaded, that stream hibernated). A 4 KiB batch then woke the "
              f"learner and was learned in {notes['wake_learn_s']:.2f} s (wake p99 from "
              f"`seqd_wake_duration_seconds`: ≤ {notes['wake_p99'][0]:.3g} s over {notes['wake_p99'][1]} wakes)."]
    report("lifelong_daemon", "\n".join(lines), args.write)
    return 0


def _get(url: str) -> str:
    import urllib.request
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def _until(condition, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the daemon did not get there in time")
        time.sleep(0.5)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("files", help="write the big files into DIR")
    p.add_argument("dir")
    p.set_defaults(run=cmd_files)
    p = sub.add_parser("repeats", help="one learner over the nine logs three times; the logs one by one")
    p.add_argument("--previous", metavar="PYTHON", help="an earlier seqd's Python, measured beside")
    p.set_defaults(run=cmd_repeats)
    p = sub.add_parser("compress", help="seqd compress and the peers on the big files in DIR")
    p.add_argument("dir")
    p.set_defaults(run=cmd_compress)
    p = sub.add_parser("speed", help="per-byte cost against an earlier seqd, paired runs")
    p.add_argument("--previous", metavar="PYTHON", required=True)
    p.add_argument("--pairs", type=int, default=3, help="pairs of runs over the logs one by one (default 3)")
    p.add_argument("--stream-pairs", type=int, default=1,
                   help="pairs of runs of one learner over the logs three times (default 1; 0: none)")
    p.set_defaults(run=cmd_speed)
    p = sub.add_parser("daemon", help="a byte stream fed 64 MiB through seqd serve")
    p.add_argument("--mib", type=int, default=DAEMON_BYTES // MIB, help="MiB to feed (default 64)")
    p.set_defaults(run=cmd_daemon)
    for p in sub.choices.values():
        p.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
