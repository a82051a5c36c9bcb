"""No unmeasured judge by default: a service with no LLM judge configured judges nothing and says so.

Real Redis, a real API and a real RQ worker with the settings a new user starts with (no ANTHROPIC_API_KEY, no
RAGPULSE_JUDGE): retrieval metrics and security checks run, generation metrics are "not judged" in every surface and
name what to configure; the same batch with `judge: heuristic` carries the heuristic's figures labelled as such; the
gate refuses them as evidence for a judged metric unless the config allows the heuristic."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support import ROOT, Proc, child_env, start_api, start_worker, wait_for_job

pytestmark = pytest.mark.integration

EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"
TRACES = [line for line in EXAMPLES.read_text().splitlines() if line.strip()]
SETTINGS_NAMED = ("ANTHROPIC_API_KEY", "RAGPULSE_OPENAI_BASE_URL", "RAGPULSE_OPENAI_MODEL")


@dataclass
class Unjudged:
    url: str
    env: dict[str, str]


@pytest.fixture(scope="module")
def unjudged(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Unjudged]:
    tmp = tmp_path_factory.mktemp("unjudged")
    # RAGPULSE_JUDGE="" reads as unset: the default a new user gets, not the heuristic the other test stacks use
    env = {"RAGPULSE_QUEUE": f"unjudged-{uuid.uuid4().hex[:8]}", "RAGPULSE_JUDGE": "", "ANTHROPIC_API_KEY": "",
           "ANTHROPIC_AUTH_TOKEN": ""}
    url, api = start_api(redis_url, tmp, env)
    worker: Proc = start_worker(redis_url, tmp, env, name="unjudged")
    try:
        yield Unjudged(url, env)
    finally:
        for proc in (api, worker):
            proc.stop()


def post(url: str, options: dict | None = None) -> tuple[dict, dict]:
    """Post the 65 example traces; the accepted answer and the finished job's report."""
    import json

    body = {"traces": [json.loads(line) for line in TRACES], **({"options": options} if options else {})}
    with httpx.Client(base_url=url, timeout=60) as client:
        accepted = client.post("/v1/batches", json=body)
        assert accepted.status_code == 202, accepted.text
        job = wait_for_job(client, accepted.json()["job_id"], timeout=120)
        assert job["status"] == "finished", job
        report = client.get(f"/v1/jobs/{job['job_id']}/report")
        assert report.status_code == 200, report.text
    return accepted.json(), report.json()


