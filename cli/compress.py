"""``seqd compress`` / ``seqd decompress``: files or pipes, in constant memory, with gzip's conventions.

Every file argument is an input, each to its own output (``a.log`` →
``a.log.sqd`` and back); ``-`` or no argument is standard input to standard
output.  ``-c`` writes everything to standard output: several inputs give
several containers back to back, which ``seqd decompress`` decodes in turn
(as gzip's members).  ``-o FILE`` names the output of a single input.  ``-d``
decompresses, ``-t`` decodes and checks without writing, ``-l`` lists what a
file holds without decoding.  The rules about which files are read, written,
kept or refused are in ``_files.py``; what is said about each file (messages,
``-v``, ``--json``, the exit code) in ``_report.py``.

Exit codes follow gzip: 0 success, 1 error, 2 warning (a file skipped, or
``--salvage`` skipped damaged blocks); with several files, a failed file does
not stop the others and the worst code wins.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import threading
import time

from seqd import __version__
from seqd.core import container, limits
from seqd.core.container import FormatError, Header
from seqd.core.faces import DEFAULT, FACES, face_of_preset

from . import _settings
from ._decode import Reader, Sink, decode_stream
from ._encode import READ_SIZE, compress_blocks, follow
from ._display import Progress, parse_size
from ._files import FileProblem, Output, explain, open_input, output_name
from ._inspect import model_name, print_table, scan, writer_version
from ._follow import Follower
from ._report import FileReport, Messages, dump_json, exit_code, verbose_line

FOLLOW_POLL_SECONDS = 0.1  # --follow: how often the drained input is looked at again


def configure(c: argparse.ArgumentParser) -> None:
    c.description = ("Compress each FILE into FILE.sqd (or, with -d, decompress it), removing FILE after "
                     "success unless -k, like gzip. No FILE, or -, reads standard input and writes standard "
                     "output. The format is described in docs/format.md.")
    _options(c)
    c.set_defaults(run=run)


def configure_decompress(d: argparse.ArgumentParser) -> None:
    d.description = ("Decompress each FILE.sqd into FILE (seqd compress -d), removing FILE.sqd after success "
                     "unless -k. No FILE, or -, reads standard input and writes standard output.")
    _options(d)
    d.set_defaults(run=run, decompress=True)


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="*", metavar="FILE", help="inputs (- is standard input; -- ends the options)")
    p.add_argument("-d", "--decompress", action="store_true", help="decompress")
    p.add_argument("-t", "--test", action="store_true", help="decode and check each FILE, write nothing")
    p.add_argument("-l", "--list", action="store_true",
                   help="list each FILE's sizes, bits per byte, blocks, model and writer, without decoding")
    p.add_argument("-c", "--stdout", action="store_true", help="write to standard output, keep the inputs")
    p.add_argument("-o", "--output", metavar="OUT", help="write the single input's output to OUT (- for stdout)")
    p.add_argument("-k", "--keep", action="store_true", help="keep the input files")
    p.add_argument("-f", "--force", action="store_true",
                   help="overwrite existing outputs, follow symbolic links, read or write a terminal")
    p.add_argument("-v", "--verbose", action="store_true", help="a line per file: bits per byte, output")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress line, no warnings")
    p.add_argument("-V", "--version", action="version", version=f"seqd {__version__}")
    p.add_argument("-T", "--threads", type=int, default=1, metavar="N",
                   help="code N chains of blocks at once on N cores (default 1; 0 = every core); a file is one "
                        "chain unless --chain-size bounds them")
    p.add_argument("--json", action="store_true",
                   help="a JSON report of every file on standard output (standard error when data goes there)")
    shown = {1: "compressing: fastest, smallest model",
             9: "compressing: most compression (-1 ... -9, like gzip; default -6; docs/benchmarks.md measures each)"}
    for level in DEFAULT.level_names:
        p.add_argument(f"-{level}", dest="level", action="store_const", const=level, default=container.DEFAULT_LEVEL,
                       help=shown.get(level, argparse.SUPPRESS))
    p.add_argument("--level", type=_level, default=container.DEFAULT_LEVEL, metavar="N",
                   help="compressing: level N, as -N")
    p.add_argument("--model", choices=MODELS, default="bytes", metavar="MODEL",
                   help="compressing: the byte model, 'bytes' (the default, bitwise: the levels -1 to -9 are its), or "
                        "a byte model's frozen preset, as an older seqd wrote it: "
                        + ", ".join(MODELS[2:]))
    _settings.add_arguments(p, "the model compressed with (the level's)")
    p.add_argument("--block-size", type=_block_size, default=None, metavar="SIZE",
                   help="compressing: bytes per block, each with its checksums (K/M/G suffixes; default 4M)")
    p.add_argument("--chain-size", type=_block_size, default=None, metavar="SIZE",
                   help="compressing: start a fresh model once a chain of blocks holds SIZE bytes (a multiple "
                        "of the block size). Default: one model learns the whole input, remembering all of it "
                        "(within its 64 MiB of history); bounded chains compress worse, but -T codes them in "
                        "parallel and damage to a block loses only the rest of its chain")
    p.add_argument("--follow", action="store_true",
                   help="compressing: keep compressing FILE as it grows, through log rotation (like tail -F), "
                        "until interrupted; implies -k")
    p.add_argument("--flush-seconds", type=float, default=5.0, metavar="S",
                   help="with --follow: write a decodable block at least every S seconds (default 5)")
    p.add_argument("--memory-limit", type=_memory_limit, default=limits.DEFAULT_MEMORY_LIMIT, metavar="SIZE",
                   help="decompressing: refuse a file whose model and blocks need more memory than SIZE (K/M/G "
                        "suffixes; default 1G; the default model needs about 75M per thread)")
    p.add_argument("--salvage", action="store_true",
                   help="decompressing: write every block that decodes, skip damaged ones and a missing end "
                        "(exit code 2)")


def _memory_limit(text: str) -> int:
    try:
        value = parse_size(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"invalid size {text!r} (examples: 512M, 2G)")
    return value


# the models --model names: today's byte model ("bytes"; "bitwise" says the same) and every frozen preset
MODELS = ("bytes", "bitwise", *(row.preset for face in FACES for row in face.versions.rows))


def _model(args):
    """The model the files are compressed with: the default byte model at the level asked, or a frozen preset;
    then the settings ``--set`` changes."""
    if args.model in ("bytes", "bitwise"):
        base = container.level_config(args.level)
    else:
        if args.level != container.DEFAULT_LEVEL:
            raise ValueError(f"the levels -1 to -9 are today's byte model's: {args.model} has one (--model "
                             f"{args.model} without a level)")
        base = face_of_preset(args.model).preset(args.model)
    changes = _settings.parse(args.settings_given, base)
    return dataclasses.replace(base, **changes) if changes else base


def _level(text: str) -> int:
    if text.strip() not in {str(n) for n in DEFAULT.level_names}:
        raise argparse.ArgumentTypeError(f"invalid level {text!r}: 1 (fastest) to 9 (most compression)")
    return int(text)


def _block_size(text: str) -> int:
    try:
        value = parse_size(text)
        container.check_block_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: {exc} (examples: 65536, 512K, 4M)") from None
    return value


def _mode(args) -> str:
    return "list" if args.list else "test" if args.test else "decompress" if args.decompress else "compress"


def _check(args, mode: str) -> None:
    """Options that cannot go together: a usage error (exit 1) before any file is touched."""
    if args.test and args.list:
        raise ValueError("-t and -l exclude each other")
    if args.output is not None:
        if args.stdout:
            raise ValueError("-o and -c exclude each other")
        if mode in ("test", "list"):
            raise ValueError(f"{'-t' if args.test else '-l'} writes no output: drop -o")
        if len(args.files) > 1:
            raise ValueError("-o names the output of a single input: with several inputs, drop -o (each gets "
                             "its own file) or use -c")
    if mode != "compress":
        for flag, given in (("--block-size", args.block_size is not None), ("--chain-size", args.chain_size is not None),
                            ("--follow", args.follow)):
            if given:
                raise ValueError(f"{flag} applies when compressing only")
    elif args.salvage:
        raise ValueError("--salvage applies when decompressing only")
    if args.follow:
        if len(args.files) != 1 or args.files[0] == "-":
            raise ValueError("--follow needs one file to follow (for a pipe, seqd compress reads until it closes)")
        if args.flush_seconds <= 0:
            raise ValueError(f"--flush-seconds must be > 0, got {args.flush_seconds}")
    if args.threads < 0:
        raise ValueError(f"--threads must be >= 0, got {args.threads}")


def _destination(name: str, args, compressing: bool) -> str | None:
    """Where ``name``'s output goes: a path, or None for standard output."""
    if args.stdout or args.output == "-":
        return None
    if args.output is not None:
        return args.output
    if name == "-":
        return None
    return output_name(name, compressing)


