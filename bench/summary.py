"""The one-screen summary at the top of docs/benchmarks.md, made from the tables below it.

    python bench/summary.py [--no-write]

It measures nothing: it reads the sections the other benchmarks wrote
(``<!-- BEGIN name -->`` blocks) and puts their headline figures side by
side, each with the section it comes from, so the summary can never say
what the tables do not.  Run it after any benchmark that rewrites one of
them.  A section that is missing is named as missing, not guessed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BENCHMARKS_MD, write_section  # noqa: E402


def section(text: str, name: str) -> str | None:
    m = re.search(rf"<!-- BEGIN {re.escape(name)} -->\n(.*?)<!-- END {re.escape(name)} -->", text, re.S)
    return m.group(1) if m and m.group(1).strip() else None  # an empty section is one not yet written


def tables(block: str) -> list[list[dict[str, str]]]:
    """Every Markdown table of ``block`` as rows of {header: cell}, bold marks removed; a header that repeats
    is numbered from its second time ("paper", "paper 2", ...)."""
    out, lines = [], block.splitlines()
    i = 0
    while i < len(lines) - 1:
        if lines[i].startswith("|") and re.match(r"^\|[-:| ]+\|$", lines[i + 1]):
            head = [c.strip().replace("**", "") for c in lines[i].strip("|").split("|")]
            head = [h if h not in head[:k] else f"{h} {head[:k].count(h) + 1}" for k, h in enumerate(head)]
            rows = []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                cells = [c.strip().replace("**", "") for c in lines[i].strip("|").split("|")]
                rows.append(dict(zip(head, cells)))
                i += 1
            out.append(rows)
        else:
            i += 1
    return out


def header_line(block: str, key: str) -> str:
    m = re.search(rf"^{key}: (.*?)\s*$", block, re.M)
    return m.group(1) if m else "?"


def _logs(text: str) -> list[str]:
    block = section(text, "online_logs")
    if block is None:
        return ["- The byte model on the public logs: no `online_logs` section yet (`python bench/online.py logs`)."]
    rows = tables(block)[0]
    out = [f"**The byte model on the nine public logs** (prequential bits/byte, one pass per file; "
           f"\"Real logs\", `{header_line(block, 'Command').strip('`')}`, {header_line(block, 'Machine')}):", "",
           "| file | seqd | xz -9e | PPMd o16 | LSTM (lstm-compress) | seqd bytes/s |",
           "|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        name = r["file"].replace("mean (weighted by size)", "**mean, by size**")
        out.append(f"| {name} | **{r['seqd']}** | {r['xz-9e']} | {r['ppmd-o16']} | "
                   f"{r['lstm-compress (ANCHORS)']} | {r['seqd bytes/s']} |")
    return out


def _default(text: str) -> list[str]:
    """The default byte model beside bytes-12 and the peers on the nine logs, then its memory, a long text and
    its speed ("One byte model, fast and lifelong"); the older table where its sections are missing."""
    bits, logs = section(text, "default_bits"), section(text, "online_logs")
    if bits is None or logs is None:
        return _logs(text) + [""] + _speed(text) + _bitwise(text)
    ours = {r["file"]: r for r in tables(bits)[0]}
    ours["mean (weighted by size)"] = ours["public logs, size-weighted"]
    out = ["**The default byte model** is the bitwise model (`core/bits`, preset `bitwise-3` since seqd 0.22): what "
           "`seqd compress`, `seqd eval` and a daemon's `bytes` streams use. It took over from the GLNN byte model "
           "(`bytes-12`, still served and decoded by name) because it codes in fewer bits, learns faster and "
           "holds as long a memory (\"One byte model, fast and lifelong\").", "",
           f"**On the nine public logs** (prequential bits/byte, one pass per file; "
           f"{header_line(bits, 'Command').split(' (')[0]}, {header_line(bits, 'Machine')}; the peers from "
           "\"Real logs\"):", "",
           "| file | seqd (bitwise-3) | seqd bytes-12 | xz -9e | PPMd o16 | LSTM (lstm-compress) | seqd bytes/s |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in tables(logs)[0]:
        mine = ours.get(r["file"])
        if mine is None:
            continue
        name = r["file"].replace("mean (weighted by size)", "**mean, by size**")
        out.append(f"| {name} | **{float(mine['default (bitwise-3)']):.3f}** | {float(mine['bytes-12']):.3f} | "
                   f"{r['xz-9e']} | {r['ppmd-o16']} | {r['lstm-compress (ANCHORS)']} | {mine['default bytes/s']} |")
    held = ours.get("held-out logs, size-weighted")
    out.append("")
    if held:
        out.append(f"- **Logs that chose nothing** (this machine's own): {held['default (bitwise-3)']} bits/byte "
                   f"against `bitwise-2`'s {held['bitwise-2']} and `bytes-12`'s {held['bytes-12']}.")
    memory = section(text, "default_memory")
    if memory is not None:
        row = next(r for r in tables(memory)[0] if r["model"].startswith("default"))
        old = next(r for r in tables(memory)[0] if r["model"] == "bytes-12")
        cpu = re.search(r"ratio ([\d.]+)", memory)
        out.append(f"- **Memory**: the nine logs three times over, passes 2 and 3 cost {row['pass 2']} / "
                   f"{row['pass 3']} bits/byte (`bytes-12` {old['pass 2']} / {old['pass 3']}); a new stream holds "
                   f"{row['new stream MiB']} MiB (`bytes-12` {old['new stream MiB']}); `seqd compress` of that file "
                   f"in {cpu.group(1) if cpu else '?'} of `bytes-12`'s CPU time.")
    long_text = section(text, "default_text")
    if long_text is not None:
        sizes, repeats = tables(long_text)[:2]
        mine = next(r for r in sizes if r["compressor"].startswith("default"))
        peers = "; ".join(f"{r['compressor']} {r['compressed bytes']}" for r in sizes
                          if not r["compressor"].startswith(("default", "bytes-", "bitwise-")))
        again = next(r for r in repeats if r["model"].startswith("default"))
        out.append(f"- **A text of {mine['bytes']} bytes** ({mine['file']}, no log): {mine['compressed bytes']} "
                   f"bytes ({peers}); followed by its first MiB again, the repeat costs "
                   f"{again['the repeat, bits/byte']} bits/byte.")
    speed = section(text, "default_speed")
    if speed is not None:
        cells = "; ".join(f"{r['command']} {r['new / reference (median)']}" for r in tables(speed)[0])
        xz = re.search(r"takes ([\d.]+) times xz -9e's CPU time", speed)
        out.append(f"- **Speed against seqd 0.16**, CPU time of whole processes, paired, new / old: {cells}"
                   + (f"; `seqd compress` takes {xz.group(1)} times `xz -9e`'s CPU time." if xz else "."))
    return out


def _speed(text: str) -> list[str]:
    block = section(text, "speed_vs_0_16")
    if block is None:
        return ["- Speed against seqd 0.16: no `speed_vs_0_16` section yet."]
    rows = tables(block)[0]
    cells = "; ".join(f"{r['command']} {r['new / 0.16 (median)']}" for r in rows)
    xz = re.search(r"takes ([\d.]+) times xz -9e's CPU time", block)
    return [f"- **Speed against seqd 0.16**, CPU time of whole processes, paired, new / old (\"Three times the "
            f"throughput\"): {cells}" + (f"; `seqd compress` takes {xz.group(1)} times `xz -9e`'s CPU time."
                                         if xz else ".")]


def _bitwise(text: str) -> list[str]:
    bits, speed = section(text, "bitwise_bits"), section(text, "bitwise_speed")
    if bits is None or speed is None:
        return []
    means = {r["file"]: r for r in tables(bits)[0] if r["file"].endswith("size-weighted")}
    public, held = means["public logs, size-weighted"], means["held-out logs, size-weighted"]
    ratios = "; ".join(f"{r['command']} {r['new / reference (median)']}" for r in tables(speed)[0])
    xz = re.search(r"takes ([\d.]+) times xz -9e's CPU time", speed)
    return [f"- **The bitwise model** (preset `bitwise-2`: `seqd eval --preset bitwise`, `seqd compress --model "
            f"bitwise`; \"The bitwise byte model, second version\"): public mean {public['bitwise']} bits/byte "
            f"(`bytes-12` {public['bytes-12']}), held-out {held['bitwise']} ({held['bytes-12']}); CPU time against "
            f"seqd 0.16, paired: {ratios}" + (f"; its compress takes {xz.group(1)} times `xz -9e`'s CPU time."
                                               if xz else ".")]


def _compressor(text: str) -> list[str]:
    block = section(text, "compress_logs")
    if block is None:
        return ["- `seqd compress`: no `compress_logs` section yet."]
    mean = next(r for r in tables(block)[0] if r["file"].startswith("mean"))
    return [f"- **`seqd compress`** on the same logs (\"Compression\", {header_line(block, 'Machine')}): "
            f"{mean['.sqd bytes']} bytes for {mean['bytes']}, {mean['seqd']} bits/byte with every header and "
            f"checksum (xz -9e {mean['xz-9e']}, PPMd {mean['ppmd-o16']}); {mean['compress B/s']} bytes/s to compress, "
            f"{mean['decompress B/s']} to decompress, one core."]


def _daemon(text: str) -> list[str]:
    out = []
    many = section(text, "many_streams")
    if many is not None:
        kv = dict(re.findall(r"^\| (.+?) \| (.+?) \|$", many, re.M))  # a two-column table without headers
        out.append(f"- **The daemon, many streams** (\"Many streams\"): {kv.get('streams', '?')} streams in a "
                   f"budget of {kv.get('budget (max_state_bytes)', '?').split(':')[0]}; predict p50 / p99 "
                   f"{kv.get('predict latency p50 / p99 (client, from the views)', '?')}; "
                   f"{kv.get('streams whose statistics equal an in-process learner' + chr(39) + 's', '?')} streams "
                   f"exact.")
    crash = section(text, "crash_recovery")
    if crash is not None:
        lost = re.search(r"acknowledged symbols lost: ([^.]*)", crash)
        kills = len(tables(crash)[0])
        over = re.search(r"Restarts over max_state_bytes \+ base: (\d+ of \d+)", crash)
        out.append(f"- **kill -9** (\"kill -9 with hibernation\"): {kills} kills, acknowledged symbols lost: "
                   f"{lost.group(1) if lost else '?'}; restarts over the memory budget: "
                   f"{over.group(1) if over else '?'}.")
    load = section(text, "daemon_load")
    if load is not None:
        ratio = re.search(r"\*\*daemon / in-process\*\* \| \| \| \*\*([\d.]+%)\*\*", load)
        out.append(f"- **Under load** (\"The daemon under load\"): 8 streams learn at "
                   f"{ratio.group(1) if ratio else '?'} of the in-process rate while serving 500 predictions a second.")
    capacity = section(text, "daemon_capacity")
    if capacity is not None:
        row = next(r for r in tables(capacity)[0] if r[""] == "daemon")
        out.append(f"- **Capacity** (\"Three times the throughput\"): one busy stream {row['1 stream (symbols/s)']} "
                   f"symbols/s, two {row['2 streams (symbols/s, together)']} together: {row['2 over 1']}.")
    return out or ["- The daemon: no sections yet."]


def _cluster(text: str) -> list[str]:
    block = section(text, "cluster")
    if block is None:
        return ["- The cluster: no `cluster` section yet."]
    ingest, append, move = tables(block)[:3]
    rates = " / ".join(r["aggregate KiB/s"] for r in ingest)
    sizes = " / ".join(r["replicas"] for r in ingest)
    js = next(r for r in append if r["log"].startswith("JetStream"))
    wal = next(r for r in append if r["log"].startswith("local"))
    planned = next(r for r in move if r["the owner"].startswith("stopped (SIGTERM): planned"))
    killed = next(r for r in move if r["the owner"].startswith("killed"))
    return [f"- **On a cluster** (\"seqd on a cluster\", `python bench/cluster.py`): ingest {rates} KiB/s with "
            f"{sizes} replicas on 2 cores; a 4 KiB append {js['median ms']} ms median on JetStream against "
            f"{wal['median ms']} on the local log; a planned move's longest publish {planned['prober' + chr(39) + 's longest publish, s']} s, "
            f"a kill's {killed['prober' + chr(39) + 's longest publish, s']} s; the fault test in the default run "
            "(`tests/test_cluster_faults.py`)."]


def _table1(text: str) -> list[str]:
    block = section(text, "paper_whole")
    if block is None:
        return ["- Seed 000's Table 1: no `paper_whole` section yet."]
    rows = tables(block)[0]
    glnn = next(r for r in rows if r["model, method"] == "GLNN rbpm")
    parts = []
    for task, col in (("alphabet", "alphabet: here (N)"), ("music", "music: here (N)"), ("aⁿbⁿ", "anbn: here (N)")):
        paper_col = list(glnn)[list(glnn).index(col) + 1]
        here = float(glnn[col].split(" ")[0].replace(",", ""))
        paper = float(glnn[paper_col].replace(",", ""))
        parts.append(f"{task} {here:,.1f} bits against the paper's {paper:,.1f} ({here / paper:.1f}×)")
    lstm = section(text, "paper_whole_lstm")
    n_lstm = len(tables(lstm)[0]) if lstm else 0
    checks = [name for key, name in (("paper_hmm", "the HMM"), ("paper_ctw", "bzip2 and CTW")) if section(text, key)]
    n = len(rows) + n_lstm + (1 if "the HMM" in checks else 0) + (2 if "bzip2 and CTW" in checks else 0)
    return [f"- **Seed 000's Table 1** (\"Table 1, whole\"): {n} of its 15 rows measured at a twentieth of the "
            f"paper's budget ({len(rows)} network rows, {n_lstm} LSTM rows"
            + "".join(f", {c}" for c in checks) + "); its best method, GLNN RBPM: " + "; ".join(parts) + "."]


def summary(text: str) -> str:
    lines = ["Made by `python bench/summary.py` from the sections named; each figure's machine and command are "
             "in its section.", ""]
    lines += _default(text) + _compressor(text) + _daemon(text) + _cluster(text) + _table1(text)
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()
    body = summary(BENCHMARKS_MD.read_text())
    print(body)
    if not args.no_write:
        write_section("summary", body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
