"""``seqd subscribe``: a stream's prediction events, one line each, as the daemon publishes them.

The daemon is asked about the stream first, within ``--timeout``: an absent
daemon or stream is an error at once, not a silent wait.  Events then come
as the stream learns, for as long as it takes.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from ._client import add_connection_flags, connect, one_line_errors, positive, show_symbol


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", metavar="NAME")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--count", type=positive, metavar="N", help="exit after N events")
    p.add_argument("--pub", metavar="ENDPOINT", help="the PUB endpoint (default: the API endpoint's port + 1)")
    add_connection_flags(p)
    p.set_defaults(run=one_line_errors(_subscribe))


def _subscribe(args) -> int:
    with connect(args, retries=0) as client:
        # the daemon and the stream, checked first (within --timeout): events from an absent daemon or for
        # an absent stream would never come, and a SUB socket cannot tell
        client.stats(args.stream)
        client.pub = args.pub
        seen = 0
        with client.subscribe(args.stream) as events:
            for event in events:
                if args.json:
                    print(json.dumps({**asdict(event), "top": [list(t) for t in event.top]}), flush=True)
                else:
                    bps = event.bits / event.symbols if event.symbols else float("nan")
                    top = ", ".join(f"{show_symbol(s)} {p:.3f}" for s, p in event.top)
                    print(f"{event.stream} @{event.position}  +{event.symbols}  {bps:.3f} bits/symbol  {top}",
                          flush=True)
                seen += 1
                if args.count and seen >= args.count:
                    break
    return 0
