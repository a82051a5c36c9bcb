"""The review loop end to end on real Redis, the API and a worker: the review queue serves traces, a reviewer labels
them through the API, and the labels' measure of the judge's error corrects the hallucination rate in the monitor,
the job report, the comparison and the gate, while /metrics carries the 2x2 counts.

The judge (the offline `local` one, deterministic) flags every "green cheese" answer; the human truth is that two in
five of those are fine (the judge's false positives) and that it misses nothing. So the judge says 0.5 where the truth
is 0.3: sensitivity 1, specificity 100 / 140 = 0.714, corrected (0.5 + 0.714 - 1) / (1 + 0.714 - 1) = 0.3.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support import ROOT, child_env, start_api, start_worker, wait_for_job
from tests.test_labels import post_online

APP = "loop-app"
N = 200


@dataclass
class Loop:
    client: httpx.Client
    url: str
    tag: str


def traces(tag: str) -> list[dict]:
    """N traces of APP, every other one answering with a claim the judge finds unsupported."""
    return [{"trace_id": f"{tag}-{i}", "app": APP, "query": f"What about fact {i}?",
             "answer": "The moon is made of green cheese and costs 12 euros." if i % 2 else f"Fact {i} holds.",
             "retrieved_docs": [{"id": f"d{i}", "text": f"Fact {i} holds. Nothing else is known."}]}
            for i in range(N)]


def truly_hallucinated(trace_id: str) -> bool:
    """The human truth: the flagged (odd) traces hallucinate, except those with i % 5 in (1, 3): 2 in 5 of them."""
    i = int(trace_id.rsplit("-", 1)[1])
    return i % 2 == 1 and i % 5 not in (1, 3)


@pytest.fixture(scope="module")
def loop(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Loop]:
    tmp = tmp_path_factory.mktemp("loop")
    env = {"RAGPULSE_QUEUE": f"loop-{uuid.uuid4().hex[:8]}", "RAGPULSE_API_KEYS": "acme:key-loop",
           "RAGPULSE_REVIEW_SAMPLE_RATE": "0.5", "RAGPULSE_APPS": APP, "RAGPULSE_JUDGE": "local"}
    url, api = start_api(redis_url, tmp, env)
    worker = start_worker(redis_url, tmp, env, name="loop")
    tag = f"loop{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=url, timeout=60, headers={"Authorization": "Bearer key-loop"}) as client:
        assert len(post_online(client, traces(tag))) == N
        labelled = review_everything(client)
        assert labelled >= 60
        yield Loop(client, url, tag)
    for proc in (api, worker):
        proc.stop()


def review_everything(client: httpx.Client) -> int:
    """Label what the queue serves, as the human truth says, until it serves nothing new."""
    done = 0
    while True:
        queue = client.get(f"/v1/apps/{APP}/review", params={"n": 50, "reviewer": "alice"}).json()
        if not queue["items"]:
            return done
        for item in queue["items"]:
            assert "verdict" not in json.dumps(item["claims"])           # the judge's calls are kept apart
            response = client.post("/v1/labels", json={"trace_id": item["trace_id"], "reviewer": "alice",
                                                       "hallucinated": truly_hallucinated(item["trace_id"]),
                                                       "abstained": False})
            assert response.status_code == 201, response.text
            done += 1


def covers(rate: dict, truth: float) -> bool:
    return rate["ci95"][0] <= truth <= rate["ci95"][1]


def test_the_agreement_measures_the_judges_error(loop: Loop) -> None:
    [entry] = [e for e in loop.client.get(f"/v1/apps/{APP}/agreement").json()["judges"] if e["current"]]
    agreement = entry["agreement"]
    assert entry["judge"] == "heuristic" and agreement["estimation_labels"] >= 30
    assert agreement["sensitivity"]["value"] == 1.0                     # it misses nothing
    assert 0.55 < agreement["specificity"]["value"] < 0.85              # 100 / 140 = 0.714 in the population


def test_the_monitor_gives_the_corrected_rate_beside_the_raw_one(loop: Loop) -> None:
    view = loop.client.get(f"/v1/monitor/{APP}", params={"window": "1h"}).json()
    raw, corrected = view["hallucination_rate"], view["corrected"]["hallucination_rate"]
    assert raw["rate"] == pytest.approx(0.5) and not covers(raw, 0.3)  # the judge's own rate is off, tightly
    assert corrected["status"] == "ok" and covers(corrected, 0.3), corrected
    # The review sample is a random half (the trace ids carry a random tag), so the specificity it measures varies
    # from run to run (about 0.71 +- 0.04): the point is checked against the formula on what was measured, and as
    # nearer the truth than the raw rate; a band around 0.3 failed about one run in 30.
    [entry] = [e for e in loop.client.get(f"/v1/apps/{APP}/agreement").json()["judges"] if e["current"]]
    se, sp = entry["agreement"]["sensitivity"]["value"], entry["agreement"]["specificity"]["value"]
    assert corrected["corrected"] == pytest.approx(min(1.0, max(0.0, (raw["rate"] + sp - 1) / (se + sp - 1))))
    assert abs(corrected["corrected"] - 0.3) < abs(raw["rate"] - 0.3)
    assert view["judge"] == {"judge": "heuristic", "prompt_version": view["judge"]["prompt_version"], "heuristic": True}


def test_the_report_comparison_and_gate_read_the_corrected_rate(loop: Loop, tmp_path: Path) -> None:
    batch = [{**t, "trace_id": t["trace_id"].replace(loop.tag, f"{loop.tag}b")} for t in traces(loop.tag)]
    jobs = []
    for _ in range(2):
        response = loop.client.post("/v1/batches", json={"traces": batch, "options": {"judge": "local"}})
        jobs.append(response.json()["job_id"])
        wait_for_job(loop.client, jobs[-1])
    report = loop.client.get(f"/v1/jobs/{jobs[0]}/report").json()
    assert report["generation"]["hallucination_rate"]["mean"] == pytest.approx(0.5)
    corrected = report["corrected"]["hallucination_rate"]
    assert corrected["status"] == "ok" and covers(corrected, 0.3) and report["judge_agreement"]["sensitivity"]
    assert "unanswerable_hallucination_rate" not in report["corrected"]   # no unanswerable trace: no rate to correct
    page = loop.client.get(f"/v1/jobs/{jobs[0]}/report.html").text
    assert "<h2>Judge-corrected rates</h2>" in page and f"{corrected['corrected']:.3f}" in page
    comparison = loop.client.get(f"/v1/jobs/{jobs[1]}/compare", params={"baseline": jobs[0]}).json()
    sides = comparison["corrected"]["hallucination_rate"]
    assert sides["baseline"]["corrected"] == sides["candidate"]["corrected"] == corrected["corrected"]

    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in batch))
    config = tmp_path / "gate.toml"
    outputs = {}
    for on, code in (("corrected", 0), ("mean", 1)):   # 0.3 corrected holds a 0.4 ceiling; the judge's 0.5 does not
        config.write_text(f'allow_heuristic = true\n[options]\njudge = "local"\n[thresholds.hallucination_rate]\nmax = 0.4\non = "{on}"\n')
        run = subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "gate", str(path), "--server", loop.url,
                              "--api-key", "key-loop", "--config", str(config)], capture_output=True, text=True,
                             timeout=300, cwd=ROOT, env=child_env("unused"))
        assert run.returncode == code, run.stdout + run.stderr
        outputs[on] = run.stdout
    assert re.search(r"^hallucination_rate +0\.[0-3]\d\d .*<= 0\.4 \(corrected\) .*PASS$", outputs["corrected"], re.M)
    assert re.search(r"^hallucination_rate +0\.500 .*<= 0\.4 .*FAIL$", outputs["mean"], re.M)


def test_metrics_carry_the_two_by_two_counts(loop: Loop) -> None:
    text = loop.client.get("/metrics").text
    cells = dict(re.findall(r'^ragpulse_judge_agreement_labels\{([^}]*app="loop-app"[^}]*sample="uniform"[^}]*)\} '
                            r'(\S+)$', text, re.M))
    flagged_fine = [v for k, v in cells.items() if 'human="faithful"' in k and 'judge_verdict="hallucinated"' in k]
    missed = [v for k, v in cells.items() if 'human="hallucinated"' in k and 'judge_verdict="faithful"' in k]
    assert flagged_fine and float(flagged_fine[0]) > 0                 # the judge's false positives are counted
    assert not missed or float(missed[0]) == 0                         # and it misses nothing


DOM_CORRECTED = """[...document.querySelectorAll('table.corrected tbody tr')].map(r => {
  const cell = kind => { const c = r.querySelector('[data-' + kind + ']');
    return c.dataset[kind] === 'none' ? null : [+c.dataset[kind], +c.dataset.lo, +c.dataset.hi]; };
  return {window: r.dataset.window, rate: r.dataset.rate, status: r.dataset.status, raw: cell('raw'),
          corrected: cell('corrected'), labels: +r.querySelector('[data-labels]').dataset.labels}; })"""
DOM_AGREEMENT = """Object.fromEntries([...document.querySelectorAll('tr[data-population]')].map(r =>
  [r.dataset.population, Object.fromEntries([...r.querySelectorAll('[data-agreement]')].map(d =>
    [d.dataset.agreement, d.dataset.value === 'none' ? null : +d.dataset.value]))]))"""


def monitor_corrected(loop: Loop) -> tuple[list[dict], dict]:
    """What the app page must show, from GET /v1/monitor/{app} of each window: the corrected rows and the agreement."""
    rows, agreement = [], {}
    for window in ("5m", "1h", "24h"):
        view = loop.client.get(f"/v1/monitor/{APP}", params={"window": window}).json()
        for rate, c in view["corrected"].items():
            rows.append({"window": window, "rate": rate, "status": c["status"],
                         "raw": c["raw"] is not None and [c["raw"], *c["raw_ci95"]] or None,
                         "corrected": c["corrected"] is not None and [c["corrected"], *c["ci95"]] or None,
                         "labels": c["estimation_labels"]})
        populations = {"all": view["judge_agreement"], **view["judge_agreement_by_population"]}
        agreement = {name: {} if a is None else {
            "labels": a["labels"], "sensitivity": a["sensitivity"] and a["sensitivity"]["value"],
            "specificity": a["specificity"] and a["specificity"]["value"], "kappa": a["kappa"]}
            for name, a in populations.items()}
    return rows, agreement


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed: apt-get install chromium")
def test_the_app_page_shows_the_corrected_rates_and_the_agreement_in_chromium_at_800_and_1400(
        loop: Loop, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Before: the app page showed the judge's own rates only (0.5 here, where the truth is 0.3)."""
    from tests.browser import Browser

    rows, agreement = monitor_corrected(loop)
    assert any(r["corrected"] is not None for r in rows) and agreement["all"]["sensitivity"] == 1.0  # to show
    assert agreement["hallucination_rate"]["specificity"] is not None   # each population's own, named in its row
    shots = tmp_path_factory.mktemp("app-corrected-shots")
    browser = Browser(tmp_path_factory.mktemp("chromium"))
    try:
        browser.open(f"{loop.url}/apps/{APP}")
        assert browser.eval("location.pathname") == "/review/login"
        browser.wait_for("document.activeElement && document.activeElement.id === 'api_key'")
        browser.type("key-loop")
        browser.press("Enter", loads=True)
        assert browser.eval("location.pathname") == f"/apps/{APP}"
        for width in (800, 1400):
            browser.resize(width)
            browser.open(f"{loop.url}/apps/{APP}")
            assert browser.eval(DOM_CORRECTED) == rows, width
            assert browser.eval(DOM_AGREEMENT) == agreement, width
            assert browser.overflow() == 0, width
            browser.screenshot(shots / f"app-corrected-{width}.png")
    finally:
        browser.close()


def test_the_app_page_says_not_measured_below_the_labels_needed(loop: Loop) -> None:
    """A window whose rate has no corrected value shows "not measured" with the reason, never a number."""
    from ragpulse.reporting.pages.app import app_page

    view = loop.client.get(f"/v1/monitor/{APP}", params={"window": "1h"}).json()
    short = {**view["corrected"]["hallucination_rate"], "corrected": None, "ci95": None, "status": "too_few_labels",
             "detail": "12 labels in the estimation sample; 30 are needed"}
    page = app_page(APP, [{**view, "corrected": {"hallucination_rate": short}, "judge_agreement": None}], "")
    assert "data-corrected=none>not measured</td>" in page and "30 are needed" in page
    assert "data-agreement-none" in page and "not measured" in page
