"""A service whose default judge cannot judge (RAGPULSE_JUDGE=anthropic without a key) says so everywhere a user or
an operator looks (issue 25): the API's and the worker's start-up log, GET /readyz and the landing page, while
production traces are still taken (their retrieval metrics kept) and each judged one names the missing setting.

Before, batches were refused at submit (defect 2) but the online path accepted every trace and failed its judging
silently, one trace at a time."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support import Proc, start_api, start_worker, wait_for_line

pytestmark = pytest.mark.integration

MISSING = "ANTHROPIC_API_KEY"


@dataclass
class Keyless:
    url: str
    api: Proc
    worker: Proc


@pytest.fixture(scope="module")
def keyless(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Keyless]:
    tmp = tmp_path_factory.mktemp("keyless-judge")
    env = {"RAGPULSE_QUEUE": f"nojudge-{uuid.uuid4().hex[:8]}", "RAGPULSE_JUDGE": "anthropic",
           "ANTHROPIC_API_KEY": "", "ANTHROPIC_AUTH_TOKEN": ""}
    url, api = start_api(redis_url, tmp, env)
    worker = start_worker(redis_url, tmp, env, name="nojudge")
    try:
        yield Keyless(url, api, worker)
    finally:
        for proc in (api, worker):
            proc.stop()


def test_api_and_worker_log_it_at_start_up(keyless: Keyless) -> None:
    for proc in (keyless.api, keyless.worker):
        output = wait_for_line(proc, "the service's default judge (RAGPULSE_JUDGE) is anthropic", timeout=60)
        [line] = [line for line in output.splitlines() if "default judge (RAGPULSE_JUDGE)" in line]
        assert "WARNING" in line and MISSING in line and "judge_error" in line


def test_readyz_says_the_default_judge_is_not_configured_but_stays_ready(keyless: Keyless, stack) -> None:
    answer = httpx.get(f"{keyless.url}/readyz", timeout=30)
    assert answer.status_code == 200                      # traces are still taken: not a reason to leave the pool
    judge = answer.json()["default_judge"]
    assert judge["name"] == "anthropic" and judge["configured"] is False and MISSING in judge["problem"]
    configured = httpx.get(f"{stack.url}/readyz", timeout=30).json()
    assert configured["status"] == "ready" and configured["default_judge"]["configured"] is True
    assert configured["default_judge"]["problem"] is None


def test_the_landing_page_shows_the_problem(keyless: Keyless, stack) -> None:
    page = httpx.get(f"{keyless.url}/", timeout=30).text
    problem = httpx.get(f"{keyless.url}/readyz", timeout=30).json()["default_judge"]["problem"]
    assert 'data-fact="judge">anthropic (not configured)</dd>' in page
    assert "data-judge-problem" in page and MISSING in page and "judge_error" in page
    assert problem.replace("'", "&#x27;") in page
    fine = httpx.get(f"{stack.url}/", timeout=30).text
    assert "data-judge-problem" not in fine and "(not configured)" not in fine


def test_production_traces_are_taken_and_each_names_the_setting(keyless: Keyless) -> None:
    trace_id = f"nojudge-{uuid.uuid4().hex[:8]}"
    posted = httpx.post(f"{keyless.url}/v1/traces", timeout=30, json={"traces": [{
        "trace_id": trace_id, "app": "nojudge-app", "query": "How long is the warranty?", "answer": "Two years.",
        "retrieved_docs": [{"id": "w", "text": "The warranty lasts two years."}], "gold_doc_ids": ["w"]}]})
    assert posted.status_code == 202, posted.text
    deadline = time.monotonic() + 60
    while True:
        record = httpx.get(f"{keyless.url}/v1/traces/{trace_id}", timeout=30).json()
        if record.get("status") not in (None, "pending") or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert record["status"] != "pending", record
    assert MISSING in str(record), record                 # the judged trace says what to set
    assert record["result"]["retrieval"]["recall@1"] == 1.0, record   # its retrieval metrics are kept
