"""Coding an input into a ``.sqd`` container's blocks: chains of blocks on ``-T`` threads, or a growing file.

A block continues the model of the block before it (a CONTINUES record), so a
whole input is learned as one stream, unless ``--chain-size`` bounds a chain:
then a fresh model starts once a chain would pass that many bytes
(``container.continues``), and separate chains are coded on several threads
at once.  ``seqd compress --follow`` codes a log as it grows, writing a block
at least every ``--flush-seconds``.
"""

from __future__ import annotations

import queue
import signal
import threading
import time
import zlib

from seqd.core import container
from seqd.core.container import BlockEncoder

from ._decode import PROGRESS_STEP
from ._follow import Follower
from ._io import read_block
from ._parallel import ordered_map

READ_SIZE = 1 << 16


def compress_blocks(reader, target, config, block_size, threads, progress, chain_size=None) -> tuple[int, int, int]:
    """Read, code and write blocks in order; returns (bytes in, bytes out, crc).

    Each block continues the model of the block before it, unless it would take its chain past ``chain_size``
    bytes (``container.continues``): the whole input is then one chain, learned by one model, and coded on
    one core.  Bounded chains are coded ``threads`` at once.  ``progress.show(bytes in, bytes out)`` is
    called every ``PROGRESS_STEP`` bytes coded, with the coder's output so far, so the line's rate and bits
    per byte move within a block (a 4 MB block takes a minute or two on one core).
    """
    n_in = n_out = crc = 0
    inflight: dict[int, tuple[int, int]] = {}  # chain number -> (bytes coded, payload bytes), while it is coded
    lock = threading.Lock()

    def chains():
        """The input's chains: each a list of blocks, read as they come (an unbounded chain is read block by
        block as it is coded)."""
        nonlocal crc
        chain: list[bytes] = []
        held = 0
        while block := read_block(reader, block_size, READ_SIZE):
            crc = zlib.crc32(block, crc)
            if chain and not container.continues(held, len(block), chain_size):
                yield chain
                chain, held = [], 0
            chain.append(block)
            held += len(block)
        if chain:
            yield chain

    def encode(item: tuple[int, list[bytes]]) -> tuple[int, int, list[bytes]]:
        k, blocks = item
        coded_before = [0, 0]  # bytes in and out of this chain's blocks already coded

        def show(done: int, coded: int) -> None:
            with lock:
                inflight[k] = coded_before[0] + done, coded_before[1] + coded
                coding = sum(d for d, _ in inflight.values())
                written = sum(c for _, c in inflight.values())
            progress.show(n_in + coding, n_out + written)

        encoder = BlockEncoder(config)
        records = []
        for i, block in enumerate(blocks):
            records.append(encoder.encode(block, continues=i > 0, progress=show, step=PROGRESS_STEP))
            coded_before[0] += len(block)
            coded_before[1] += len(records[-1])
        return k, sum(map(len, blocks)), records

    if threads == 1 or chain_size is None:  # one chain at a time: each block written as soon as it is coded
        encoder = BlockEncoder(config)
        held = 0
        while block := read_block(reader, block_size, READ_SIZE):
            go_on = container.continues(held, len(block), chain_size)
            base = n_in
            record = encoder.encode(block, continues=go_on,
                                    progress=lambda k, coded: progress.show(base + k, n_out + coded),
                                    step=PROGRESS_STEP)
            held = held + len(block) if go_on else len(block)
            crc = zlib.crc32(block, crc)
            n_in += len(block)
            n_out += len(record)
            target.write(record)
        return n_in, n_out, crc

    for k, length, records in ordered_map(encode, enumerate(chains()), threads):
        with lock:
            inflight.pop(k, None)
        n_in += length
        for record in records:
            n_out += len(record)
            target.write(record)
    return n_in, n_out, crc


def follow(growing: Follower, stop: threading.Event, target, config, args,
            progress) -> tuple[int, int, int, Exception | None]:
    """Compress a growing file until SIGINT/SIGTERM; a block is written at least every --flush-seconds.

    Every block continues the learner of the one before it (CONTINUES), so
    frequent flushes cost only the coder's few bytes each and the log is
    learned as one stream; with --chain-size, a fresh learner starts once a
    chain would pass that many bytes.  ``growing``
    yields the file's chunks, through rotation and truncation (``tail -F``,
    ``_follow.py``), until ``stop`` is set.  Returns (bytes in, bytes out, crc, the error that ended the
    reading, or None): a file that can no longer be read stops the follow as a signal does, what was read is
    still coded, and the caller finishes the output before it reports the error.
    """
    chunks: queue.Queue = queue.Queue(maxsize=64)

    def on_signal(signum, frame):
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}

    failure: list[Exception] = []

    def pump():
        try:
            for chunk in growing:
                chunks.put(chunk)
                if stop.is_set():
                    return
        except Exception as exc:  # the file can no longer be read (an I/O error, its permission taken away)
            failure.append(exc)
            stop.set()

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
                continues = container.continues(since_fresh, len(data), args.chain_size)
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
                return n_in, n_out, crc, failure[0] if failure else None  # (recorded before its stop was set)
    finally:
        stop.set()
        for s, handler in previous.items():
            signal.signal(s, handler)
