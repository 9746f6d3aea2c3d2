"""``seqd serve --demo``: the daemon, plus a built-in stream fed through the client library.

The stream is seed 000's alphabet with insertions (``core/tasks.py``), sent
in small batches at a watchable pace.  After each batch the demo asks the
daemon for its prediction and prints the stream's recent bits per symbol
beside the true model's (the entropy the generator actually has), and what
the daemon expects next.  When the text ends the daemon keeps serving: try
``seqd publish``, ``seqd stats`` and the metrics URL from another terminal.
"""

from __future__ import annotations

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


def run(api: str, metrics_url: str | None, stop: threading.Event, *, lines: int = 1000, out=sys.stdout) -> None:
    task = generate("alphabet", np.random.default_rng(DEMO_SEED), lines)
    data = task.text.encode("ascii")
    truth = -task.true_log2_likelihood / len(data)
    say = lambda text: print(text, file=out, flush=True)  # noqa: E731
    say(f"\nseqd demo: stream {STREAM!r} learns seed 000's alphabet with insertions ({len(data):,} symbols, "
        f"true entropy {truth:.2f} bits/symbol),\nfed through the client library. Metrics: {metrics_url or 'off'}. "
        f"Ctrl-C stops the daemon.\n")
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


def start(api: str, metrics_url: str | None, stop: threading.Event) -> threading.Thread:
    """The demo in a thread; a failure is reported, never fatal to the daemon."""

    def guarded():
        name_os_thread("seqd-demo")
        try:
            run(api, metrics_url, stop)
        except SeqdError as exc:
            print(f"seqd demo: {exc}", file=sys.stderr)

    thread = threading.Thread(target=guarded, name="seqd-demo", daemon=True)
    thread.start()
    return thread
