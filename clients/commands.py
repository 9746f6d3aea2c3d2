"""``seqd publish``, ``seqd predict``, ``seqd stats`` and ``seqd subscribe``: the client side of the CLI.

``register(sub)`` adds the subcommands to seqd's argument parser.  Every one
takes ``--api`` (default ``$SEQD_API`` or tcp://127.0.0.1:7710) and
``--timeout``; failures are one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict

from ._common import DEFAULT_API, DEFAULT_MAX_BATCH
from .client import Client
from .errors import ConflictError, NoSuchStreamError, SeqdError, SeqdTimeout
from .results import ServerStats

POLL_SECONDS = 0.25


def register(sub) -> None:
    p = sub.add_parser("publish", help="publish a file or stdin to a stream of a running daemon",
                       description="Send bytes to a stream as conditional appends starting at the stream's current "
                                   "length, so that retries never duplicate a batch.")
    p.add_argument("file", metavar="FILE|-", help="the file to send, or - for stdin")
    p.add_argument("--stream", required=True, metavar="NAME")
    p.add_argument("--follow", action="store_true", help="keep sending what is appended to FILE, as tail -f does")
    p.add_argument("--wait", action=argparse.BooleanOptionalAction, default=True,
                   help="once everything is sent, wait until the daemon has learned it and print the stream's "
                        "bits per symbol (default: yes; never with --follow)")
    p.add_argument("--batch", type=_positive, default=DEFAULT_MAX_BATCH, metavar="N",
                   help=f"symbols per request (default {DEFAULT_MAX_BATCH})")
    p.add_argument("--create", action=argparse.BooleanOptionalAction, default=True,
                   help="create the stream if it does not exist (default: yes)")
    p.add_argument("--preset", choices=("bytes", "glnn"), default="bytes", help="model of a created stream")
    _common_flags(p)
    p.set_defaults(run=_guard(_publish))

    p = sub.add_parser("predict", help="show a stream's most probable next symbols")
    p.add_argument("stream", metavar="NAME")
    p.add_argument("--top", type=int, default=10, metavar="K", help="how many symbols (default 10)")
    p.add_argument("--json", action="store_true")
    _common_flags(p)
    p.set_defaults(run=_guard(_predict))

    p = sub.add_parser("stats", help="a stream's or the daemon's statistics (exit 0 iff the daemon answers)")
    p.add_argument("stream", nargs="?", metavar="NAME")
    p.add_argument("--json", action="store_true")
    _common_flags(p)
    p.set_defaults(run=_guard(_stats))

    p = sub.add_parser("subscribe", help="print a stream's prediction events as they come")
    p.add_argument("stream", metavar="NAME")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--count", type=_positive, metavar="N", help="exit after N events")
    p.add_argument("--pub", metavar="ENDPOINT", help="the PUB endpoint (default: the API endpoint's port + 1)")
    _common_flags(p)
    p.set_defaults(run=_guard(_subscribe))


def _common_flags(p) -> None:
    p.add_argument("--api", metavar="ENDPOINT", help=f"the daemon's API endpoint (default $SEQD_API or {DEFAULT_API})")
    p.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS", help="per request (default 5)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _api(args) -> str:
    return args.api or os.environ.get("SEQD_API") or DEFAULT_API


def _client(args, **kw) -> Client:
    if args.timeout <= 0:
        raise ValueError("--timeout must be positive")
    return Client(_api(args), timeout=args.timeout, **kw)


def _guard(run: Callable) -> Callable:
    """Client errors as one line: the CLI's main handles ValueError and OSError, not SeqdError."""
    def wrapped(args) -> int:
        try:
            return run(args)
        except SeqdTimeout as exc:
            if not exc.no_reply:
                raise ValueError(exc.message) from None
            raise ValueError(f"cannot reach seqd at {exc.endpoint} (is `seqd serve` running?)") from None
        except SeqdError as exc:
            raise ValueError(exc.message or exc.code) from None
    return wrapped


# --- publish ----------------------------------------------------------------------------------
def _publish(args) -> int:
    if args.file != "-" and not os.path.isfile(args.file):
        raise ValueError(f"{args.file}: no such file")
    with _client(args, max_batch=args.batch) as client:
        try:
            position = client.stats(args.stream).accepted
        except NoSuchStreamError:
            if not args.create:
                raise ValueError(f"no stream {args.stream!r} (drop --no-create to create it)") from None
            client.create(args.stream, preset=args.preset, exist_ok=True)
            position = client.stats(args.stream).accepted
        start, sent, began = position, 0, time.monotonic()
        show = sys.stderr.isatty()
        last_shown = 0.0
        try:
            for chunk in _chunks(args.file, args.batch, args.follow):
                try:
                    position = client.publish(args.stream, chunk, position=position).position
                except ConflictError as exc:
                    raise ValueError(f"stream {args.stream!r} changed under us ({exc.message}): is another "
                                     "publisher writing to it?") from None
                sent += len(chunk)
                if show and time.monotonic() - last_shown > 0.5:
                    last_shown = time.monotonic()
                    rate = sent / max(last_shown - began, 1e-9)
                    sys.stderr.write(f"\r  {_size(sent)} sent, {_size(rate)}/s, position {position}   ")
                    sys.stderr.flush()
        except KeyboardInterrupt:
            _summary(args.stream, position - start, position, show, interrupted=True)
            return 0 if args.follow else 130
        _summary(args.stream, position - start, position, show)
        if args.wait and not args.follow:
            try:
                _wait_learned(client, args.stream, position, show)
            except KeyboardInterrupt:  # the batches are acknowledged: the daemon learns them anyway
                print("not waiting: the daemon goes on learning what was sent (see `seqd stats`)")
                return 0
    return 0


