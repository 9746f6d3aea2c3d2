"""kill -9 while streams hibernate and wake in a budget of three learners: nothing acknowledged is lost, every
stream comes back bit for bit, and every restart stays within ``max_state_bytes`` and the daemon's base.

    python bench/crash.py                  # 12 streams, 10 kills; writes docs/benchmarks.md
    python bench/crash.py --kills 3 --no-write

``seqd serve`` (a process of its own) serves ``--streams`` byte streams of a
model whose learner grows to ``most_bytes`` (54 MiB); ``max_state_bytes`` is
three of them and the streams' own bytes, learners hibernate after a second
idle and snapshots are due every three seconds, so the daemon is always
writing a snapshot, hibernating or waking something.  One publisher per
stream sends slices of the public logs as conditional batches (a position,
and the client library's batch ids) at random intervals; what is
acknowledged is recorded.  A killer sends SIGKILL every few seconds, some of
the time the moment a snapshot's temporary file appears (a snapshot being
written), then restarts the daemon.  For each restart: the time until it
answers, and its peak resident memory (``VmHWM``) once it does, against
``max_state_bytes`` plus the base (the daemon's memory with its kernels
loaded and no stream, measured first as ``bench/many_streams.py`` does).  At
the end each stream's prediction and code length are compared with an
in-process learner fed exactly the acknowledged batches.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baselines import log_files  # noqa: E402
from common import command_line, machine, report, serve_in, wait_until_serving  # noqa: E402
from soak import rss_bytes  # noqa: E402

from seqd.clients.client import Client  # noqa: E402
from seqd.clients.errors import ConflictError, SeqdError  # noqa: E402
from seqd.core.learners import learner_for  # noqa: E402
from seqd.daemon.budget import STREAM_BYTES  # noqa: E402
from seqd.daemon.learner_store import most_bytes  # noqa: E402
from seqd.daemon.models import make_config  # noqa: E402

MIB = 1 << 20
SETTINGS = dict(table_bits=16, history_bits=20, match_bits=18)  # the default byte model, at most some 80 MiB
MAX_CHUNK = 8192  # bytes of a publisher's batch at most


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


class Publisher(threading.Thread):
    """Conditional batches of one stream at random intervals; ``acked`` is what the daemon acknowledged."""

    def __init__(self, api: str, name: str, data: bytes, seed: int, stop: threading.Event):
        super().__init__(daemon=True)
        self.api, self.name, self.data, self.stop = api, name, data, stop
        self.rng = random.Random(seed)
        self.acked = 0
        self.errors: list[str] = []

    def run(self) -> None:
        with Client(self.api, timeout=2.0, retries=2) as client:
            while not self.stop.is_set() and self.acked < len(self.data):
                chunk = self.data[self.acked:self.acked + self.rng.randint(512, MAX_CHUNK)]
                try:
                    self.acked = client.publish(self.name, chunk, position=self.acked).position
                except ConflictError:  # an attempt before a kill landed, or the log lost it: the length says
                    try:
                        accepted = client.stats(self.name).accepted
                    except SeqdError:
                        continue
                    if accepted == self.acked + len(chunk):
                        self.acked = accepted
                    elif accepted != self.acked:
                        self.errors.append(f"{self.name}: holds {accepted} symbols, {self.acked} acknowledged")
                        return
                except SeqdError:  # the daemon is down: the same batch again once it is back
                    self.stop.wait(0.2)
                    continue
                self.stop.wait(self.rng.uniform(0.0, 1.6))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=12)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--bytes", type=int, default=300_000, help="bytes each stream may get (default 300,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    files = log_files()
    if not files:
        print("crash: ../shared/data/logs is absent: nothing to publish; skipped")
        return 0
    corpus = b"".join(Path(f).read_bytes() for f in files)
    config = make_config("bytes", SETTINGS)
    budget = 3 * most_bytes(config) + args.streams * STREAM_BYTES
    toml = (f"[limits]\nmax_state_bytes = {budget}\nhibernate_after_seconds = 1.0\n"
            "[durability]\nsnapshot_interval_seconds = 3.0\n[server]\nworkers = 2\n")
    rng = random.Random(args.seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        proc, api, _, state = serve_in(folder, toml)
        with Client(api, timeout=300) as client:  # the base: kernels loaded (compiled, on a first run), no stream
            wait_until_serving(client)
            client.create("base", config=SETTINGS)
            client.publish("base", corpus[:20_000], position=0)
            client.predict("base", min_position=20_000, wait=120)
            client.drop("base")
            time.sleep(1.0)
            base = rss_bytes(proc.pid)
            for k in range(args.streams):
                client.create(f"s{k:02d}", config=SETTINGS)
        stop = threading.Event()
        slices = [corpus[(k * 97_003) % len(corpus):][:args.bytes] for k in range(args.streams)]
        slices = [s if len(s) == args.bytes else (s + corpus)[:args.bytes] for s in slices]
        publishers = [Publisher(api, f"s{k:02d}", slices[k], args.seed + k, stop) for k in range(args.streams)]
        for p in publishers:
            p.start()
        streams_dir = state / "streams"
        for kill in range(args.kills):
            time.sleep(rng.uniform(2.0, 5.0))
            during_snapshot = rng.random() < 0.5
            if during_snapshot:  # the moment a snapshot's temporary file appears
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not any(streams_dir.glob("*/snapshot.*.tmp")):
                    time.sleep(0.002)
                during_snapshot = any(streams_dir.glob("*/snapshot.*.tmp"))
            acked_before = sum(p.acked for p in publishers)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            t0 = time.monotonic()
            proc = serve_in_again(folder, api, state)
            with Client(api, timeout=2) as client:
                wait_until_serving(client)
                ready = time.monotonic() - t0
                peak = peak_rss(proc.pid)
            rows.append((kill + 1, "yes" if during_snapshot else "no", acked_before, ready, peak))
            print(f"kill {kill + 1}: during a snapshot {during_snapshot}, {acked_before:,} symbols acknowledged, "
                  f"ready in {ready:.1f} s, peak {peak / MIB:.0f} MiB (budget + base {(budget + base) / MIB:.0f})",
                  flush=True)
        stop.set()
        for p in publishers:
            p.join()
        errors = [e for p in publishers for e in p.errors]
        exact = unacknowledged = 0
        with Client(api, timeout=30) as client:
            for p in publishers:
                pred = client.predict(p.name, full=True, min_position=p.acked, wait=300)
                stats = client.stats(p.name)
                # a batch in flight when the publishers stopped may have landed unacknowledged (its publisher
                # would have resent it): the stream then holds up to one batch more, which is no loss
                held = stats.accepted if p.acked <= stats.accepted <= p.acked + MAX_CHUNK else p.acked
                unacknowledged += held > p.acked
                learner = learner_for(config)
                bits = float(learner.learn(np.frombuffer(slices[publishers.index(p)][:held],
                                                         dtype=np.uint8).astype(np.int64)).sum())
                # (the code length is a sum of the batches' sums, in the order they came and were replayed:
                # equal to the learner's one sum but for rounding)
                wrong = [what for what, ok in (
                    ("length", stats.accepted == held and pred.position == held),
                    ("distribution", np.array_equal(np.asarray(pred.distribution), learner.predict_proba())),
                    ("code length", abs(stats.code_bits - bits) <= 1e-9 * bits)) if not ok]
                exact += not wrong
                if wrong:
                    errors.append(f"{p.name}: its {' and '.join(wrong)} differ (accepted {stats.accepted}, "
                                  f"acknowledged {p.acked}; code length {stats.code_bits!r}, the learner's {bits!r})")
        proc.send_signal(signal.SIGTERM)
        proc.wait(120)
    acked = sum(p.acked for p in publishers)
    limit = budget + base
    over = [r for r in rows if r[4] > limit]
    lines = [
        f"Command: `{command_line('crash.py', argv)}`  ",
        f"Machine: {machine()}  ",
        f"{args.streams} byte streams (`bytes` with {', '.join(f'{k}={v}' for k, v in SETTINGS.items())}: a "
        f"learner of at most {most_bytes(config) / MIB:.0f} MiB); max_state_bytes {budget / MIB:.0f} MiB (three "
        f"learners and the streams' own bytes); hibernation after 1 s idle, snapshots every 3 s; base (kernels "
        f"loaded, no stream) {base / MIB:.0f} MiB.",
        "",
        "| kill | during a snapshot write | symbols acknowledged before it | ready after restart (s) | "
        "peak RSS at ready (MiB) | within max_state_bytes + base |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for kill, snap, before, ready, peak in rows:
        lines.append(f"| {kill} | {snap} | {before:,} | {ready:.1f} | {peak / MIB:.0f} | "
                     f"{'yes' if peak <= limit else 'NO'} |")
    lines += ["", f"Acknowledged in all: {acked:,} symbols; streams bit-identical to a learner fed exactly them "
                  f"(length and prediction, code length to 1e-9): {exact} of {args.streams} ({unacknowledged} "
                  "holding one batch more, sent before the publishers stopped and not acknowledged to them); "
                  "acknowledged symbols lost: "
                  f"{'none' if not errors else '; '.join(errors)}. Restarts over max_state_bytes + base: "
                  f"{len(over)} of {len(rows)}."]
    report("crash_recovery", "\n".join(lines), not args.no_write)
    return 1 if errors or over else 0


def serve_in_again(folder: Path, api: str, state: Path):
    """``seqd serve`` again on the same configuration, state and request endpoint (its other ports anew)."""
    from common import free_port, serve_process
    return serve_process(str(state), api, f"tcp://127.0.0.1:{free_port()}", free_port(), "--config",
                         str(folder / "seqd.toml"))


if __name__ == "__main__":
    sys.exit(main())
