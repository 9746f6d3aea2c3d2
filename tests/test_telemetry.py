"""The telemetry as Prometheus's own tools read it: the daemon's /metrics passes ``promtool check metrics``,
the alerting rules pass ``promtool check rules`` and their unit tests (``promtool test rules``), and the
Prometheus configuration of deploy/ loads them.  These need promtool on PATH (``.ci/run`` fetches it from
Debian's archive); without it they skip, saying so."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest

from daemon_harness import SMALL_BYTES, Caller, ThreadServer

PROMTOOL = shutil.which("promtool")
DEPLOY = Path(__file__).resolve().parent.parent / "deploy" / "prometheus"
pytestmark = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not on PATH (see .ci/run)")


def promtool(*args, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)


def test_the_metrics_a_working_daemon_exports_pass_promtool(tmp_path):
    with ThreadServer(tmp_path / "state", metrics_port="free") as srv:
        port = srv.metrics_port
        call = Caller(srv.api)
        call.ok("create", stream="s", config=SMALL_BYTES)
        call.ok("publish", stream="s", symbols=b"GET /index.html 200\n" * 60)
        call("publish", stream="s", symbols=b"x", position=0)  # an error outcome, so its series exists too
        call.ok("predict", stream="s", min_position=1200, wait_ms=30000)
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        call.close()
    assert "seqd_build_info{" in body and "seqd_stream_code_length_per_symbol{" in body
    result = promtool("check", "metrics", stdin=body)
    assert result.returncode == 0 and not result.stdout.strip() and not result.stderr.strip(), result


def test_the_alerting_rules_check_and_pass_their_unit_tests():
    checked = promtool("check", "rules", str(DEPLOY / "alerts.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", "alerts_test.yml", cwd=DEPLOY)
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_the_compose_prometheus_configuration_loads_the_rules(tmp_path):
    # prometheus.yml names the rules where compose mounts them; check it with the file at that relative place
    config = (DEPLOY / "prometheus.yml").read_text().replace("/etc/prometheus/alerts.yml", "alerts.yml")
    (tmp_path / "prometheus.yml").write_text(config)
    shutil.copy(DEPLOY / "alerts.yml", tmp_path / "alerts.yml")
    result = promtool("check", "config", str(tmp_path / "prometheus.yml"))
    assert result.returncode == 0 and "1 rule files found" in result.stdout, result.stdout + result.stderr
