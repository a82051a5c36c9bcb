"""POST /v1/judges/qualify end to end: the real API prices and enqueues the run, a real RQ worker judges the suite,
and the result is read back and listed; `ragpulse judge qualify --server` drives the same path."""

from __future__ import annotations

import time

import httpx
import pytest

from ragpulse.ops.cli import main

pytestmark = pytest.mark.integration


def wait_for_run(client: httpx.Client, job_id: str, timeout: float = 120.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = client.get(f"/v1/judges/qualify/{job_id}").json()
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.2)
    raise AssertionError(f"qualification {job_id} did not end within {timeout} s")


def test_a_dry_run_prices_and_enqueues_nothing(client: httpx.Client) -> None:
    answer = client.post("/v1/judges/qualify", json={"judge": "heuristic", "limit": 40, "dry_run": True})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["dry_run"] is True and body.get("job_id") is None
    assert body["items"] == 40 and body["estimate"]["judge_calls"] == 40 and body["estimate"]["cost_usd"] == 0.0


def test_a_judge_that_judges_nothing_is_refused(client: httpx.Client) -> None:
    answer = client.post("/v1/judges/qualify", json={"judge": "none"})
    assert answer.status_code == 422
    assert "$.judge" in answer.text


def test_the_worker_runs_the_job_and_the_result_is_kept(client: httpx.Client) -> None:
    answer = client.post("/v1/judges/qualify", json={"judge": "heuristic", "limit": 60, "split": "held_out"})
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["job_id"]
    run = wait_for_run(client, job_id)
    assert run["status"] == "finished", run
    result = run["result"]
    assert result["judge"] == "heuristic" and result["split"] == "held_out" and result["overall"]["items"] == 60
    assert set(result["by_split"]) == {"held_out"}
    assert result["verdict"] == "not_qualified" and result["reasons"]   # a heuristic does not qualify
    listed = client.get("/v1/judges/qualifications").json()["items"]
    assert any(item["finished_at"] == result["finished_at"] for item in listed)
    assert client.get(f"/v1/judges/qualify/{'0' * 32}").status_code == 404


def test_the_cli_runs_it_on_the_service(stack, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    assert main(["judge", "qualify", "--judge", "heuristic", "--limit", "30", "--server", stack.url]) == 1
    out = capsys.readouterr().out
    assert "JUDGE QUALIFICATION: heuristic" in out and "VERDICT: not qualified" in out


def test_the_report_and_the_app_page_show_the_qualification(client: httpx.Client, redis_url: str) -> None:
    import uuid

    import redis

    from ragpulse.qualification.notes import qualification_note
    from ragpulse.qualification.store import Qualifications

    fresh = qualification_note(Qualifications(redis.Redis.from_url(redis_url), 60), f"t-{uuid.uuid4().hex[:8]}",
                               "anthropic", "claude-sonnet-4-6", "v1")
    assert fresh.verdict == "not_run" and fresh.summary.startswith("not qualified")
    run = wait_for_run(client, client.post("/v1/judges/qualify", json={"judge": "heuristic", "limit": 40}).json()[
        "job_id"])
    assert run["status"] == "finished", run
    app = f"qualified-{uuid.uuid4().hex[:8]}"
    trace = {"app": app, "query": "How long is the warranty?", "answer": "Two years.",
             "retrieved_docs": [{"id": "w", "text": "The warranty lasts two years."}], "gold_doc_ids": ["w"]}
    job_id = client.post("/v1/batches", json={"traces": [trace], "options": {"judge": "heuristic"}}).json()["job_id"]
    deadline = time.monotonic() + 60
    while (report := client.get(f"/v1/jobs/{job_id}/report")).status_code != 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    note = report.json()["qualification"]
    assert note["judge"] == "heuristic" and note["verdict"] == "not_qualified"
    assert note["summary"].startswith("not qualified on the shipped suite: kappa ") and note["kappa"] is not None
    assert "data-qualification=not_qualified" in client.get(f"/v1/jobs/{job_id}/report.html").text
    monitor = client.get(f"/v1/monitor/{app}", params={"window": "1h"}).json()
    assert monitor["qualification"]["verdict"] == "not_qualified"
    assert "data-qualification=not_qualified" in client.get(f"/apps/{app}").text
