"""End to end: a real Prometheus scrapes the running stack and fires HallucinationRateSpike through its API.

The rules are deploy/prometheus/alerts.yml itself, with only their time windows shortened (15m -> 20s,
24h -> 60s, `for:` -> 0s) so the test takes a minute instead of a day; every expression is otherwise unchanged.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from ragpulse.ops.redis_server import free_port
from tests.fake_anthropic import FakeAnthropic
from tests.support import ROOT, wait_for_job

pytestmark = pytest.mark.integration
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
SHORTER = {"15m": "20s", "24h": "60s", "1h": "30s", "10m": "20s"}


def shortened_rules(text: str) -> str:
    """The real rules with windows and offsets shortened and every `for:` set to 0s."""
    text = re.sub(r"\[(15m|24h|1h|10m)\]", lambda m: f"[{SHORTER[m.group(1)]}]", text)
    text = re.sub(r"offset (15m|24h|1h|10m)", lambda m: f"offset {SHORTER[m.group(1)]}", text)
    return re.sub(r"(\n\s+for:) \S+", r"\1 0s", text)


def start_prometheus(tmp: Path, target: str) -> tuple[str, subprocess.Popen]:
    (tmp / "alerts.yml").write_text(shortened_rules(RULES.read_text()))
    (tmp / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "rule_files: [alerts.yml]\n"
        f"scrape_configs:\n  - job_name: ragpulse-api\n    static_configs: [{{targets: ['{target}']}}]\n")
    port = free_port()
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=(tmp / "prometheus.log").open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                return url, proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError((tmp / "prometheus.log").read_text())


def traces(app: str, n: int, tag: str, hallucinate: bool) -> list[dict]:
    answer = "Invented claim {i}." if hallucinate else "Fact {i} holds."
    return [{"trace_id": f"{tag}-{i}", "app": app, "query": f"q {i}", "answer": answer.format(i=i),
             "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds."}]} for i in range(n)]


def firing(prometheus: str, app: str) -> list[dict]:
    alerts = httpx.get(f"{prometheus}/api/v1/alerts").json()["data"]["alerts"]
    return [a for a in alerts if a["labels"].get("alertname") == "HallucinationRateSpike"
            and a["labels"].get("app") == app and a["state"] == "firing"]


@pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus not installed: apt-get install prometheus")
def test_hallucination_spike_fires_the_alert(cluster_factory, tmp_path: Path) -> None:
    app = f"spike{uuid.uuid4().hex[:6]}"
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_APPS=app)
        production = {"environment": "production"}              # batches are evaluation runs unless they say so
        prometheus, proc = start_prometheus(tmp_path, cluster.url.removeprefix("http://"))
        try:
            for n in range(3):                                   # a grounded baseline
                wait_for_job(cluster.http, cluster.post(traces(app, 12, f"base{n}", hallucinate=False), **production))
                time.sleep(4)
            assert not firing(prometheus, app)
            time.sleep(12)                                       # the baseline leaves the short window
            for n in range(3):                                   # then a spike of invented answers
                wait_for_job(cluster.http, cluster.post(traces(app, 10, f"spike{n}", hallucinate=True), **production))
                time.sleep(2)
            deadline = time.monotonic() + 60
            while not firing(prometheus, app):
                assert time.monotonic() < deadline, (tmp_path / "prometheus.log").read_text()[-2000:]
                time.sleep(1)
            [alert] = firing(prometheus, app)
            assert alert["labels"]["severity"] == "critical"
        finally:
            proc.terminate()
            proc.wait(10)
