"""``seqd streams``: every stream of a running daemon, a line each: what it has learned, how well, its state."""

from __future__ import annotations

import argparse
import json
import sys

from seqd.clients.errors import NoSuchStreamError

from ._client import add_connection_flags, connect, one_line_errors
from ._display import human_size, json_safe

COLUMNS = ("NAME", "LEARNED", "QUEUED", "BITS/SYM", "RECENT", "MEMORY", "STATE")


def configure(p: argparse.ArgumentParser) -> None:
    p.description = ("List the daemon's streams: symbols learned and waiting, bits per symbol over the whole "
                     "stream and over its last 4096 symbols, the learner's memory (or \"hibernated\": held by "
                     "its snapshot until a batch wakes it), and its state (live; broken: refusing publishes until "
                     "a restart; unavailable: its files could not be restored).")
    p.add_argument("--json", action="store_true", help="one JSON object per stream, a line each")
    add_connection_flags(p)
    p.set_defaults(run=one_line_errors(_streams))


def _streams(args) -> int:
    rows = []
    with connect(args) as client:
        server = client.stats()
        for name in server.streams:
            try:
                st = client.stats(name)
            except NoSuchStreamError:  # dropped since the list was read
                continue
            rows.append({"stream": name, "learned": st.position, "queued": st.queued,
                         "bits_per_symbol": st.bits_per_symbol, "recent_bits_per_symbol": st.recent_bits_per_symbol,
                         "state_bytes": st.state_bytes, "resident": st.resident is not False,
                         "state": st.state or "live", "why": st.broken})
    for name, why in sorted((server.raw.get("unavailable") or {}).items()):
        rows.append({"stream": name, "learned": None, "queued": None, "bits_per_symbol": None,
                     "recent_bits_per_symbol": None, "state_bytes": None, "resident": False, "state": "unavailable",
                     "why": why})
    if args.json:
        for row in rows:
            print(json.dumps(json_safe(row), allow_nan=False))
        _note_unserved(server)
        return 0
    table = [COLUMNS] + [(r["stream"], _n(r["learned"]), _n(r["queued"]), _f(r["bits_per_symbol"]),
                          _f(r["recent_bits_per_symbol"]),
                          _memory(r),
                          r["state"] + (f": {r['why']}" if r["why"] else "")) for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS) - 1)]
    for row in table:
        cells = [cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        print("  ".join(cells + [row[-1]]))
    if not rows:
        print("(no streams)")
    _note_unserved(server)
    return 0


def _note_unserved(server) -> None:
    """On a cluster: partitions no replica served while the list was read (moving between owners, or no
    replica up for them): their streams are missing from it."""
    unserved = server.raw.get("unserved")
    if unserved:
        print(f"seqd streams: partition(s) {', '.join(map(str, unserved))} had no owner while the list was read "
              "(moving between replicas, or none up): their streams are not listed", file=sys.stderr)


def _memory(row) -> str:
    """The learner's memory while it is in memory; "hibernated" while its snapshot holds it."""
    if row["state_bytes"] is None:
        return "-"
    return human_size(row["state_bytes"]) if row["resident"] else "hibernated"


def _n(value) -> str:
    return "-" if value is None else f"{value:,}"


def _f(value) -> str:
    return "-" if value is None else f"{value:.4f}"
