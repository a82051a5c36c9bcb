"""Judged jobs end to end: real API and RQ workers, the real anthropic SDK against a fake Messages API."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.fake_anthropic import FakeAnthropic, Fault
from tests.support import ROOT, start_api, start_worker, wait_for_job

pytestmark = pytest.mark.integration
EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(scope="module")
def judged(redis_url: str, fake: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """API + two workers whose default judge is `anthropic`, talking to the fake through RAGPULSE_JUDGE_BASE_URL."""
    tmp = tmp_path_factory.mktemp("judged")
    env = {"RAGPULSE_QUEUE": f"judged-{uuid.uuid4().hex[:8]}", "ANTHROPIC_API_KEY": "test-key",
           "RAGPULSE_JUDGE_BASE_URL": fake.url, "RAGPULSE_JUDGE_MAX_RETRIES": "1"}
    url, api = start_api(redis_url, tmp, env)
    workers = [start_worker(redis_url, tmp, env, name=f"j{n}") for n in range(2)]
    with httpx.Client(base_url=url, timeout=30) as client:
        yield client
    for proc in [api, *workers]:
        proc.stop()


def examples(n: int | None = None) -> list[dict]:
    lines = EXAMPLES.read_text().splitlines()
    return [json.loads(line) for line in lines[:n]]


def results(client: httpx.Client, job_id: str) -> list[dict]:
    return client.get(f"/v1/jobs/{job_id}/results", params={"limit": 1000}).json()["items"]


def test_anthropic_job_stores_per_claim_verdicts_with_raw_outputs(judged: httpx.Client, fake: FakeAnthropic) -> None:
    before = len(fake.requests)
    job_id = judged.post("/v1/batches", json={"traces": examples(), "options": {"judge": "anthropic"}}).json()["job_id"]
    assert wait_for_job(judged, job_id)["status"] == "finished"
    items = results(judged, job_id)
    assert len(items) == 65 and len(fake.requests) - before == 65          # exactly one call per trace
    judged_items = [i for i in items if i["claims"]]
    assert judged_items
    item = judged_items[0]
    assert item["judge"] == "anthropic" and item["claims"][0]["verdict"] in {"supported", "unsupported"}
    [judgment] = item["judgments"]
    [call] = judgment["calls"]
    assert call["raw_output"]["sentences"] and call["request_id"].startswith("req_")
    assert call["model"] == "claude-sonnet-4-6" and len(judgment["prompt_version"]) == 12
    assert call["input_tokens"] > 0 and call["output_tokens"] > 0

    report = judged.get(f"/v1/jobs/{job_id}/report").json()
    generation = report["generation"]
    assert generation["cost"]["calls_per_trace"] == 1.0 and generation["cost"]["repair_calls"] == 0
    assert generation["heuristic"] is False
    for metric in ["faithfulness", "hallucination_rate", "unanswerable_hallucination_rate", "answer_relevance"]:
        assert generation[metric]["n"] > 0 and len(generation[metric]["ci95"]) == 2
    assert report["diagnostic_matrix"]["primary_issue"] in {"retrieval", "generation", "none"}


def test_a_trace_whose_output_stays_invalid_is_kept_as_judge_error(judged: httpx.Client, fake: FakeAnthropic) -> None:
    bad = {"query": "broken judge output please", "answer": "x.", "retrieved_docs": [{"id": "a", "text": "x."}]}
    good = {"query": "fine", "answer": "Fine.", "retrieved_docs": [{"id": "a", "text": "Fine."}]}
    fake.push_for(bad["query"], Fault(tool_input={"claims": 3}), Fault(tool_input={"claims": 4}))
    job_id = judged.post("/v1/batches", json={"traces": [bad, good], "options": {"judge": "anthropic"}}).json()["job_id"]
    job = wait_for_job(judged, job_id)
    assert job["status"] == "finished_with_errors" and job["progress"]["failed"] == 1
    broken, fine = results(judged, job_id)
    assert broken["status"] == "judge_error" and "invalid after one repair" in broken["error"]
    assert broken["generation"] is None and len(broken["failed_calls"]) == 2
    assert fine["status"] == "ok" and fine["generation"]["faithfulness"] == 1.0
    # the failed trace's repair turn is a repair; the judge that failed is named with its counts, never `none`
    generation = judged.get(f"/v1/jobs/{job_id}/report").json()["generation"]
    cost = generation["cost"]
    assert (cost["calls"], cost["repair_calls"], cost["judge_errors"]) == (3, 1, 1)
    [failure] = generation["judge_failures"]
    assert {k: failure[k] for k in ("judge", "model", "traces", "failed", "repair_calls")} == {
        "judge": "anthropic", "model": "claude-sonnet-4-6", "traces": 2, "failed": 1, "repair_calls": 1}
    [(reason, count)] = failure["reasons"].items()
    assert reason == broken["error"] and count == 1
    page = judged.get(f"/v1/jobs/{job_id}/report.html").text
    assert "judge: anthropic (claude-sonnet-4-6) - 1 of 2 traces failed (1 after a repair turn): " in page


def test_rejected_credentials_fail_the_job_at_once(judged: httpx.Client, fake: FakeAnthropic) -> None:
    query = f"auth {uuid.uuid4().hex}"
    fake.push_for(query, Fault(status=401))
    traces = [{"query": query, "answer": "A.", "retrieved_docs": [{"id": "a", "text": "A."}]}]
    job_id = judged.post("/v1/batches", json={"traces": traces, "options": {"judge": "anthropic"}}).json()["job_id"]
    job = wait_for_job(judged, job_id)
    assert job["status"] == "failed" and "rejected the credentials" in job["error"]
    [item] = results(judged, job_id)
    assert item["status"] == "failed" and "401" in item["error"]


def test_repeats_judge_twice_and_report_agreement(judged: httpx.Client) -> None:
    body = {"traces": examples(10), "options": {"judge": "anthropic", "repeats": 2}}
    job_id = judged.post("/v1/batches", json=body).json()["job_id"]
    wait_for_job(judged, job_id)
    assert all(len(i["judgments"]) == 2 for i in results(judged, job_id) if i["generation"])
    report = judged.get(f"/v1/jobs/{job_id}/report").json()
    agreement = report["generation"]["repeat_agreement"]
    assert agreement["n"] == 10 and agreement["agreement_rate"]["mean"] == 1.0   # the fake is deterministic
    assert report["generation"]["cost"]["calls_per_trace"] == 2.0


def test_self_evaluation_is_warned(judged: httpx.Client) -> None:
    trace = {"query": "q", "answer": "a", "generator_model": "claude-sonnet-4-6",
             "retrieved_docs": [{"id": "d", "text": "a"}], "gold_doc_ids": ["d"]}
    body = judged.post("/v1/batches", json={"traces": [trace], "options": {"judge": "anthropic"}}).json()
    assert [w["code"] for w in body["warnings"]] == ["self_evaluation"]


def test_calibration_reports_kappa_and_warns_when_low(judged: httpx.Client) -> None:
    traces = examples(30)
    job_id = judged.post("/v1/batches", json={"traces": traces, "options": {"judge": "anthropic"}}).json()["job_id"]
    wait_for_job(judged, job_id)
    items = {i["trace_id"]: i for i in results(judged, job_id)}
    agreeing = [{"trace_id": t, "faithful": not i["generation"]["hallucinated"]} for t, i in items.items()]
    response = judged.post("/v1/calibrations", json={"job_id": job_id, "labels": agreeing})
    assert response.status_code == 201, response.text
    calibration = response.json()
    assert calibration["traces"]["accuracy"] == 1.0 and calibration["warning"] is None
    flipped = [{**label, "faithful": not label["faithful"]} for label in agreeing]
    low = judged.post("/v1/calibrations", json={"job_id": job_id, "labels": flipped}).json()
    assert low["traces"]["accuracy"] == 0.0 and low["traces"]["kappa"] < 0.6 and "unreliable" in low["warning"]
    assert judged.get(f"/v1/jobs/{job_id}/report").json()["calibration"]["traces"]["accuracy"] == 0.0
    bad = judged.post("/v1/calibrations", json={"job_id": job_id, "labels": [{"trace_id": 1, "faithful": True}]})
    assert bad.status_code == 422 and bad.json()["errors"][0]["path"] == "$.labels[0].trace_id"


def test_labels_decide_unanswerable_and_a_guess_after_a_refusal_is_counted(judged: httpx.Client) -> None:
    """The local judge through the real API and workers: n of the unanswerable rate is the labelled count."""
    doc = [{"id": "kb-warranty", "text": "The warranty lasts two years."}]
    traces = [
        {"trace_id": "readme", "query": "How long is the warranty?", "answer": "The warranty lasts two years.",
         "retrieved_docs": [{"id": "doc-faq", "text": "Shipping is free."}, *doc], "gold_doc_ids": ["kb-warranty"]},
        {"trace_id": "labelled-answerable-thin", "query": "What does the extended plan cost?", "answerable": True,
         "answer": "The warranty lasts two years.", "retrieved_docs": doc},
        {"trace_id": "refusal-de", "query": "Gibt es eine Garantieverlängerung?", "answerable": False,
         "answer": "Ich konnte dazu keine Informationen finden.", "retrieved_docs": doc},
        {"trace_id": "refusal-es", "query": "¿Hay garantía extendida?", "answerable": False,
         "answer": "No encontré esa información en la documentación.", "retrieved_docs": doc},
        {"trace_id": "refusal-then-guess", "query": "How big is the firmware download?", "answerable": False,
         "answer": "I couldn't find it, but it's usually around 1 GB.", "retrieved_docs": doc},
        {"trace_id": "supported-on-unanswerable", "query": "Is there an extended plan?", "answerable": False,
         "answer": "The warranty lasts two years.", "retrieved_docs": doc},
    ]
    job_id = judged.post("/v1/batches", json={"traces": traces, "options": {"judge": "local"}}).json()["job_id"]
    assert wait_for_job(judged, job_id)["status"] == "finished"
    by_id = {i["trace_id"]: i["generation"] for i in results(judged, job_id)}
    assert by_id["readme"]["unanswerable_hallucination"] is None and by_id["readme"]["faithfulness"] == 1.0
    assert by_id["labelled-answerable-thin"]["unanswerable"] is False
    assert by_id["refusal-de"]["abstained"] and by_id["refusal-es"]["abstained"]
    guess = by_id["refusal-then-guess"]
    assert not guess["abstained"] and guess["unanswerable_hallucination"] is True
    assert by_id["supported-on-unanswerable"]["unanswerable_hallucination"] is False
    report = judged.get(f"/v1/jobs/{job_id}/report").json()["generation"]
    assert report["unanswerable"] == {"n": 4, "labelled": 4, "judged": 0, "abstained": 2, "hallucinated": 1,
                                      "answered_supported": 1}
    assert report["unanswerable_hallucination_rate"]["mean"] == 0.25             # 1 of the 4 labelled unanswerable


def test_spend_counts_every_call_of_the_local_judge_at_no_cost(judged: httpx.Client) -> None:
    body = {"traces": examples(12), "options": {"judge": "local"}}
    job_id = judged.post("/v1/batches", json=body).json()["job_id"]
    spend = wait_for_job(judged, job_id)["spend"]
    cost = judged.get(f"/v1/jobs/{job_id}/report").json()["generation"]["cost"]
    judged_traces = sum(1 for i in results(judged, job_id) if i["judgments"])
    assert judged_traces > 0 and cost["calls"] == judged_traces
    assert spend["judge_calls"] == cost["calls"]                      # the job view and the report agree
    assert spend["cost_usd"] == 0.0 and spend["input_tokens"] == 0


def test_an_unconfigured_judge_fails_only_generation_and_keeps_retrieval(
        redis_url: str, fake: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> None:
    """`judge: anthropic` on workers without credentials: judge_error with the reason, retrieval and labels kept.

    The API has a key (without one it refuses such a batch at submit: tests/test_cli.py); its workers do not."""
    tmp = tmp_path_factory.mktemp("unconfigured")
    env = {"RAGPULSE_QUEUE": f"nokey-{uuid.uuid4().hex[:8]}", "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": "",
           "RAGPULSE_JUDGE_BASE_URL": fake.url}         # should credentials turn up anyway, nothing leaves
    url, api = start_api(redis_url, tmp, {**env, "ANTHROPIC_API_KEY": "api-only"})
    worker = start_worker(redis_url, tmp, env, name="nokey")
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            traces = examples(8)
            job_id = client.post("/v1/batches", json={"traces": traces, "options": {"judge": "anthropic"}}).json()["job_id"]
            job = wait_for_job(client, job_id)
            items = results(client, job_id)
            report = client.get(f"/v1/jobs/{job_id}/report").json()
    finally:
        api.stop()
        worker.stop()
    assert job["status"] == "finished_with_errors" and job["error"] is None
    labelled = [i for i in items if i["labels"] == "labelled"]
    assert labelled and all(i["retrieval"] is not None and "recall@5" in i["retrieval"] for i in labelled)
    answered = [i for i in items if i["judge"] == "anthropic"]
    assert answered and all(i["status"] == "judge_error" and i["generation"] is None for i in answered)
    assert all("ANTHROPIC_API_KEY" in i["error"] for i in answered)
    assert report["counts"]["labelled"] == len(labelled) and report["retrieval"]["recall@5"]["n"] == len(labelled)
    assert report["generation"]["cost"]["judge_errors"] == len(answered)


def test_calibration_labels_matching_no_judged_trace_are_422_and_keep_the_stored_one(judged: httpx.Client) -> None:
    traces = examples(6) + [{"trace_id": "no-answer", "query": "q", "retrieved_docs": [{"id": "a", "text": "A."}]}]
    job_id = judged.post("/v1/batches", json={"traces": traces, "options": {"judge": "anthropic"}}).json()["job_id"]
    wait_for_job(judged, job_id)
    items = [i for i in results(judged, job_id) if i["generation"]]
    good = [{"trace_id": i["trace_id"], "faithful": not i["generation"]["hallucinated"]} for i in items]
    assert judged.post("/v1/calibrations", json={"job_id": job_id, "labels": good}).status_code == 201
    stored = judged.get(f"/v1/jobs/{job_id}/report").json()["calibration"]
    assert stored["traces"]["accuracy"] == 1.0

    stray = [{"trace_id": "typo-1", "faithful": True}, {"trace_id": "no-answer", "faithful": False}]
    response = judged.post("/v1/calibrations", json={"job_id": job_id, "labels": stray})
    assert response.status_code == 422, response.text
    errors = response.json()["errors"]
    assert [e["path"] for e in errors] == ["$.labels[0].trace_id", "$.labels[1].trace_id"]
    assert f"typo-1 is not in job {job_id}" in errors[0]["message"]
    assert "no-answer has no judge verdict" in errors[1]["message"]
    assert judged.get(f"/v1/jobs/{job_id}/report").json()["calibration"] == stored

    partly = judged.post("/v1/calibrations", json={"job_id": job_id, "labels": good + stray[:1]})
    assert partly.status_code == 201 and partly.json()["unmatched_trace_ids"] == ["typo-1"]
