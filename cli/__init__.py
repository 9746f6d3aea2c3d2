"""The ``seqd`` program: one entry point, one subcommand per job, one module per subcommand.

The top-level parser knows every subcommand by its name and one-line help
alone (:data:`COMMANDS`); a subcommand's module is imported only when that
subcommand is run or asked for ``--help``.  So ``seqd --help``,
``seqd --version`` and the client subcommands (``seqd stats``, which a
health probe may run every few seconds) start without importing NumPy or
Numba: only ``serve``, ``compress``, ``eval``, ``train`` and ``demo`` need
the model.

A subcommand's module has a ``configure(parser)`` function (named in its
:class:`Command`) that sets the parser's description and arguments and
``run``, the function that runs it and returns the exit code.  Exit codes:
0 success, 1 error, 2 a usage error (argparse's convention: the
subcommand's usage is printed) or, from ``compress`` and ``decompress``, a
warning (as gzip's), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass

from seqd import __version__


@dataclass(frozen=True)
class Command:
    """Where a subcommand lives: ``seqd.cli.<module>``, whose ``<configure>(parser)`` defines it."""

    module: str
    help: str
    configure: str = "configure"


# In the order `seqd --help` lists them.
COMMANDS = {
    "train": Command("train", "train a network on one of seed 000's tasks and report validation regret"),
    "demo": Command("demo", "a one-minute demonstration: a GLNN learns the alphabet-with-insertions task"),
    "eval": Command("eval", "stream files through the online learner and report bits per byte"),
    "compress": Command("compress", "compress a file or a pipe with the online learner"),
    "decompress": Command("compress", "decompress a .sqd file or pipe", configure="configure_decompress"),
    "serve": Command("serve", "run the daemon: learn published streams, serve predictions and metrics"),
    "publish": Command("publish", "publish a file or stdin to a stream of a running daemon"),
    "predict": Command("predict", "show a stream's most probable next symbols"),
    "stats": Command("stats", "a stream's or the daemon's statistics (exit 0 iff the daemon answers)"),
    "subscribe": Command("subscribe", "print a stream's prediction events as they come"),
    "streams": Command("streams", "list a running daemon's streams: learned, bits per symbol, state"),
    "drop": Command("drop", "delete a stream and everything it learned"),
}

# Top-level options after which argparse stops (it prints and exits): no subcommand is imported for them.
_FINAL_OPTIONS = ("-h", "--help", "-V", "--version")


class _Parser(argparse.ArgumentParser):
    """A usage error: the usage of the command it concerns (the subcommand's, not seqd's), then one line, exit 2."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def requested(argv: list[str]) -> str | None:
    """The subcommand ``argv`` runs: its first word, when that names one and no ``-h`` or ``-V`` comes first."""
    for arg in argv:
        if arg in _FINAL_OPTIONS:
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """seqd's parser: every subcommand by name and help, and ``command`` (if given) with its arguments."""
    parser = _Parser(
        prog="seqd",
        description="Learn symbol streams online with gated leaky neural networks trained by a Riemannian metric gradient.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"seqd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    parser.commands = {}
    for name, spec in COMMANDS.items():
        p = parser.commands[name] = sub.add_parser(name, help=spec.help)
        if name == command:
            module = importlib.import_module(f"{__name__}.{spec.module}")
            getattr(module, spec.configure)(p)
    return parser


# NumPy's BLAS starts a thread per core as NumPy is imported, and each spins for a while before it sleeps.
# seqd's numerical work is in its own kernels; the few vector products it leaves to NumPy are too small to
# share out.  So the program asks for one BLAS thread: no CPU spent spinning (about 0.3 s of CPU per process
# on 2 cores), and the same sums on a machine of any number of cores.  A value already set is kept.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def main(argv: list[str] | None = None) -> int:
    for name in BLAS_THREADS:  # before any subcommand imports NumPy
        os.environ.setdefault(name, "1")
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(requested(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # (argparse would name them under seqd's usage; they belong to the subcommand's)
        parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
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
