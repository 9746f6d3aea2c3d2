"""What one request costs in CPU on each side, against a bare ZeroMQ echo on the same machine.

    python bench/request_cost.py                 # writes its table into docs/benchmarks.md
    python bench/request_cost.py --no-write --requests 5000 --rounds 3

A daemon (``seqd serve`` defaults, a process of its own) holds one small
stream; a :class:`Client` in this process asks it ``predict(top=5)`` back to
back, ``--requests`` times.  CPU seconds come from ``/proc``: the daemon
process's, all threads, and this process's (the client, with its ZeroMQ I/O
thread).  The peer is a bare ZeroMQ ROUTER that sends every message back (a
process of its own) and a bare DEALER that sends 64 bytes and waits for them:
what a request costs here before any seqd code runs.  Rounds alternate the
two, and the median round of each is shown.  CPU per request, not wall
clock, is the measure: at the load benchmark's 500 requests a second, every
microsecond of it is a microsecond the learners do not get.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import zmq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import command_line, free_port, machine, report, serve_process  # noqa: E402
from load import Background, _echo, bare_request, cpu_seconds  # noqa: E402

from seqd.clients.client import Client  # noqa: E402

WARM_UP = 200  # requests before the measurement: connections made, code paths warm


def _measure(server_pid: int, ask, requests: int) -> tuple[float, float]:
    """Microseconds of CPU per request: (server, client)."""
    for _ in range(WARM_UP):
        ask()
    server0, client0 = cpu_seconds(server_pid), time.process_time()
    for _ in range(requests):
        ask()
    return ((cpu_seconds(server_pid) - server0) / requests * 1e6, (time.process_time() - client0) / requests * 1e6)


def seqd_round(requests: int, timeout: float) -> tuple[float, float]:
    api = f"tcp://127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory() as state:
        proc = serve_process(state, api, f"tcp://127.0.0.1:{free_port()}")
        try:
            with Client(api, timeout=timeout) as c:
                c.publish("s", b"GET /index.html 200\n" * 30, create=True)
                c.predict("s", min_position=600, wait=timeout)
                return _measure(proc.pid, lambda: c.predict("s", top=5), requests)
        finally:
            proc.terminate()
            proc.wait(timeout)


def echo_round(requests: int, timeout: float) -> tuple[float, float]:
    address = f"tcp://127.0.0.1:{free_port()}"
    echo = Background((_echo, address))
    try:
        with zmq.Context() as ctx, ctx.socket(zmq.DEALER) as sock:
            sock.connect(address)
            return _measure(echo.pids[0], lambda: bare_request(sock, timeout), requests)
    finally:
        echo.finish(timeout, rows=False)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests measured per round (default 20000)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of each, alternating (default 5)")
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md alone")
    args = parser.parse_args(argv)
    seqd, echo = [], []
    for k in range(args.rounds):
        print(f"round {k + 1}/{args.rounds}: seqd, then the bare echo, {args.requests} requests each ...",
              file=sys.stderr)
        seqd.append(seqd_round(args.requests, args.timeout))
        echo.append(echo_round(args.requests, args.timeout))
    s, e = np.median(seqd, axis=0), np.median(echo, axis=0)

    def each(rows, side):
        return ", ".join(f"{r[side]:.0f}" for r in rows)
    body = "\n".join([
        f"Command: `{command_line('request_cost.py')}`  ",
        f"Machine: {machine()}",
        "",
        f"{args.requests:,} requests back to back per round, {args.rounds} rounds of each, alternating; medians, "
        "with every round's figure after them.",
        "",
        "| CPU per request (µs) | server | client | both |",
        "|---|---:|---:|---:|",
        f"| `predict(top=5)`: `seqd serve` and `Client` | {s[0]:.0f} ({each(seqd, 0)}) | {s[1]:.0f} "
        f"({each(seqd, 1)}) | {s.sum():.0f} |",
        f"| bare ZeroMQ: ROUTER echo and DEALER, 64 bytes | {e[0]:.0f} ({each(echo, 0)}) | {e[1]:.0f} "
        f"({each(echo, 1)}) | {e.sum():.0f} |",
        f"| **seqd over bare ZeroMQ** | **{s[0] / e[0]:.2f}×** | **{s[1] / e[1]:.2f}×** | "
        f"**{s.sum() / e.sum():.2f}×** |",
    ])
    report("request_cost", body, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
