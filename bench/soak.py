"""The daemon over a long stream: memory, rate and snapshot size do not depend on how long it has run.

    python bench/soak.py                  # 16 MiB through one stream; writes docs/benchmarks.md
    python bench/soak.py --mib 4 --no-write

``seqd serve`` (defaults, a separate process) learns one stream fed with the
logs of ``../shared/data/logs`` back to back, over and over, in batches of
4096 bytes, while a client asks for a prediction after every batch.  After
each MiB the table records the daemon's resident memory (``/proc``), the
learning rate over that MiB, the stream's recent bits per byte, and the
size of its files after a snapshot.  Bounded: ``--mib`` MiB, then it stops.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import log_files  # noqa: E402
from common import command_line, free_port, machine, report, serve_process  # noqa: E402

from seqd.clients.client import Client  # noqa: E402

MIB = 1 << 20
BATCH = 4096


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=16, help="MiB to stream (default 16)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    files = log_files()
    if not files:
        print("bench/soak.py: no logs in ../shared/data/logs", file=sys.stderr)
        return 1
    corpus = b"".join(f.read_bytes() for f in files)
    api, pub = f"tcp://127.0.0.1:{free_port()}", f"tcp://127.0.0.1:{free_port()}"
    rows = []
    with tempfile.TemporaryDirectory() as state:
        proc = serve_process(state, api, pub)
        try:
            with Client(api, timeout=120) as c:
                c.ping()
                c.create("soak")
                position, sent, t0 = 0, 0, time.perf_counter()
                while sent < args.mib * MIB:
                    start = sent % len(corpus)
                    batch = corpus[start:start + BATCH]
                    position = c.publish("soak", batch, position=position).position
                    c.predict("soak", min_position=position, wait=120)
                    sent += len(batch)
                    if sent // MIB > len(rows):
                        snap = c.snapshot("soak")
                        st = c.stats("soak")
                        now = time.perf_counter()
                        rows.append(dict(mib=len(rows) + 1, rss=rss_bytes(proc.pid), rate=MIB / (now - t0),
                                         recent=st.recent_bits_per_symbol, files=dir_bytes(Path(state)),
                                         snapshot=snap.position))
                        print(f"{rows[-1]['mib']} MiB: rss {rows[-1]['rss'] / MIB:.1f} MiB, "
                              f"{rows[-1]['rate']:.0f} B/s", file=sys.stderr, flush=True)
                        t0 = time.perf_counter()
        finally:
            proc.terminate()
            proc.wait(120)
    lines = [f"Command: `{command_line('soak.py', argv)}`  ", f"Machine: {machine()}", "",
             f"One stream, the logs back to back ({len(corpus):,} bytes) over and over, batches of {BATCH} bytes, "
             "each followed by a predict that waits for it; after each MiB a snapshot is requested.", "",
             "| MiB streamed | daemon resident memory (MiB) | bytes/s over that MiB | recent bits/byte | "
             "state directory (MiB) |", "|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['mib']} | {r['rss'] / MIB:.1f} | {r['rate']:,.0f} | {r['recent']:.3f} | "
                     f"{r['files'] / MIB:.1f} |")
    body = "\n".join(lines)
    report("daemon_soak", body, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