def _summary(stream: str, count: int, position: int, show: bool, interrupted: bool = False) -> None:
    if show:
        sys.stderr.write("\r" + " " * 60 + "\r")
    note = " (interrupted; everything counted was acknowledged)" if interrupted else ""
    print(f"published {count} symbols to {stream}; position {position}{note}")


def _wait_learned(client: Client, stream: str, position: int, show: bool) -> None:
    """Until the stream has learned ``position`` symbols (progress on a terminal); then its rate."""
    while (st := client.stats(stream)).position < position:
        if show:
            sys.stderr.write(f"\r  learning: {st.position} of {position} symbols, "
                             f"{st.recent_bits_per_symbol or 0:.3f} bits/symbol recently   ")
            sys.stderr.flush()
        time.sleep(0.25)
    if show:
        sys.stderr.write("\r" + " " * 70 + "\r")
    print(f"learned: {st.position} symbols at {st.bits_per_symbol:.4f} bits/symbol "
          f"({st.recent_bits_per_symbol:.4f} over the last 4096)")


def _size(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError


def _chunks(name: str, size: int, follow: bool) -> Iterator[bytes]:
    if name == "-":
        stdin = sys.stdin.buffer
        read = getattr(stdin, "read1", stdin.read)  # whatever has arrived: a live pipe is not held back
        while chunk := read(size):
            yield chunk
        return
    yield from follow_file(name, size, follow=follow)


def follow_file(path: str, size: int, *, follow: bool = False, poll: float = POLL_SECONDS,
                keep_going: Callable[[], bool] = lambda: True) -> Iterator[bytes]:
    """The bytes of ``path`` in chunks of at most ``size``; with ``follow``, then what is appended,
    as ``tail -F``: a truncated file is read again from its start, a replaced one (rotation) is
    reopened after the old one is drained.  Polls every ``poll`` seconds while ``keep_going()``."""
    f = open(path, "rb")
    try:
        while True:
            while chunk := f.read(size):
                yield chunk
            if not follow or not keep_going():
                return
            time.sleep(poll)
            try:
                st = os.stat(path)
            except FileNotFoundError:  # rotated away, the new file not there yet
                continue
            if st.st_ino != os.fstat(f.fileno()).st_ino:
                while chunk := f.read(size):  # what was written to the old file before it was replaced
                    yield chunk
                try:
                    new = open(path, "rb")
                except FileNotFoundError:  # replaced again meanwhile: try on the next poll
                    continue
                f.close()
                f = new
            elif st.st_size < f.tell():
                f.seek(0)
    finally:
        f.close()


# --- predict, stats, subscribe ----------------------------------------------------------------
def show_symbol(s: int) -> str:
    """A byte as a reader wants it: 'a', '\\n', 0x00; symbols past 255 as numbers."""
    if s > 255:
        return str(s)
    c = chr(s)
    if s < 128 and (c.isprintable() or c in "\t\n\r"):
        return repr(c)
    return f"0x{s:02x}"


def _predict(args) -> int:
    with _client(args) as client:
        pred = client.predict(args.stream, top=args.top)
    if args.json:
        print(json.dumps({**asdict(pred), "top": [list(t) for t in pred.top]}))
        return 0
    print(f"{pred.stream}: position {pred.position}, alphabet {pred.alphabet_size}, escape {pred.escape:.4f}")
    for s, p in pred.top:
        print(f"  {show_symbol(s):>8s}  {p:.4f}")
    return 0


def _stats(args) -> int:
    with _client(args, retries=0) as client:
        st = client.stats(args.stream)
    raw = dict(st.raw)
    if args.json:
        print(json.dumps(raw))
        return 0
    if isinstance(st, ServerStats):
        raw["streams"] = ", ".join(st.streams) or "-"
    else:  # the stream first, and "position" as what it means here
        raw = {"stream": raw.pop("stream"), "learned": raw.pop("position"), "accepted": raw.pop("accepted"),
               "queued": raw.pop("queued"), **raw}
    config = raw.pop("config", None)
    width = max(map(len, raw), default=0)
    for key, value in raw.items():
        shown = "-" if value is None else f"{value:.4f}" if isinstance(value, float) else value
        print(f"{key:{width}s}  {shown}")
    if config:
        print(f"{'config':{width}s}  " + ", ".join(f"{k}={v}" for k, v in config.items()))
    return 0


def _subscribe(args) -> int:
    with _client(args) as client:
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
