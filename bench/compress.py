"""``seqd compress`` against the usual compressors on real logs, measured in one run.

    python bench/compress.py            # every file of ../shared/data/logs; writes docs/benchmarks.md
    python bench/compress.py --no-write

Per file: the .sqd size (default model and block size, the whole container
with header and framing), its bits per byte beside gzip -9, bzip2 -9, xz -9e,
zstd -19 and PPMd order 16 (compressed in the same run), the LSTM online
compressor from ../shared/ANCHORS.md, and compression / decompression speed on
one core (CPU time).  Then the logs back to back as one stream: what block
boundaries cost, and wall-clock speed with one thread and with every core.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import PEERS, log_files, table, weighted_mean  # noqa: E402
from common import command_line, machine, report  # noqa: E402
from online import LSTM_COMPRESS  # noqa: E402

from seqd.core import container  # noqa: E402

COMPRESSORS = [p for p in PEERS if not p.startswith("kt-")]


def _timed(fn, *args, clock=time.process_time):
    t0 = clock()
    out = fn(*args)
    return out, clock() - t0


def _parallel(data: bytes, block_size: int, threads: int, chain_size: int | None) -> tuple[bytes, float, float]:
    """(file, compress seconds, decompress seconds), wall clock, through the command's own block pipeline;
    ``chain_size`` None: the input is one chain, learned by one model (on one core whatever ``threads``)."""
    from seqd.cli import _decode
    from seqd.cli import compress as cc

    class _Sink(io.BytesIO):
        def sync(self):
            pass

    class _Quiet:
        def show(self, *a, **k):
            pass

    config = container.default_config()
    header = container.Header(config, block_size, container.build_info(), chain_size=chain_size).to_bytes()
    sink = _Sink()
    t0 = time.perf_counter()
    n_in, _, crc = cc.compress_blocks(io.BytesIO(data), sink, config, block_size, threads, _Quiet(), chain_size)
    packed = header + sink.getvalue() + container.end_record(n_in, crc)
    t1 = time.perf_counter()
    reader = io.BytesIO(packed)
    head = container.read_header(reader)
    out = _Sink()
    _decode.decode_records(reader, head, out, threads, False, [], _Quiet())
    t2 = time.perf_counter()
    assert out.getvalue() == data, "round trip failed"
    return packed, t1 - t0, t2 - t1


def run() -> str:
    files = log_files()
    if not files:
        return "No logs: ../shared/data/logs is absent here."
    container.decompress(container.compress(b"warm up the kernels\n" * 10))
    peers = {r["name"]: r for r in table(files, COMPRESSORS)}
    rows = []
    for path in files:
        data = path.read_bytes()
        packed, c_cpu = _timed(container.compress, data)
        plain, d_cpu = _timed(container.decompress, packed)
        assert plain == data, f"{path.name}: round trip failed"
        row = {"name": path.name, "bytes": len(data), "seqd": 8 * len(packed) / len(data), "size": len(packed),
               "c": len(data) / c_cpu, "d": len(data) / d_cpu, "lstm": LSTM_COMPRESS.get(path.name)}
        row.update({p: peers[path.name][p] for p in COMPRESSORS})
        print(f"{path.name}: {len(packed)} bytes, {row['seqd']:.4f} bits/byte, compress {row['c']:.0f} B/s, "
              f"decompress {row['d']:.0f} B/s", flush=True)
        rows.append(row)
    cell = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
    lines = ["| file | bytes | .sqd bytes | **seqd** | " + " | ".join(COMPRESSORS)
             + " | lstm-compress (ANCHORS) | compress B/s | decompress B/s | decompress / compress time |",
             "|---|---:|---:|---:|" + "---:|" * (len(COMPRESSORS) + 4)]
    for r in rows:
        lines.append(f"| {r['name']} | {r['bytes']} | {r['size']} | **{r['seqd']:.3f}** | "
                     + " | ".join(cell(r[p]) for p in COMPRESSORS)
                     + f" | {cell(r['lstm'])} | {r['c']:.0f} | {r['d']:.0f} | {r['c'] / r['d']:.2f} |")
    total = sum(r["bytes"] for r in rows)
    c_all = total / sum(r["bytes"] / r["c"] for r in rows)
    d_all = total / sum(r["bytes"] / r["d"] for r in rows)
    lines.append(f"| **mean (weighted by size)** | {total} | {sum(r['size'] for r in rows)} | "
                 f"**{weighted_mean(rows, 'seqd'):.3f}** | "
                 + " | ".join(cell(weighted_mean(rows, p)) for p in COMPRESSORS)
                 + f" | {cell(weighted_mean(rows, 'lstm'))} | {c_all:.0f} | {d_all:.0f} | {c_all / d_all:.2f} |")
    lines.append("")
    for peer in ("xz-9e", "ppmd-o16", "lstm"):
        if all(r[peer] is not None for r in rows):
            n = sum(r["seqd"] < r[peer] for r in rows)
            gap = weighted_mean(rows, "seqd") - weighted_mean(rows, peer)
            lines.append(f"- smaller than {peer} on {n} of {len(rows)} files; mean difference {gap:+.3f} bits/byte")
    lines.append("")
    # one stream: block boundaries and threads
    stream = b"".join(p.read_bytes() for p in files)
    threads = os.cpu_count() or 1
    lines += [f"The nine logs back to back ({len(stream)} bytes) as one stream, wall clock, "
              f"`seqd compress --block-size B [--chain-size C] -T N` (without a chain size the file is one chain, "
              "learned by one model on one core):", "",
              "| block size | chain size | threads | bits/byte | compress B/s | decompress B/s |",
              "|---:|---:|---:|---:|---:|---:|"]
    for block_size, chain, n in [(container.DEFAULT_BLOCK_SIZE, None, 1), (512 << 10, None, 1),
                                 (512 << 10, 512 << 10, threads), (128 << 10, 128 << 10, threads)]:
        packed, tc, td = _parallel(stream, block_size, n, chain)
        lines.append(f"| {block_size >> 10} KiB | {'—' if chain is None else f'{chain >> 10} KiB'} | {n} | "
                     f"{8 * len(packed) / len(stream):.3f} | "
                     f"{len(stream) / tc:.0f} | {len(stream) / td:.0f} |")
        print(lines[-1], flush=True)
    lines.append("")
    lines.append("Sizes are whole .sqd files: header (about 150 bytes), block records and end record included. "
                 "Compress and decompress speeds in the per-file table are CPU time on one core, kernels compiled "
                 "beforehand. Peers: the command-line tools and pyppmd, as in `bench/baselines.py`.")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    body = run()
    text = (f"Command: `{command_line('compress.py')}`  \nMachine: {machine()}  \n"
            f"Model: `{container.default_config()}`\n\n{body}\n")
    report("compress_logs", text, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
