"""``seqd compress`` / ``seqd decompress``: files or pipes, in constant memory, like gzip.

Exit codes follow gzip: 0 success, 1 error, 2 warning (``--salvage`` skipped
damaged blocks).  Output files are written under a temporary name and renamed
when complete, so an error never leaves a partial or garbage file behind
(except ``--follow``, whose output is meant to be read while it grows).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from seqd.core import container
from seqd.core.container import Block, BlockDecoder, BlockEncoder, End, FormatError, Header

from ._display import StatusLine, human_size, parse_size
from ._follow import Follower
from ._io import Target, read_block
from ._parallel import ordered_map

SUFFIX = ".sqd"
READ_SIZE = 1 << 16
FOLLOW_POLL_SECONDS = 0.1  # --follow: how often the drained input is looked at again
PROGRESS_SECONDS = 0.2  # the progress line is redrawn at most this often
PROGRESS_COLUMNS = 100  # and cut to this width: a line that wraps cannot be redrawn in place


def configure(c: argparse.ArgumentParser) -> None:
    c.description = ("Compress IN (a file, or - for standard input) into OUT (default IN.sqd, or standard output "
                     "for -). Like gzip, the input file is removed after success unless -k is given. The format "
                     "is described in docs/format.md.")
    _common(c)
    c.add_argument("--block-size", type=_block_size, default=container.DEFAULT_BLOCK_SIZE, metavar="SIZE",
                   help="bytes per independently decodable block (K/M/G suffixes; default 4M)")
    c.add_argument("-T", "--threads", type=int, default=1, metavar="N",
                   help="compress N blocks at once on N cores (default 1; 0 = every core)")
    c.add_argument("--follow", action="store_true",
                   help="keep compressing IN as it grows, through log rotation (like tail -F), until "
                        "interrupted; implies -k")
    c.add_argument("--flush-seconds", type=float, default=5.0, metavar="S",
                   help="with --follow: write a decodable block at least every S seconds (default 5)")
    c.set_defaults(run=_compress)


def configure_decompress(d: argparse.ArgumentParser) -> None:
    d.description = ("Decompress IN (a .sqd file, or - for standard input) into OUT (default IN without .sqd, or "
                     "standard output for -). The input file is removed after success unless -k is given.")
    _common(d)
    d.add_argument("-T", "--threads", type=int, default=1, metavar="N",
                   help="decode N independent blocks at once (default 1; 0 = every core)")
    d.add_argument("--salvage", action="store_true",
                   help="write every block that decodes, skip damaged ones and a missing end (exit code 2)")
    d.set_defaults(run=_decompress)


def _common(p) -> None:
    p.add_argument("input", nargs="?", default="-", metavar="IN")
    p.add_argument("output", nargs="?", default=None, metavar="OUT")
    p.add_argument("-c", "--stdout", action="store_true", help="write to standard output, keep the input")
    p.add_argument("-k", "--keep", action="store_true", help="keep the input file")
    p.add_argument("-f", "--force", action="store_true",
                   help="overwrite an existing output file; write binary data to a terminal")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    p.add_argument("--json", action="store_true", help="print a JSON summary on standard output (stderr for -c)")


def _block_size(text: str) -> int:
    try:
        value = parse_size(text)
        container.check_block_size(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid size {text!r}: {exc} (examples: 65536, 512K, 4M)") from None
    return value


# -- files ------------------------------------------------------------------------------------------

def _paths(args, compressing: bool) -> tuple[Path | None, Path | None]:
    src = None if args.input == "-" else Path(args.input)
    if src is not None:
        if src.is_dir():
            raise ValueError(f"{src}: is a directory")
        if not src.exists():
            raise ValueError(f"{src}: no such file")
    if args.stdout or (src is None and args.output is None) or args.output == "-":
        return src, None
    if args.output is not None:
        dst = Path(args.output)
    elif compressing:
        dst = src.with_name(src.name + SUFFIX)
    elif src.name.endswith(SUFFIX) and len(src.name) > len(SUFFIX):
        dst = src.with_name(src.name[:-len(SUFFIX)])
    else:
        raise ValueError(f"{src}: unknown suffix (expected {SUFFIX}); name the output file")
    if src is not None and dst.resolve() == src.resolve():
        raise ValueError(f"{src}: input and output are the same file")
    return src, dst


def _threads(n: int) -> int:
    if n < 0:
        raise ValueError(f"--threads must be >= 0, got {n}")
    return n or os.cpu_count() or 1


class _Progress:
    """The status line: how far, how fast, and (compressing) the bits per byte so far."""

    def __init__(self, name: str, total: int | None, enabled: bool, verb: str):
        self.name, self.total, self.verb = name, total, verb
        self.line = StatusLine(enabled, every=PROGRESS_SECONDS)
        self.start = time.monotonic()

    def show(self, done_in: int, done_out: int, final: bool = False) -> None:
        if final:
            self.line.clear()
            return
        rate = done_in / max(time.monotonic() - self.start, 1e-9)
        pct = f"{100 * done_in / self.total:5.1f}% " if self.total else ""
        ratio = f"{8 * done_out / done_in:.3f} bits/byte" if done_in and self.verb == "compress" else ""
        self.line.show(f"{self.name}: {pct}{human_size(done_in)} {human_size(rate)}/s {ratio}"[:PROGRESS_COLUMNS])


def _summary(args, report: dict) -> None:
    if args.json:
        out = sys.stderr if (args.stdout or args.output == "-" or (args.input == "-" and args.output is None)) \
            else sys.stdout
        json.dump(report, out, indent=1)
        out.write("\n")


# -- compress ---------------------------------------------------------------------------------------

def _compress(args) -> int:
    src, dst = _paths(args, compressing=True)
    config = container.default_config()
    threads = _threads(args.threads)
    if args.follow:
        if src is None:
            raise ValueError("--follow needs a file to follow (for a pipe, seqd compress reads until it closes)")
        if args.flush_seconds <= 0:
            raise ValueError(f"--flush-seconds must be > 0, got {args.flush_seconds}")
    header = Header(config, args.block_size, container.build_info())
    stop = threading.Event()  # --follow: SIGINT or SIGTERM came
    if args.follow:  # opened before the output is created: a file that cannot be read leaves nothing behind
        reader = Follower(src, READ_SIZE, poll=FOLLOW_POLL_SECONDS, keep_going=lambda: not stop.is_set())
    else:
        reader = sys.stdin.buffer if src is None else open(src, "rb")
    total = None if (src is None or args.follow) else src.stat().st_size
    progress = _Progress(src.name if src else "stdin", total, sys.stderr.isatty() and not args.quiet and not args.json,
                         "compress")
    target = Target(dst, args.force, direct=args.follow)
    t0, cpu0 = time.monotonic(), time.process_time()
    try:
        target.write(header.to_bytes())
        if args.follow:
            n_in, n_out, crc = _follow(reader, stop, target, config, args, progress)
        else:
            n_in, n_out, crc = compress_blocks(reader, target, config, args.block_size, threads, progress)
        target.write(container.end_record(n_in, crc))
        target.commit()
    except BaseException:
        target.abandon()
        raise
    finally:
        if src is not None and not args.follow:  # a followed file is closed by its reader, once stopped
            reader.close()
    progress.show(n_in, n_out, final=True)
    if src is not None and dst is not None and not (args.keep or args.follow):
        src.unlink()
    size = len(header.to_bytes()) + n_out + 13
    _summary(args, {"input": str(src or "-"), "output": str(dst or "-"), "bytes_in": n_in, "bytes_out": size,
                    "bits_per_byte": 8 * size / n_in if n_in else None, "seconds": time.monotonic() - t0,
                    "cpu_seconds": time.process_time() - cpu0, "threads": threads})
    return 0


def compress_blocks(reader, target, config, block_size, threads, progress) -> tuple[int, int, int]:
    """Read, code (``threads`` blocks at once) and write blocks in order; returns (bytes in, bytes out, crc)."""
    n_in = n_out = crc = 0
    if threads == 1:
        encoder = BlockEncoder(config)
        while block := read_block(reader, block_size, READ_SIZE):
            base = n_in
            record = encoder.encode(block, progress=lambda k: progress.show(base + k, n_out))
            crc = zlib.crc32(block, crc)
            n_in += len(block)
            n_out += len(record)
            target.write(record)
        return n_in, n_out, crc

    def blocks():
        nonlocal crc
        while block := read_block(reader, block_size, READ_SIZE):
            crc = zlib.crc32(block, crc)
            yield block

    def encode(block: bytes) -> tuple[int, bytes]:
        return len(block), BlockEncoder(config).encode(block)

    for length, record in ordered_map(encode, blocks(), threads):
        n_in += length
        n_out += len(record)
        target.write(record)
        progress.show(n_in, n_out)
    return n_in, n_out, crc


def _follow(growing: Follower, stop: threading.Event, target, config, args, progress) -> tuple[int, int, int]:
    """Compress a growing file until SIGINT/SIGTERM; a block is written at least every --flush-seconds.

    Blocks written between two fresh starts continue one learner (CONTINUES),
    so frequent flushes cost only the coder's few bytes each; a fresh block
    starts once --block-size bytes were coded since the last one.  ``growing``
    yields the file's chunks, through rotation and truncation (``tail -F``,
    ``_follow.py``), until ``stop`` is set.
    """
    chunks: queue.Queue = queue.Queue(maxsize=64)

    def on_signal(signum, frame):
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

    def pump():
        for chunk in growing:
            chunks.put(chunk)
            if stop.is_set():
                return

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    encoder = BlockEncoder(config)
    n_in = n_out = crc = 0
    since_fresh = 0
    pending: list[bytes] = []
    deadline = time.monotonic() + args.flush_seconds
    try:
        while True:
            try:
                pending.append(chunks.get(timeout=0.1))
            except queue.Empty:
                pass
            size = sum(map(len, pending))
            now = time.monotonic()
            finishing = stop.is_set()
            if finishing:
                while not chunks.empty():
                    pending.append(chunks.get_nowait())
                size = sum(map(len, pending))
            if size and (now >= deadline or size >= args.block_size or finishing):
                data = b"".join(pending)
                pending = []
                continues = since_fresh > 0 and since_fresh + len(data) <= args.block_size
                record = encoder.encode(data, continues=continues)
                since_fresh = since_fresh + len(data) if continues else len(data)
                crc = zlib.crc32(data, crc)
                n_in += len(data)
                n_out += len(record)
                target.write(record)
                target.sync()
                progress.show(n_in, n_out)
            if now >= deadline:
                deadline = now + args.flush_seconds
            if finishing:
                return n_in, n_out, crc
    finally:
        stop.set()
        for s, handler in previous.items():
            signal.signal(s, handler)


# -- decompress -------------------------------------------------------------------------------------

def _decompress(args) -> int:
    src, dst = _paths(args, compressing=False)
    threads = _threads(args.threads)
    reader = sys.stdin.buffer if src is None else open(src, "rb")
    total = None if src is None else src.stat().st_size
    progress = _Progress(src.name if src else "stdin", total, sys.stderr.isatty() and not args.quiet and not args.json,
                         "decompress")
    warnings: list[str] = []
    t0, cpu0 = time.monotonic(), time.process_time()
    target = None
    try:
        header = container.read_header(reader)
        target = Target(dst, args.force)
        n_out = decode_records(reader, header, target, threads, args.salvage, warnings, progress)
        target.commit()
    except BaseException as exc:
        if target is not None:
            if args.salvage and isinstance(exc, FormatError):
                target.commit()
            else:
                target.abandon()
        raise
    finally:
        if src is not None:
            reader.close()
    progress.show(0, 0, final=True)
    for w in warnings:
        print(f"seqd decompress: warning: {w}", file=sys.stderr)
    if src is not None and dst is not None and not args.keep and not warnings:
        src.unlink()
    _summary(args, {"input": str(src or "-"), "output": str(dst or "-"), "bytes_out": n_out,
                    "seconds": time.monotonic() - t0, "cpu_seconds": time.process_time() - cpu0,
                    "threads": threads, "warnings": warnings})
    return 2 if warnings else 0


def decode_records(reader, header, target, threads, salvage, warnings, progress) -> int:
    """Decode blocks in order, chains of CONTINUES blocks on one learner; returns the bytes written."""
    n_out = crc = 0
    done_in = 0

    def emit(part: bytes):
        nonlocal n_out, crc
        target.write(part)
        n_out += len(part)
        crc = zlib.crc32(part, crc)

    def decode_chain(chain: list[Block]) -> list[bytes | FormatError]:
        decoder = BlockDecoder(header.config, header.build)
        out: list[bytes | FormatError] = []
        for block in chain:
            try:
                out.append(decoder.decode(block))
            except FormatError as exc:
                out.append(exc)
        return out

    def collect(results) -> None:
        for part in results:
            if isinstance(part, FormatError):
                if not salvage:
                    raise part
                warnings.append(f"{part}; skipped")
            else:
                emit(part)

    end: End | None = None
    lost: FormatError | None = None

    def chains() -> Iterator[list[Block]]:
        """The blocks up to the end record, as chains: a FRESH block and the CONTINUES blocks after it."""
        nonlocal done_in, end, lost
        chain: list[Block] = []
        try:
            for record in container.read_records(reader, header, header.size):
                if isinstance(record, End):
                    end = record
                    break
                done_in += len(record.payload)
                if record.kind == container.FRESH and chain:
                    yield chain
                    chain = []
                chain.append(record)
                progress.show(done_in, n_out)
        except FormatError as exc:
            if not salvage or "truncated" not in str(exc) and "damaged: its record" not in str(exc):
                raise
            lost = exc  # the framing is lost: keep what decodes before it
        if chain:
            yield chain

    for results in ordered_map(decode_chain, chains(), threads):
        collect(results)
    if lost is not None:
        warnings.append(f"{lost}; the rest of the file is lost")
        return n_out
    if not warnings and (end.total_length != n_out or end.crc != crc):
        raise FormatError("the end record does not match the decoded data (damaged end record)")
    if reader.read(1):
        raise FormatError("unexpected data after the end record")
    return n_out
