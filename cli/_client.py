"""What the client subcommands share: the ``--api`` and ``--timeout`` flags, the client, errors, symbols.

``seqd publish``, ``predict``, ``stats`` and ``subscribe`` talk to a running
daemon through the client library (``seqd.clients``), which imports neither
NumPy nor the model: these commands start in a fraction of a second, as a
health probe that runs ``seqd stats`` every few seconds needs.  Every one
takes ``--api`` (default ``$SEQD_API`` or tcp://127.0.0.1:7710) and
``--timeout``; a failure is one line on stderr and exit code 1.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from seqd.clients.client import DEFAULT_API, Client
from seqd.clients.errors import SeqdError, SeqdTimeout

DEFAULT_TIMEOUT = 5.0  # seconds per request


def add_connection_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--api", metavar="ENDPOINT", help=f"the daemon's API endpoint (default $SEQD_API or {DEFAULT_API})")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"per request (default {DEFAULT_TIMEOUT:g})")


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def connect(args, **kw) -> Client:
    """A client of the daemon at ``--api`` (else ``$SEQD_API``, else the default endpoint)."""
    if args.timeout <= 0:
        raise ValueError("--timeout must be positive")
    return Client(args.api or os.environ.get("SEQD_API") or DEFAULT_API, timeout=args.timeout, **kw)


def one_line_errors(run: Callable) -> Callable:
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


def show_symbol(s: int) -> str:
    """A byte as a reader wants it: 'a', '\\n', 0x00; symbols past 255 as numbers.

    >>> [show_symbol(s) for s in (97, 10, 0, 200, 300)]
    ["'a'", "'\\\\n'", '0x00', '0xc8', '300']
    """
    if s > 255:
        return str(s)
    c = chr(s)
    if s < 128 and (c.isprintable() or c in "\t\n\r"):
        return repr(c)
    return f"0x{s:02x}"