# -- the files, one by one ----------------------------------------------------------------------------

def run(args) -> int:
    if args.list_settings:
        print(_settings.listing(_model(args), f"seqd compress --model {args.model} -{args.level}"))
        return 0
    mode = _mode(args)
    _check(args, mode)
    args.threads = args.threads or os.cpu_count() or 1
    args.block_size = args.block_size or container.DEFAULT_BLOCK_SIZE
    if mode == "compress" and args.chain_size is not None:
        container.check_chain_size(args.chain_size, args.block_size)
    if mode == "compress":
        _model(args)  # a model the options cannot name is refused before any file is touched
    names = args.files or ["-"]
    messages = Messages(args.command, args.quiet)
    reports = [_one(name, mode, args, messages) for name in names]
    code = exit_code(reports)
    if mode == "list" and not args.json:
        print_table(reports)
    if args.json:
        data_on_stdout = mode in ("compress", "decompress") and any(r.output == "-" for r in reports)
        dump_json(reports, code, to_stderr=data_on_stdout)
    return code


def _one(name: str, mode: str, args, messages: Messages) -> FileReport:
    """Process one input; whatever goes wrong becomes its report's error, naming the file."""
    report = FileReport(input=name, compressed=mode == "compress")
    t0, cpu0 = time.monotonic(), time.process_time()
    replaced = False
    try:
        if mode == "compress":
            replaced = _compress_file(name, args, report)
        elif mode == "list":
            _list_file(name, args, report)
        else:
            replaced = _decompress_file(name, args, report, test=mode == "test")
    except FileProblem as problem:
        _fail(report, str(problem), skip=problem.skip)
    except FormatError as exc:
        hint = (" (seqd decompress --salvage writes what still decodes)"
                if mode == "decompress" and not args.salvage and ("block" in str(exc) or "truncated" in str(exc))
                else "")
        _fail(report, f"{name}: {exc}{hint}")
    except limits.MemoryLimitError as exc:  # its message names the file, the need and the option to raise
        _fail(report, str(exc))
    except OSError as exc:
        _fail(report, str(explain(exc, name)))
    except MemoryError:
        _fail(report, f"{name}: not enough memory for these settings (try a smaller --block-size or -T)")
    report.seconds = time.monotonic() - t0
    report.cpu_seconds = time.process_time() - cpu0
    if report.status == "error":
        messages.error(report.error)
    for w in report.warnings:
        messages.warning(w if report.status == "skipped" else f"{name}: warning: {w}")
    if args.verbose and report.status == "ok" and mode != "list":
        print(verbose_line(mode, report, replaced), file=sys.stderr)
    return report


