"""seqd replicas as processes for the cluster's tests (``seqd serve --cluster``): started with a seqd.toml of
the test's own, waited for, and stopped, each one's log kept in the test's folder and shown at the end."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path


def start(url: str, member: str, root: Path, toml: str, *, replicas: int, partitions: int, lease_ttl: float,
          metrics_port: int = 0) -> subprocess.Popen:
    """A replica named ``member`` on the NATS servers ``url``, configured by ``toml`` (``root/<member>.toml``),
    logging to ``root/<member>.log`` (appended to: a replica started again keeps its earlier lines)."""
    config = root / f"{member}.toml"
    config.write_text(toml)
    with open(root / f"{member}.log", "a") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "seqd", "serve", "--config", str(config), "--cluster", url, "--member", member,
             "--replicas", str(replicas), "--partitions", str(partitions), "--lease-ttl", str(lease_ttl),
             "--metrics-port", str(metrics_port), "--workers", "1"], stdout=out, stderr=subprocess.STDOUT)


def wait_for(predicate, timeout: float, what: str):
    """``predicate()``'s first true value, asked every 0.2 s; AssertionError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout} s: {what}")


def stop(procs: dict[str, subprocess.Popen], nats, root: Path) -> None:
    """Every replica still running stopped (resumed first, should it be paused; killed after 30 s), then the
    NATS servers; the tail of each replica's log written to stderr, which pytest shows for a failure."""
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.send_signal(signal.SIGTERM)
    for p in procs.values():
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
    nats.stop()
    for member in sorted(procs):
        log = root / f"{member}.log"
        if log.exists():
            sys.stderr.write(f"--- {member}\n{log.read_text()[-4000:]}")
