"""``seqd stats``: a stream's statistics, or the daemon's; exit 0 if and only if the daemon answers.

It asks once (no retry), so that a health probe (``docker HEALTHCHECK``, a
Kubernetes exec probe) learns within ``--timeout`` whether the daemon is up.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone

from seqd.clients.results import ServerStats

from ._client import add_connection_flags, connect, one_line_errors
from ._display import json_safe


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", nargs="?", metavar="NAME")
    p.add_argument("--json", action="store_true")
    add_connection_flags(p)
    p.set_defaults(run=one_line_errors(_stats))


def _stats(args) -> int:
    with connect(args, retries=0) as client:
        st = client.stats(args.stream)
    raw = dict(st.raw)
    if args.json:
        print(json.dumps(json_safe(raw), allow_nan=False))  # an infinite code length as null
        return 0
    if isinstance(st, ServerStats):
        raw["streams"] = ", ".join(st.streams) or "-"
    else:  # the stream first, and "position" as what it means here
        raw = {"stream": raw.pop("stream"), "learned": raw.pop("position"), "accepted": raw.pop("accepted"),
               "queued": raw.pop("queued"), **raw}
    config = raw.pop("config", None)
    if isinstance(raw.get("created"), (int, float)):  # an epoch in the reply; a time a reader reads, here
        raw["created"] = datetime.fromtimestamp(raw["created"], timezone.utc).isoformat(timespec="seconds")
    repairs = raw.pop("repairs", None)
    if repairs:
        last = repairs[-1]
        raw["repairs"] = (f"{len(repairs)}; the last at {last.get('time')}: the log was cut at position "
                          f"{last.get('position')}, losing {last.get('lost_log_bytes')} bytes of it and at least "
                          f"{last.get('lost_symbols_at_least', 0)} symbols")
    width = max(map(len, raw), default=0)
    for key, value in raw.items():
        shown = "-" if value is None else f"{value:.4f}" if isinstance(value, float) else value
        print(f"{key:{width}s}  {shown}")
    if config:
        print(f"{'config':{width}s}  " + ", ".join(f"{k}={v}" for k, v in config.items()))
    return 0
