"""Judge spend under a SIGKILLed worker (issue 23, defect 11): every call the provider received is counted, on the
batch and the online path, because each call is reserved in Redis before it is sent.

Real Redis, real API and worker processes, the loopback fake Anthropic answering slowly, so a worker always dies
with calls in flight. Before reservations, those calls (and the calls counted in memory since the last write or
acknowledgement) were never counted, though the provider received them and the traces were judged again."""

from __future__ import annotations

import os
import signal
import time
import uuid

import pytest
import redis

from ragpulse.config import keys
from ragpulse.store import Store
from ragpulse.store.clock import utcday
from tests.fake_anthropic import FakeAnthropic
from tests.support import children_of, wait_for_job

pytestmark = pytest.mark.integration
TRACES = 400
"""1% of the calls is 4: a killed batch worker over-counts the calls it reserved ahead (half its concurrency of 4) and
those it had reserved and not sent yet (a few milliseconds' worth; an online worker reserves nothing ahead)."""
LATENCY = 0.5
ONLINE_LATENCY = 0.3
KILL_AFTER_CALLS = 40


def traces(n: int, tag: str, source: str = "human") -> list[dict]:
    return [{"trace_id": f"{tag}-{i}", "app": "spend", "query": f"{tag} question {i}?", "answer": f"Fact {i} holds.",
             "source": source, "gold_doc_ids": ["d"],
             "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds. Nothing else."}]} for i in range(n)]


def wait_until(predicate, timeout: float = 90.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s"
        time.sleep(0.05)


def kill(worker) -> None:
    """SIGKILL a worker and its work-horse, no warning; they must be busy."""
    pids = [worker.process.pid, *children_of(worker.process.pid)]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    worker.process.wait()


def made_input_tokens(fake: FakeAnthropic) -> int:
    """Input tokens of every request the fake received, as it bills them (its prompt cache is off here)."""
    with fake.lock:
        return sum(fake._input_usage(entry["body"])["input_tokens"] for entry in fake.requests)


def assert_counted(made: int, calls: int, input_tokens: int, made_tokens: int) -> None:
    """Calls: never fewer than made, at most 1% more (reservations of calls never sent). Input tokens: the killed
    calls' estimates stand for their actual usage, so within 1% either way."""
    assert made <= calls <= made * 1.01, f"{calls} calls recorded, {made} made"
    assert abs(input_tokens - made_tokens) <= 0.01 * made_tokens, (input_tokens, made_tokens)


def test_a_sigkilled_batch_worker_leaves_no_judge_call_uncounted(cluster_factory, redis_client: redis.Redis) -> None:
    with FakeAnthropic(latency=LATENCY, cache_min_tokens=10**9) as fake:
        cluster = cluster_factory(fake, 2, RAGPULSE_CHUNK_SIZE="50", RAGPULSE_JUDGE_CONCURRENCY="4",
                                  RAGPULSE_LEASE_SECONDS="3")
        job_id = cluster.post(traces(TRACES, f"bk{uuid.uuid4().hex[:6]}"))
        wait_until(lambda: len(fake.requests) >= KILL_AFTER_CALLS, what="judging under way")
        kill(cluster.workers[0])
        job = wait_for_job(cluster.http, job_id, timeout=180)
        assert job["status"] == "finished" and job["progress"]["done"] == TRACES, job
        made, made_tokens = len(fake.requests), made_input_tokens(fake)
    assert made > TRACES, "the killed worker's calls in flight were made, and their traces judged again"
    spend = Store(redis_client, 600).jobs.get(job_id).spend
    assert_counted(made, spend.judge_calls, spend.input_tokens, made_tokens)
    assert spend.cost_usd > 0


def test_a_sigkilled_online_worker_leaves_no_judge_call_uncounted(cluster_factory,
                                                                  redis_client: redis.Redis) -> None:
    tenant = f"sk{uuid.uuid4().hex[:8]}"
    with FakeAnthropic(latency=ONLINE_LATENCY, cache_min_tokens=10**9) as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_APPS="spend", RAGPULSE_JUDGE="anthropic",
                                  RAGPULSE_API_KEYS=f"{tenant}:key-{tenant}", RAGPULSE_ONLINE_CLAIM_IDLE_SECONDS="2",
                                  RAGPULSE_JUDGE_CONCURRENCY="4")
        headers = {"Authorization": f"Bearer key-{tenant}"}
        for n in range(TRACES // 10):
            response = cluster.http.post("/v1/traces", json={"traces": traces(10, f"on{n}", "production")},
                                         headers=headers)
            assert response.status_code == 202 and len(response.json()["sampled_trace_ids"]) == 10, response.text
        wait_until(lambda: len(fake.requests) >= KILL_AFTER_CALLS, what="judging under way")
        kill(cluster.workers[0])
        cluster.workers.append(cluster.add_worker())
        stream = keys.online_stream(f"{cluster.env['RAGPULSE_QUEUE']}-online")
        wait_until(lambda: redis_client.xlen(stream) == 0, timeout=180, what="every post processed")
        made, made_tokens = len(fake.requests), made_input_tokens(fake)
    assert made > TRACES, "the killed worker's calls in flight were made, and their traces judged again"
    spend = {k.decode(): float(v) for k, v in redis_client.hgetall(keys.tenant_spend(tenant, utcday())).items()}
    assert_counted(made, int(spend["judge_calls"]), int(spend["input_tokens"]), made_tokens)
