"""Batch delivery through OpenAI's Batch API (issue 27), end to end: real API, RQ workers and Redis, the real openai
SDK against a loopback fake of chat completions, files and batches. The same machinery as Anthropic's
(tests/test_batch_delivery.py covers it in depth); this covers what differs: the JSONL upload, the output and error
files, an expired batch, cancel."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_openai_batches import FakeOpenAIBatches
from tests.support import Cluster, wait_for_job
from tests.test_batch_delivery import comparable, traces, wait_until, waiting_on_provider

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIBatches]:
    with FakeOpenAIBatches() as server:
        yield server


@pytest.fixture(scope="module")
def cluster(redis_url: str, fake: FakeOpenAIBatches, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(redis_url, tmp_path_factory.mktemp("batch-openai"), fake, workers=2,  # type: ignore[arg-type]
                RAGPULSE_OPENAI_BASE_URL=fake.base_url, RAGPULSE_OPENAI_MODEL=fake.model,
                RAGPULSE_OPENAI_BATCH="1", RAGPULSE_CHUNK_SIZE="100", RAGPULSE_BATCH_POLL_MIN_SECONDS="0.5",
                RAGPULSE_BATCH_POLL_MAX_SECONDS="1", RAGPULSE_JUDGE_MAX_RETRIES="1")
    yield c
    c.stop()


def test_an_openai_batch_job_gives_the_interactive_results_and_retries_what_expired(
        cluster: Cluster, fake: FakeOpenAIBatches) -> None:
    interactive = cluster.post(traces(60, "inter"), judge="openai")
    assert wait_for_job(cluster.http, interactive, timeout=120)["status"] == "finished"
    batch = traces(60, "batch")
    expired = next(t for t in batch if t.get("answer"))
    fake.expire.add(expired["query"])
    calls_before, batched_before = fake.interactive, fake.batched_requests()
    job_id = cluster.post(batch, judge="openai", delivery="batch")
    waiting_on_provider(cluster, job_id, batches=2)                 # 60 traces, 2 workers: 2 chunks of 30
    judged = sum(1 for t in batch if t.get("answer"))
    assert fake.batched_requests() - batched_before == judged and fake.interactive == calls_before
    fake.release()
    job = wait_for_job(cluster.http, job_id, timeout=120)
    assert job["status"] == "finished"
    assert job["provider"]["counts"] == {"processing": 0, "succeeded": judged - 1, "errored": 0, "expired": 1,
                                         "canceled": 0}
    assert fake.interactive - calls_before == 1                     # the expired request, once, interactively
    batch_items, inter_items = cluster.results(job_id), cluster.results(interactive)
    assert [comparable(i) for i in batch_items] == [comparable(i) for i in inter_items]
    deliveries = {i["trace_id"]: [c["delivery"] for j in i["judgments"] for c in j["calls"]] for i in batch_items}
    assert deliveries.pop(expired["trace_id"]) == ["interactive"]
    assert all(d == ["batch"] for d in deliveries.values() if d)


def test_cancel_cancels_the_openai_batch(cluster: Cluster, fake: FakeOpenAIBatches) -> None:
    job_id = cluster.post(traces(8, "cancel"), judge="openai", delivery="batch")
    [batch_id] = waiting_on_provider(cluster, job_id, batches=1)["provider"]["batch_ids"]
    assert cluster.http.post(f"/v1/jobs/{job_id}/cancel").status_code == 202
    job = wait_until(lambda: (j := cluster.http.get(f"/v1/jobs/{job_id}").json())["finished_at"]
                     and not j["provider"]["waiting"] and j, "the cancelled job ended")
    assert fake.batches[batch_id]["status"] == "cancelled"
    assert job["provider"]["counts"]["canceled"] == len(fake.batches[batch_id]["requests"])
