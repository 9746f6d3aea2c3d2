"""The ``seqd`` program: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import os
import sys

from . import compress_command, eval_command, serve_command, train_command
from seqd.clients import commands as client_commands


class _Parser(argparse.ArgumentParser):
    """Usage errors exit with 1, not argparse's 2: seqd's exit code 2 means a warning, as gzip's does."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="seqd",
        description="Learn symbol streams online with gated leaky neural networks trained by a Riemannian metric gradient.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    train_command.register(sub)
    eval_command.register(sub)
    compress_command.register(sub)
    serve_command.register(sub)
    client_commands.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except KeyboardInterrupt:
        print("seqd: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`seqd ... | head`): not an error of ours
        sys.stdout = open(os.devnull, "w")
        return 0
    except (ValueError, OSError) as exc:
        print(f"seqd {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except MemoryError:
        print(f"seqd {args.command}: error: not enough memory for these settings", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