def cli(unjudged: Unjudged, *args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", *map(str, args), "--server", unjudged.url],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=child_env("unused"))


def test_no_judge_configured_means_not_judged_everywhere(unjudged: Unjudged) -> None:
    accepted, report = post(unjudged.url)
    [warning] = [w for w in accepted["warnings"] if w["code"] == "not_judged"]
    assert all(name in warning["message"] for name in SETTINGS_NAMED)
    generation = report["generation"]
    assert generation["judges"] == {} and generation["n_judged"] == 0
    assert "not judged" in generation["not_judged"] and "ANTHROPIC_API_KEY" in generation["not_judged"]
    assert generation["hallucination_rate"] is None and generation["faithfulness"] is None
    assert report["retrieval"]["recall@5"]["n"] > 0                        # retrieval still measured
    assert report["security"]["rates"]["pii"]["n"] == 65                      # security checks still run
    text = cli(unjudged, "eval", EXAMPLES)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "GENERATION: not judged" in text.stdout and "recall@5" in text.stdout
    assert "hallucination_rate" not in text.stdout
    with httpx.Client(base_url=unjudged.url, timeout=30) as client:
        page = client.get(f"/v1/jobs/{report['job_id']}/report.html").text
        assert "data-not-judged" in page and "Hallucination" not in page.split("<h2>Generation</h2>")[1][:400]
        monitor = client.get("/v1/monitor/nimbus-support", params={"window": "1h"}).json()
        assert monitor["judge"]["judge"] == "none" and "ANTHROPIC_API_KEY" in monitor["not_judged"]
        assert "data-not-judged" in client.get("/apps/nimbus-support").text
        metrics = client.get("/metrics").text
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready" and ready["default_judge"]["configured"] is False
        assert "not judged" in ready["default_judge"]["problem"]
        assert "data-judge-problem" in client.get("/").text
    assert 'ragpulse_judge_configured{heuristic="false",judge="none"} 0.0' in metrics


def test_the_heuristic_is_opt_in_and_labelled(unjudged: Unjudged) -> None:
    accepted, report = post(unjudged.url, {"judge": "heuristic"})
    assert not [w for w in accepted["warnings"] if w["code"] in ("not_judged", "judge_renamed")]
    generation = report["generation"]
    assert generation["heuristic"] is True and generation["judges"] == {"heuristic": 65}
    assert generation["not_judged"] is None and generation["hallucination_rate"]["n"] > 0
    text = cli(unjudged, "eval", EXAMPLES, "--judge", "heuristic")
    assert text.returncode == 0, text.stdout + text.stderr
    assert "GENERATION (judge: heuristic (65)" in text.stdout and "NOTE: HEURISTIC" in text.stdout
    with httpx.Client(base_url=unjudged.url, timeout=30) as client:
        page = client.get(f"/v1/jobs/{report['job_id']}/report.html").text
    assert "data-heuristic" in page and "Offline heuristic judge." in page


def test_the_old_name_is_accepted_with_a_deprecation_warning(unjudged: Unjudged) -> None:
    accepted, report = post(unjudged.url, {"judge": "local"})
    [warning] = [w for w in accepted["warnings"] if w["code"] == "judge_renamed"]
    assert "`heuristic`" in warning["message"] and "deprecated" in warning["message"]
    assert report["generation"]["judges"] == {"heuristic": 65}


def test_the_gate_refuses_the_heuristic_for_judged_metrics_unless_allowed(unjudged: Unjudged, tmp_path: Path) -> None:
    example = (ROOT / "examples" / "gate.toml").read_text()
    refused_config = tmp_path / "refused.toml"
    refused_config.write_text(example.replace('[options]\n', '[options]\njudge = "heuristic"\n', 1))
    refused = cli(unjudged, "gate", EXAMPLES, "--config", refused_config)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "allow_heuristic = true" in refused.stderr and "hallucination_rate" in refused.stderr
    assert "created" not in refused.stderr                                  # refused before anything was posted
    allowed_config = tmp_path / "allowed.toml"
    allowed_config.write_text(refused_config.read_text().replace("allow_heuristic = false", "allow_heuristic = true"))
    allowed = cli(unjudged, "gate", EXAMPLES, "--config", allowed_config)
    assert allowed.returncode in (0, 1), allowed.stdout + allowed.stderr   # a verdict, whichever it is
    assert "hallucination_rate" in allowed.stdout


def test_the_gate_says_a_judged_threshold_was_not_judged(unjudged: Unjudged) -> None:
    gated = cli(unjudged, "gate", EXAMPLES, "--config", ROOT / "examples" / "gate.toml")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    [row] = [line for line in gated.stdout.splitlines() if line.startswith("hallucination_rate ")]
    assert "FAIL" in row
    assert "not judged" in gated.stdout


def online_result(url: str, trace_id: str) -> dict:
    import time

    deadline = time.monotonic() + 60
    while True:
        record = httpx.get(f"{url}/v1/traces/{trace_id}", timeout=30).json()
        if record.get("status") not in (None, "pending") or time.monotonic() > deadline:
            return record
        time.sleep(0.3)


def test_an_app_policy_opts_its_production_traces_in_to_the_heuristic(unjudged: Unjudged) -> None:
    tag = uuid.uuid4().hex[:8]
    opted, plain = f"opted-{tag}", f"plain-{tag}"
    with httpx.Client(base_url=unjudged.url, timeout=30) as client:
        put = client.put(f"/v1/apps/{opted}/policy", json={"sample_rate": 1.0, "judge": "heuristic"})
        assert put.status_code == 200, put.text
        policy = client.get(f"/v1/apps/{opted}/policy").json()
        assert policy["judge"] == "heuristic" and policy["sources"]["judge"] == "stored"
        assert client.get(f"/v1/apps/{plain}/policy").json()["sources"]["judge"] == "RAGPULSE_JUDGE"
        bad = client.put(f"/v1/apps/{opted}/policy", json={"judge": "gpt"})
        assert bad.status_code in (400, 422) and "judge" in bad.text
        for app in (opted, plain):
            posted = client.post("/v1/traces", json={"traces": [{
                "trace_id": f"{app}-1", "app": app, "query": "How long is the warranty?", "answer": "Two years.",
                "retrieved_docs": [{"id": "w", "text": "The warranty lasts two years."}], "gold_doc_ids": ["w"]}]})
            assert posted.status_code == 202, posted.text
    opted_result = online_result(unjudged.url, f"{opted}-1")["result"]
    plain_result = online_result(unjudged.url, f"{plain}-1")["result"]
    assert opted_result["judge"] == "heuristic" and opted_result["generation"] is not None
    assert plain_result["judge"] is None and plain_result["generation"] is None
    assert plain_result["retrieval"]["recall@1"] == 1.0
    with httpx.Client(base_url=unjudged.url, timeout=30) as client:
        opted_view = client.get(f"/v1/monitor/{opted}", params={"window": "1h"}).json()
        plain_view = client.get(f"/v1/monitor/{plain}", params={"window": "1h"}).json()
        assert opted_view["not_judged"] is None and opted_view["judge"]["heuristic"] is True
        assert "ANTHROPIC_API_KEY" in plain_view["not_judged"]
        assert "data-heuristic" in client.get(f"/apps/{opted}").text
