"""``seqd serve --demo``: the daemon, plus a built-in stream fed through the client library.

The stream is seed 000's alphabet with insertions (``core/tasks.py``), sent
in small batches at a watchable pace.  After each batch the demo asks the
daemon for its prediction and prints the stream's recent bits per symbol
beside the true model's (the entropy the generator actually has), and what
the daemon expects next.  When the text ends the daemon keeps serving: try
``seqd publish``, ``seqd stats`` and the metrics URL from another terminal.

On a first run the learning kernels are not yet compiled for the machine
(Numba keeps them in a cache afterwards: ``core/jit.py``), and compiling
them takes a minute or two on a busy 2-core machine.  The demo says so, and
compiles them itself before it sends anything, saying how long it has been
at it, rather than letting its first request time out.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

from seqd.clients.client import Client
from seqd.clients.errors import SeqdError
from seqd.core.tasks import generate
from seqd.daemon.background import name_os_thread

from ._client import show_symbol

STREAM = "demo"
BATCH = 256
PACE = 4000  # symbols per second
LINE_SECONDS = 0.5  # at most one line of progress this often
WAIT_SECONDS = 30.0  # for a reply, and for the daemon to learn what was sent
DEMO_SEED = 2015
PROGRESS_SECONDS = 10.0  # while the kernels compile, a line this often


def first_run() -> bool:
    """Whether this machine has no compiled kernels of this seqd yet (its kernel cache is empty)."""
    from seqd.core.jit import CACHE_DIR
    # (importing the kernels makes the cache's folders; Numba's index files, .nbi, come as kernels compile)
    return not any(name.endswith(".nbi") for _, _, names in os.walk(CACHE_DIR) for name in names)


def prepare_kernels(say, first: bool) -> None:
    """Compile (or load from the cache) the kernels the demo stream learns with, before anything is sent;
    on a first run (``first``: the cache was empty when the process started), saying so and how long it has
    been at it.  A line every :data:`PROGRESS_SECONDS` in any case, should loading take that long."""
    from seqd.core.learners import learner_for
    from seqd.daemon.models import make_config
    if first:
        say("First run: compiling seqd's learning kernels for this machine (a minute or two; later starts load "
            "them from the cache)...")
    done = threading.Event()
    t0 = time.monotonic()

    def tick():
        while not done.wait(PROGRESS_SECONDS):
            say(f"  still {'compiling' if first else 'loading the kernels'}: {time.monotonic() - t0:.0f} s")
    ticker = threading.Thread(target=tick, name="seqd-demo-compile", daemon=True)
    ticker.start()
    try:
        learner = learner_for(make_config("bytes", None))
        learner.learn(np.frombuffer(b"seqd demo\n" * 8, dtype=np.uint8).astype(np.int64))
        learner.predict_proba()
    finally:
        done.set()
        ticker.join()
    if first:
        say(f"  compiled in {time.monotonic() - t0:.0f} s.\n")


def run(api: str, metrics_url: str | None, stop: threading.Event, *, lines: int = 1000, out=sys.stdout,
        first: bool = False) -> None:
    task = generate("alphabet", np.random.default_rng(DEMO_SEED), lines)
    data = task.text.encode("ascii")
    truth = -task.true_log2_likelihood / len(data)
    say = lambda text: print(text, file=out, flush=True)  # noqa: E731
    say(f"\nseqd demo: stream {STREAM!r} learns seed 000's alphabet with insertions ({len(data):,} symbols, "
        f"true entropy {truth:.2f} bits/symbol),\nfed through the client library. Metrics: {metrics_url or 'off'}. "
        f"Ctrl-C stops the daemon.\n")
    prepare_kernels(say, first)
    say(f"{'symbols':>9}  {'bits/symbol':>11}  {'(recent)':>8}  {'context':>24}  next symbol, as the daemon predicts it")
    with Client(api, timeout=WAIT_SECONDS) as client:
        client.create(STREAM, exist_ok=True)
        position = client.stats(STREAM).accepted
        data = data[position % len(data):] if position else data
        t0 = time.monotonic()
        sent = 0
        last_line = 0.0
        while sent < len(data) and not stop.is_set():
            batch = data[sent:sent + BATCH]
            ack = client.publish(STREAM, batch, position=position)
            position = ack.position
            sent += len(batch)
            if time.monotonic() - last_line >= LINE_SECONDS or sent >= len(data):
                last_line = time.monotonic()
                pred = client.predict(STREAM, top=3, min_position=position, wait=WAIT_SECONDS)
                stats = client.stats(STREAM)
                context = data[max(0, sent - 24):sent].decode("ascii").replace("\n", "⏎")
                guesses = "  ".join(f"{show_symbol(s):>5} {p:5.1%}" for s, p in pred.top)
                say(f"{position:>9,}  {stats.bits_per_symbol:>11.3f}  {stats.recent_bits_per_symbol:>8.3f}  "
                    f"{context:>24}  {guesses}")
            stop.wait(max(0.0, t0 + sent / PACE - time.monotonic()))
        if not stop.is_set():
            stats = client.stats(STREAM)
            say(f"\nthe text is learned: {stats.recent_bits_per_symbol:.3f} bits/symbol over the last 4096 symbols "
                f"(the true model: {truth:.3f}; a constant model: {np.log2(stats.alphabet_size):.2f}).")
            say("seqd keeps serving. From another terminal:\n"
                "  seqd publish mylog some.log             # learn a log\n"
                "  seqd stats mylog                         # its compression rate\n"
                f"  curl {metrics_url or '<metrics off>'}")


def start(api: str, metrics_url: str | None, stop: threading.Event, first: bool) -> threading.Thread:
    """The demo in a thread; a failure is reported, never fatal to the daemon.  ``first``: :func:`first_run`,
    asked before the daemon started (which compiles kernels of its own)."""

    def guarded():
        name_os_thread("seqd-demo")
        try:
            run(api, metrics_url, stop, first=first)
        except SeqdError as exc:
            print(f"seqd demo: {exc}", file=sys.stderr)

    thread = threading.Thread(target=guarded, name="seqd-demo", daemon=True)
    thread.start()
    return thread
