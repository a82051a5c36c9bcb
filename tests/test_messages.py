"""Error messages that name the fix, not only the problem (issue 25, defect 7), over real HTTP."""

from __future__ import annotations

import httpx
import pytest

from ragpulse.model.metric_keys import did_you_mean
from ragpulse.reporting.compare import pairing_warnings
from tests.support import wait_for_job

pytestmark = pytest.mark.integration

TRACE = {"trace_id": "m-1", "query": "How long is the warranty?", "answer": "Two years.",
         "retrieved_docs": [{"id": "w", "text": "The warranty lasts two years."}], "gold_doc_ids": ["w"]}


def _job(client: httpx.Client, traces: list[dict]) -> str:
    accepted = client.post("/v1/batches", json={"traces": traces, "options": {"judge": "none", "k": [1]}})
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]
    assert wait_for_job(client, job_id)["status"] == "finished"
    return job_id


def test_an_unknown_window_lists_the_allowed_ones(client: httpx.Client) -> None:
    response = client.get("/v1/monitor/default", params={"window": "10m"})
    assert response.status_code == 400, response.text
    body = response.json()
    assert all(w in body["detail"] for w in ("5m", "1h", "24h"))
    assert body["errors"] == [{"path": "query.window", "message": "use one of 5m, 1h, 24h"}]
    assert client.get("/v1/monitor/default", params={"window": "5m"}).status_code == 200


def test_a_misspelt_metric_key_gets_the_close_one(client: httpx.Client) -> None:
    batch = {"traces": [TRACE], "options": {"k": [5], "targets": {"recal@5": 0.8}}}
    response = client.post("/v1/batches", json=batch)
    assert response.status_code == 422 and "did you mean recall@5?" in response.text, response.text
    job_id = _job(client, [TRACE])
    compared = client.get(f"/v1/jobs/{job_id}/compare", params={"baseline": job_id, "metrics": "recal@1,mrr"})
    assert compared.status_code in (400, 422) and "did you mean recall@1?" in compared.text, compared.text
    assert did_you_mean("zzzz") == "" and did_you_mean("mrr@5") == " (did you mean mrr, without a cutoff?)"


def test_an_unknown_baseline_is_named_as_the_baseline(client: httpx.Client) -> None:
    job_id = _job(client, [TRACE])
    response = client.get(f"/v1/jobs/{job_id}/compare", params={"baseline": "nope"})
    assert response.status_code == 404
    body = response.json()
    assert "the baseline, query.baseline" in body["detail"]
    assert body["errors"] == [{"path": "query.baseline", "message": "no such job: the baseline"}]


def test_two_unrelated_jobs_compare_with_a_warning(client: httpx.Client) -> None:
    other = {**TRACE, "trace_id": "m-other", "query": "When do orders ship?"}
    first, second = _job(client, [TRACE]), _job(client, [other])
    compared = client.get(f"/v1/jobs/{second}/compare", params={"baseline": first}).json()
    assert compared["matched"] == 0 and "no trace matched" in compared["warnings"][0]
    same = client.get(f"/v1/jobs/{first}/compare", params={"baseline": first}).json()
    assert same["matched"] == 1 and same["warnings"] == []
    assert pairing_warnings(0, 0, 0) == []     # two empty jobs: nothing to warn about pairing
    partial = pairing_warnings(20, 40, 25)       # before: no warning unless nothing matched
    assert len(partial) == 1 and "only 20 traces matched" in partial[0]
    assert "the 5 only in the candidate and the 20 only in the baseline" in partial[0]


@pytest.mark.parametrize("body, says", [(TRACE, "this is one trace"), ([TRACE], "this is a list of traces")])
def test_an_unwrapped_trace_is_told_to_wrap_it(client: httpx.Client, body: object, says: str) -> None:
    response = client.post("/v1/batches", json=body)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert says in problem["detail"] and '{"traces": [' in problem["detail"]
    assert problem["errors"][0]["path"] == "$"
    wrapped = client.post("/v1/batches", json={"traces": [TRACE], "dry_run": True})
    assert "wrap it" not in wrapped.text
