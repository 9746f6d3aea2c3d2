"""``seqd drop``: delete a stream of a running daemon, with everything it has learned.

Dropping cannot be undone: on a terminal it asks first, and elsewhere (a
script, a pipe) it needs ``--yes``.
"""

from __future__ import annotations

import argparse
import sys

from ._client import add_connection_flags, connect, one_line_errors


def configure(p: argparse.ArgumentParser) -> None:
    p.description = ("Delete a stream: its learner, snapshot and write-ahead log. It cannot be undone; "
                     "a stream of the same name created later starts from nothing.")
    p.add_argument("stream", metavar="NAME")
    p.add_argument("-y", "--yes", action="store_true", help="do not ask (needed when not on a terminal)")
    add_connection_flags(p)
    p.set_defaults(run=one_line_errors(_drop))


def _drop(args) -> int:
    with connect(args) as client:
        st = client.stats(args.stream)  # an absent stream is an error before anything is asked
        if not args.yes:
            if not sys.stdin.isatty():
                raise ValueError(f"dropping {args.stream!r} deletes everything it learned; "
                                 "pass --yes to do it without a terminal")
            answer = input(f"drop stream {args.stream!r} and everything it learned ({_held(st)})? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("not dropped")
                return 1
        client.drop(args.stream)
    print(f"dropped stream {args.stream} ({_held(st)})")
    return 0


def _held(st) -> str:
    waiting = st.accepted - st.position
    return f"{st.position:,} symbols learned" + (f", {waiting:,} more accepted" if waiting else "")
