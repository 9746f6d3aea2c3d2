"""``seqd predict``: a stream's most probable next symbols, as the daemon's model has them now."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from ._client import add_connection_flags, connect, one_line_errors, show_symbol

DEFAULT_TOP = 10


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", metavar="NAME")
    p.add_argument("--top", type=int, default=DEFAULT_TOP, metavar="K",
                   help=f"how many symbols (default {DEFAULT_TOP})")
    p.add_argument("--json", action="store_true")
    add_connection_flags(p)
    p.set_defaults(run=one_line_errors(_predict))


def _predict(args) -> int:
    with connect(args) as client:
        pred = client.predict(args.stream, top=args.top)
    if args.json:
        print(json.dumps({**asdict(pred), "top": [list(t) for t in pred.top]}))
        return 0
    print(f"{pred.stream}: position {pred.position}, alphabet {pred.alphabet_size}, escape {pred.escape:.4f}")
    for s, p in pred.top:
        print(f"  {show_symbol(s):>8s}  {p:.4f}")
    return 0
