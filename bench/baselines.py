"""Peer compressors on real logs: bits per byte, all measured in the same run on this machine.

The peers are the general-purpose compressors seqd is compared with:

* ``gzip-9``, ``bzip2-9``, ``xz-9e``, ``zstd-19``: the command-line tools, data
  on standard input, compressed bytes counted from standard output;
* ``ppmd-o16``: PPMd (variant I) through ``pyppmd.compress(data, max_order=16,
  mem_size=256 << 20)`` (``pip install -e '.[bench]'``);
* ``kt-o3``: an adaptive order-3 context-count model with the
  Krichevsky–Trofimov estimator, the simplest honest online baseline.  Its
  figure is the ideal code length (sum of -log2 p), not a file.

A peer that cannot run here (tool not installed, ``pyppmd`` not importable)
gives ``None`` and is reported with the reason; nothing crashes.

    python bench/baselines.py            # print the table
    python bench/baselines.py --write    # also record it in docs/benchmarks.md

The logs are read from ``../shared/data/logs`` beside the repository: the
2,000-line samples of Loghub (https://github.com/logpai/loghub) and a Debian
``dpkg.log``.  Without that folder the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, command_line, machine, report  # noqa: E402
from seqd.core.jit import kernel  # noqa: E402

PEERS: tuple[str, ...] = ("gzip-9", "bzip2-9", "xz-9e", "zstd-19", "ppmd-o16", "kt-o3")
LOGS = ROOT.parent / "shared" / "data" / "logs"
LOGHUB = "https://github.com/logpai/loghub"

# name -> command line that reads standard input and writes the compressed stream to standard output
TOOLS = {
    "gzip-9": ["gzip", "-9", "-c"],
    "bzip2-9": ["bzip2", "-9", "-c"],
    "xz-9e": ["xz", "-9e", "-c"],
    "zstd-19": ["zstd", "-19", "-q", "-c"],
}
PPMD_ORDER = 16
PPMD_MEMORY = 256 << 20
MAX_KT_ORDER = 7  # a context of up to 7 bytes plus its length fits one int64 key


# ----------------------------------------------------------------------------- Krichevsky–Trofimov context model

@kernel
def _kt_code_length(context, pair, context_total, pair_count, n_symbols):
    """Sum of -log2 p(x_t | c_t) with KT counts; ``context[t]``, ``pair[t]`` index c_t and (c_t, x_t), whose
    counts ``context_total`` and ``pair_count`` (zeros) receive."""
    half_alphabet = 0.5 * n_symbols
    bits = 0.0
    for t in range(context.size):
        c, p = context[t], pair[t]
        bits -= math.log2((pair_count[p] + 0.5) / (context_total[c] + half_alphabet))
        pair_count[p] += 1
        context_total[c] += 1
    return bits


def kt_code_length_bits(data: bytes, order: int = 3) -> float:
    """Code length in bits of ``data`` under an adaptive order-``order`` KT context model.

    At position t the context is the previous min(order, t) bytes (contexts of
    different lengths are distinct) and

        p(x_t | c) = (n(c, x_t) + 1/2) / (n(c) + |S|/2),

    where S is the set of distinct byte values of the whole of ``data`` (the
    model is told S in advance) and the counts n are updated after each byte.

    >>> kt_code_length_bits(b"ab", order=0)  # 1 bit for 'a', then (0 + 1/2) / (1 + 1) for 'b'
    3.0
    """
    if not 0 <= order <= MAX_KT_ORDER:
        raise ValueError(f"order must be in 0..{MAX_KT_ORDER}, got {order}")
    x = np.frombuffer(bytes(data), dtype=np.uint8)
    n = x.size
    if n == 0:
        return 0.0
    alphabet, symbol = np.unique(x, return_inverse=True)
    # key = (context length) << 56 | previous bytes, most recent in the low byte
    key = np.zeros(n, np.int64)
    for j in range(1, order + 1):
        key[j:] |= x[:-j].astype(np.int64) << (8 * (j - 1))
    length = np.minimum(np.arange(n, dtype=np.int64), order)
    key |= length << 56
    contexts, context = np.unique(key, return_inverse=True)
    context = context.reshape(-1).astype(np.int64)
    # index the (context, symbol) pairs the same way: no n_contexts x |S| table
    pairs, pair = np.unique(context * alphabet.size + symbol.reshape(-1), return_inverse=True)
    return float(_kt_code_length(context, pair.reshape(-1).astype(np.int64), np.zeros(contexts.size, np.int64),
                                 np.zeros(pairs.size, np.int64), alphabet.size))


def _kt_order(name: str) -> int | None:
    if name.startswith("kt-o") and name[4:].isdigit():
        return int(name[4:])
    return None


# ----------------------------------------------------------------------------- peers

def _ppmd():
    try:
        import pyppmd
    except ImportError:
        return None
    return pyppmd


def unavailable(name: str) -> str | None:
    """Why peer ``name`` cannot run on this machine, or None when it can."""
    if name in TOOLS:
        tool = TOOLS[name][0]
        return None if shutil.which(tool) else f"`{tool}` is not installed"
    if name == "ppmd-o16":
        return None if _ppmd() else "`pyppmd` is not importable (pip install -e '.[bench]')"
    if _kt_order(name) is not None:
        return None
    raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)} (and kt-o0 .. kt-o{MAX_KT_ORDER})")


def compressed_bits(name: str, data: bytes) -> int | None:
    """Bits of peer ``name``'s compressed output of ``data`` (8 x bytes), or None when the peer cannot run here.

    For ``kt-oK`` it is the model's code length rounded up to a whole bit.
    """
    if unavailable(name) is not None:
        return None
    order = _kt_order(name)
    if order is not None:
        return math.ceil(kt_code_length_bits(data, order))
    if name == "ppmd-o16":
        return 8 * len(_ppmd().compress(bytes(data), max_order=PPMD_ORDER, mem_size=PPMD_MEMORY))
    proc = subprocess.run(TOOLS[name], input=bytes(data), capture_output=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(TOOLS[name])} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')}")
    return 8 * len(proc.stdout)


def log_files() -> list[Path]:
    """The ``*.log`` files of ``../shared/data/logs`` beside the repository, sorted; [] if the folder is absent."""
    return sorted(LOGS.glob("*.log")) if LOGS.is_dir() else []


# logs that chose nothing: the benchmark machine's own apt and alternatives logs
HELD_OUT = [Path("/var/log/apt/term.log"), Path("/var/log/apt/history.log"), Path("/var/log/alternatives.log")]


def held_out_files() -> list[Path]:
    """The held-out logs present and readable on this machine (settings are never chosen on them)."""
    found = []
    for path in HELD_OUT:
        try:
            if path.stat().st_size > 0 and path.open("rb").read(1):
                found.append(path)
        except OSError:
            pass
    return found


def table(files, peers=PEERS) -> list[dict]:
    """Per file: ``name``, ``bytes`` and, for each peer, its bits per byte (None when the peer cannot run here)."""
    rows = []
    for path in map(Path, files):
        data = path.read_bytes()
        row = {"name": path.name, "bytes": len(data)}
        for peer in peers:
            bits = compressed_bits(peer, data)
            row[peer] = None if bits is None else bits / max(len(data), 1)
        rows.append(row)
    return rows


def weighted_mean(rows: list[dict], peer: str) -> float | None:
    """Total bits over total bytes (each file weighted by its size); None if the peer is missing on any file."""
    if not rows or any(r[peer] is None for r in rows):
        return None
    return sum(r[peer] * r["bytes"] for r in rows) / sum(r["bytes"] for r in rows)


def markdown(rows: list[dict], peers=PEERS) -> str:
    def cell(v):
        return "—" if v is None else f"{v:.3f}"

    caption = (
        f"Bits per byte (lower is better) on the 2,000-line Loghub samples ({LOGHUB}) and a Debian `dpkg.log`. "
        "gzip/bzip2/xz/zstd are the command-line tools; ppmd-o16 is "
        f"`pyppmd.compress(data, max_order={PPMD_ORDER}, mem_size=256<<20)`; kt-o3 is the code length of an adaptive "
        "order-3 Krichevsky–Trofimov context model over the file's distinct byte values."
    )
    lines = [
        caption,
        "",
        "| file | bytes | " + " | ".join(peers) + " |",
        "|---|---:|" + "---:|" * len(peers),
    ]
    for r in rows:
        lines.append(f"| {r['name']} | {r['bytes']} | " + " | ".join(cell(r[p]) for p in peers) + " |")
    lines.append("| **mean (weighted by size)** | | " + " | ".join(cell(weighted_mean(rows, p)) for p in peers) + " |")
    notes = [f"{p}: {why}" for p in peers if (why := unavailable(p))]
    if notes:
        lines += ["", "Not measured here: " + "; ".join(notes) + "."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write", action="store_true", help="record the table in docs/benchmarks.md")
    args = p.parse_args(argv)
    files = log_files()
    if not files:
        print(f"No logs to measure: {LOGS} is absent or holds no *.log file; nothing to do.")
        return 0
    text = f"Command: `{command_line('baselines.py', argv)}`  \nMachine: {machine()}\n\n{markdown(table(files))}\n"
    report("log_baselines", text, args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
