"""``seqd publish``: send a file, a pipe or a growing log to a stream of a running daemon.

Every batch is a conditional append at the stream's current length, so that
a retried batch is never learned twice, and a second writer is noticed (the
daemon answers a conflict) rather than interleaved.  ``--follow`` follows
the file by its name through log rotation and truncation (``_follow.py``).
On a terminal a progress line shows what was sent, then, unless
``--no-wait``, how far the daemon has learned it.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator

from seqd.clients.client import DEFAULT_MAX_BATCH, Client
from seqd.clients.errors import ConflictError, NoSuchStreamError

from ._client import add_connection_flags, connect, one_line_errors, positive
from ._display import StatusLine, human_size
from ._follow import Follower

SENT_LINE_SECONDS = 0.5  # the "sent" progress line is redrawn at most this often
LEARNED_POLL_SECONDS = 0.25  # how often the daemon is asked how far it has learned


def configure(p: argparse.ArgumentParser) -> None:
    p.description = ("Send bytes to a stream as conditional appends starting at the stream's current length, so "
                     "that retries never duplicate a batch.")
    p.add_argument("file", metavar="FILE|-", help="the file to send, or - for stdin")
    p.add_argument("--stream", required=True, metavar="NAME")
    p.add_argument("--follow", action="store_true",
                   help="keep sending what is appended to FILE, through log rotation, as tail -F does")
    p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                   help="once everything is sent, wait until the daemon has learned it and print the stream's "
                        "bits per symbol (default: yes; never with --follow)")
    p.add_argument("--batch", type=positive, default=DEFAULT_MAX_BATCH, metavar="N",
                   help=f"symbols per request (default {DEFAULT_MAX_BATCH})")
    p.add_argument("--create", action=argparse.BooleanOptionalAction, default=True,
                   help="create the stream if it does not exist (default: yes)")
    p.add_argument("--preset", choices=("bytes", "glnn"), default="bytes", help="model of a created stream")
    add_connection_flags(p)
    p.set_defaults(run=one_line_errors(_publish))


def _publish(args) -> int:
    if args.file != "-" and not os.path.isfile(args.file):
        raise ValueError(f"{args.file}: no such file")
    with connect(args, max_batch=args.batch) as client:
        try:
            position = client.stats(args.stream).accepted
        except NoSuchStreamError:
            if not args.create:
                raise ValueError(f"no stream {args.stream!r} (drop --no-create to create it)") from None
            client.create(args.stream, preset=args.preset, exist_ok=True)
            position = client.stats(args.stream).accepted
        start, sent, began = position, 0, time.monotonic()
        status = StatusLine(sys.stderr.isatty(), every=SENT_LINE_SECONDS)
        try:
            for chunk in _chunks(args.file, args.batch, args.follow):
                try:
                    position = client.publish(args.stream, chunk, position=position).position
                except ConflictError as exc:
                    raise ValueError(f"stream {args.stream!r} changed under us ({exc.message}): is another "
                                     "publisher writing to it?") from None
                sent += len(chunk)
                rate = sent / max(time.monotonic() - began, 1e-9)
                status.show(f"  {human_size(sent)} sent, {human_size(rate)}/s, position {position}")
        except KeyboardInterrupt:
            _summary(args.stream, position - start, position, status, interrupted=True)
            return 0 if args.follow else 130
        _summary(args.stream, position - start, position, status)
        if args.wait and not args.follow:
            try:
                _wait_learned(client, args.stream, position, StatusLine(sys.stderr.isatty()))
            except KeyboardInterrupt:  # the batches are acknowledged: the daemon learns them anyway
                print("not waiting: the daemon goes on learning what was sent (see `seqd stats`)")
                return 0
    return 0


def _summary(stream: str, count: int, position: int, status: StatusLine, interrupted: bool = False) -> None:
    status.clear()
    note = " (interrupted; everything counted was acknowledged)" if interrupted else ""
    print(f"published {count} symbols to {stream}; position {position}{note}")


def _wait_learned(client: Client, stream: str, position: int, status: StatusLine) -> None:
    """Until the stream has learned ``position`` symbols (progress on a terminal); then its rate."""
    while (st := client.stats(stream)).position < position:
        status.show(f"  learning: {st.position} of {position} symbols, "
                    f"{st.recent_bits_per_symbol or 0:.3f} bits/symbol recently")
        time.sleep(LEARNED_POLL_SECONDS)
    status.clear()
    print(f"learned: {st.position} symbols at {st.bits_per_symbol:.4f} bits/symbol "
          f"({st.recent_bits_per_symbol:.4f} over the last 4096)")


def _chunks(name: str, size: int, follow: bool) -> Iterator[bytes]:
    if name == "-":
        stdin = sys.stdin.buffer
        read = getattr(stdin, "read1", stdin.read)  # whatever has arrived: a live pipe is not held back
        while chunk := read(size):
            yield chunk
        return
    if follow:
        yield from Follower(name, size)
        return
    with open(name, "rb") as f:
        while chunk := f.read(size):
            yield chunk
