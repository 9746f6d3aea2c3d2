"""``seqd publish``: send a file, a pipe or a growing log to a stream of a running daemon.

Every batch is a conditional append at the stream's current length, so that
a retried batch is never learned twice, and a second writer is noticed (the
daemon answers a conflict) rather than interleaved.  ``--follow`` follows
the file by its name through log rotation and truncation (``_follow.py``)
until SIGINT or SIGTERM: what the file holds by then is sent, and the run
ends with 0 (a second signal ends it at once), as ``seqd compress --follow``
does, whether the signal comes from a terminal, from systemd, or to a
process started in the background (which inherits SIGINT ignored).
On a terminal a progress line shows what was sent, then, unless
``--no-wait``, how far the daemon has learned it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

from seqd.clients.client import DEFAULT_MAX_BATCH, Client
from seqd.clients.errors import ConflictError, NoSuchStreamError
from seqd.clients.protocol import PRESETS

from ._client import add_connection_flags, connect, one_line_errors, positive
from ._display import StatusLine, human_size
from ._follow import Follower

SENT_LINE_SECONDS = 0.5  # the "sent" progress line is redrawn at most this often
LEARNED_POLL_SECONDS = 0.25  # how often the daemon is asked how far it has learned


def configure(p: argparse.ArgumentParser) -> None:
    p.description = ("Send bytes to a stream as conditional appends starting at the stream's current length, so "
                     "that retries never duplicate a batch.")
    p.add_argument("stream", metavar="NAME", help="the stream")
    p.add_argument("file", metavar="FILE|-", nargs="?", default="-",
                   help="the file to send, or - for stdin (the default)")
    p.add_argument("--stream", dest="stream_option", metavar="NAME", help=argparse.SUPPRESS)  # seqd <= 0.9's form
    p.add_argument("--follow", action="store_true",
                   help="keep sending what is appended to FILE, through log rotation, as tail -F does, until "
                        "SIGINT or SIGTERM (what the file holds by then is sent; a second signal ends at once)")
    p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                   help="once everything is sent, wait until the daemon has learned it and print the stream's "
                        "bits per symbol (default: yes; never with --follow)")
    p.add_argument("--batch", type=positive, default=DEFAULT_MAX_BATCH, metavar="N",
                   help=f"symbols per request (default {DEFAULT_MAX_BATCH})")
    p.add_argument("--create", action=argparse.BooleanOptionalAction, default=True,
                   help="create the stream if it does not exist (default: yes)")
    p.add_argument("--preset", choices=PRESETS, default="bytes", help="model of a created stream (default bytes)")
    add_connection_flags(p)
    p.set_defaults(run=one_line_errors(_publish))


def _publish(args) -> int:
    if args.stream_option is not None:  # seqd publish FILE --stream NAME, as before 0.10
        if args.file != "-":
            raise ValueError("the stream is named twice: use seqd publish NAME FILE")
        args.file, args.stream = args.stream, args.stream_option
        print("seqd publish: note: --stream is deprecated; the stream comes first: seqd publish NAME FILE",
              file=sys.stderr)
    stop = threading.Event()  # --follow: SIGINT or SIGTERM came
    source = _open(args.file, args.follow, args.batch, stop)  # first: an unreadable input creates no stream
    previous = _stop_on_signals(stop) if args.follow else {}
    try:
        return _send(args, source)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop_on_signals(stop: threading.Event) -> dict:
    """SIGINT and SIGTERM end a follow once what the file holds is sent; a second one ends it at once (as
    KeyboardInterrupt).  Returns the handlers they replace."""
    def on_signal(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
    return {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}


def _send(args, source) -> int:
    with connect(args, max_batch=args.batch) as client:
        created = False
        try:
            position = client.stats(args.stream).accepted
        except NoSuchStreamError:
            if not args.create:
                raise ValueError(f"no stream {args.stream!r} (drop --no-create to create it)") from None
            created = client.create(args.stream, preset=args.preset, exist_ok=True).created
            position = client.stats(args.stream).accepted
        start, sent, began = position, 0, time.monotonic()
        status = StatusLine(sys.stderr.isatty(), every=SENT_LINE_SECONDS)
        try:
            for chunk in _chunks(source, args.batch):
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
        except BaseException:
            if created and position == start:  # nothing of ours reached it: the stream we made goes too
                _drop_quietly(client, args.stream)
            raise
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


def _drop_quietly(client: Client, stream: str) -> None:
    """Drop the stream this run created and could not fill; the error that ended the run is the one shown."""
    try:
        client.drop(stream)
        print(f"seqd publish: dropped stream {stream!r}, which this run had created and sent nothing to",
              file=sys.stderr)
    except Exception as exc:
        print(f"seqd publish: could not drop stream {stream!r}, created by this run and left empty: {exc}",
              file=sys.stderr)


def _open(name: str, follow: bool, size: int, stop: threading.Event):
    """The input, opened: stdin, a :class:`Follower` (until ``stop`` is set), or a file (a clear error if it
    cannot be read)."""
    if name == "-":
        return sys.stdin.buffer
    if os.path.isdir(name):
        raise ValueError(f"{name}: is a directory")
    try:
        return Follower(name, size, keep_going=lambda: not stop.is_set()) if follow else open(name, "rb")
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file") from None


def _chunks(source, size: int) -> Iterator[bytes]:
    if isinstance(source, Follower):
        yield from source
    elif source is sys.stdin.buffer:
        read = getattr(source, "read1", source.read)  # whatever has arrived: a live pipe is not held back
        while chunk := read(size):
            yield chunk
    else:
        with source:
            while chunk := source.read(size):
                yield chunk