def _fail(report: FileReport, text: str, skip: bool = False) -> None:
    if skip:
        report.status = "skipped"
        report.warnings.append(text)
    else:
        report.status, report.error = "error", text


def _progress(name: str, total: int | None, args) -> Progress:
    return Progress(name, total, sys.stderr.isatty() and not args.quiet and not args.json)


class _Rate:
    """The compressing progress line: ``show(bytes in, bytes out so far)``, and the bits per byte they make."""

    def __init__(self, progress: Progress):
        self.progress = progress

    def show(self, done_in: int, done_out: int) -> None:
        self.progress.show(done_in, f"{8 * done_out / done_in:.3f} bits/byte" if done_in else "")


def _same_file(a: str | None, b: str | None) -> bool:
    try:
        return a is not None and b is not None and os.path.samefile(a, b)
    except OSError:
        return False


# -- compress -----------------------------------------------------------------------------------------

def _compress_file(name: str, args, report: FileReport) -> bool:
    """Compress one input; returns whether the input was removed."""
    dst = _destination(name, args, compressing=True)
    src = open_input(name, force=args.force, compressed=False, suffix_check=dst is not None)
    report.output = dst or "-"
    block_size = args.block_size
    config = _model(args)
    header = Header(config, block_size, container.build_info())
    stop = threading.Event()  # --follow: SIGINT or SIGTERM came
    try:
        if _same_file(src.path, dst):
            raise FileProblem(name, f"is the output too ({dst}); name another output")
        out = Output(dst, force=args.force, binary=True, direct=args.follow)
        try:
            progress = _progress(os.path.basename(name) if src.path else "stdin", src.size, args)
            out.write(header.to_bytes())
            if args.follow:
                growing = Follower(name, READ_SIZE, poll=FOLLOW_POLL_SECONDS, keep_going=lambda: not stop.is_set())
                n_in, n_out, crc, failure = follow(growing, stop, out, config, args, _Rate(progress))
            else:
                failure = None
                n_in, n_out, crc = compress_blocks(src.file, out, config, block_size, args.threads, _Rate(progress),
                                                   args.chain_size)
            out.write(container.end_record(n_in, crc))
            progress.clear()
            out.commit(_followed_meta(name, src.stat) if args.follow else src.stat)
            if failure is not None:  # the output holds what was read, end record included: now say why it ended
                raise failure
        except BaseException:
            out.abandon()
            raise
    finally:
        src.close()
    report.bytes_in = n_in
    report.bytes_out = len(header.to_bytes()) + n_out + len(container.end_record(0, 0))
    report.blocks = -(-n_in // block_size) if not args.follow else None
    report.model, report.written_by = model_name(header), writer_version(header)
    if out.replaces and src.path is not None and not (args.keep or args.follow):
        os.unlink(src.path)
        return True
    return False


def _followed_meta(name: str, first: os.stat_result) -> os.stat_result:
    """The metadata a followed log's output takes: the file of that name now, or the one first opened if the
    name is gone (rotated away at the moment of the stop)."""
    try:
        return os.stat(name)
    except OSError:
        return first


# -- decompress, test, list ---------------------------------------------------------------------------

def _decompress_file(name: str, args, report: FileReport, test: bool) -> bool:
    """Decompress (or with ``test``, decode and check) one input; returns whether the input was removed."""
    dst = None if test else _destination(name, args, compressing=False)
    src = open_input(name, force=args.force, compressed=True, suffix_check=False)
    report.output = None if test else dst or "-"
    reader = Reader(src.file)
    out = None
    try:
        if _same_file(src.path, dst):
            raise FileProblem(name, f"is the output too ({dst}); name another output")
        out = None if test else Output(dst, force=args.force, binary=False)
        progress = _progress(os.path.basename(name) if src.path else "stdin", None, args)
        try:
            def within_limit(header: Header) -> None:  # before the header's model is built
                learners = 1 if header.chain_size is None else args.threads  # one chain: one learner at a time
                limits.check_memory(header.config, header.block_size, args.memory_limit,
                                    name=name if src.path else "standard input", learners=learners,
                                    option="--memory-limit")

            decoded = decode_stream(reader, out or Sink(), args.threads, args.salvage, report.warnings, progress,
                                    size=src.size, check=within_limit)
        finally:
            progress.clear()
        if out is not None:
            out.commit(src.stat)
    except BaseException as exc:
        if out is not None:
            if args.salvage and isinstance(exc, FormatError):
                out.commit(src.stat)
            else:
                out.abandon()
        raise
    finally:
        src.close()
    report.bytes_in, report.bytes_out, report.blocks = reader.count, decoded.length, decoded.blocks
    report.model, report.written_by = model_name(decoded.header), writer_version(decoded.header)
    if out is not None and out.replaces and src.path is not None and not args.keep and not report.warnings:
        os.unlink(src.path)
        return True
    return False


def _list_file(name: str, args, report: FileReport) -> None:
    src = open_input(name, force=args.force, compressed=True, suffix_check=False)
    reader = Reader(src.file)
    try:
        found = scan(reader)
    finally:
        src.close()
    report.bytes_in, report.bytes_out, report.blocks = reader.count, found.length, found.blocks
    report.model, report.written_by = model_name(found.header), writer_version(found.header)
