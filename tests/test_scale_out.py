"""Scale-out judging with several real worker processes against a fake provider that enforces its own limit."""

from __future__ import annotations

import os
import re
import signal
import time

import pytest

from tests.fake_anthropic import FakeAnthropic
from tests.support import children_of, wait_for_job

pytestmark = pytest.mark.integration


def traces(n: int, tag: str, source: str = "human") -> list[dict]:
    return [{"trace_id": f"{tag}-{i}", "query": f"{tag} question {i}", "answer": f"Fact {i} holds.",
             "source": source, "gold_doc_ids": ["d"],
             "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds. Nothing else."}]} for i in range(n)]


def test_matching_limit_means_zero_429s(cluster_factory) -> None:
    # 10 per 6 s: requests are paced 6/9 s apart, so one request reaching the provider up to ~650 ms later than the
    # one 10 behind it (a busy 2-core CI machine running the fake, the API, three workers and pytest) still cannot
    # squeeze 11 into one provider window. At 20 per 6 s that margin was 6/19 s, and a CI run once lost it.
    with FakeAnthropic(latency=0.05, rpm=10, window_seconds=6) as fake:
        cluster = cluster_factory(fake, 3, RAGPULSE_JUDGE_RPM="10", RAGPULSE_JUDGE_RATE_WINDOW_SECONDS="6",
                                  RAGPULSE_CHUNK_SIZE="10")
        job_id = cluster.post(traces(40, "match"))               # 30 provider windows of 10 consecutive requests
        job = wait_for_job(cluster.http, job_id, timeout=120)
        assert job["status"] == "finished" and job["progress"]["done"] == 40
        assert fake.rejected == 0 and len(fake.requests) == 40


def test_too_high_a_limit_recovers_from_429s_without_losing_traces(cluster_factory) -> None:
    with FakeAnthropic(latency=0.02, rpm=15, window_seconds=2) as fake:
        cluster = cluster_factory(fake, 2, RAGPULSE_JUDGE_RPM="1000", RAGPULSE_JUDGE_RATE_WINDOW_SECONDS="2",
                                  RAGPULSE_JUDGE_MAX_RETRIES="10", RAGPULSE_CHUNK_SIZE="10")
        job_id = cluster.post(traces(45, "high"))
        job = wait_for_job(cluster.http, job_id, timeout=120)
        assert fake.rejected > 0                                   # the provider did push back
        assert job["status"] == "finished" and job["progress"] == {"total": 45, "done": 45, "failed": 0,
                                                                   "skipped": 0}
        assert all(item["status"] == "ok" and item["generation"] for item in cluster.results(job_id))


def test_sigkilled_worker_loses_nothing_and_counts_nothing_twice(cluster_factory) -> None:
    with FakeAnthropic(latency=0.15) as fake:
        cluster = cluster_factory(fake, 2, RAGPULSE_CHUNK_SIZE="20", RAGPULSE_JUDGE_CONCURRENCY="2",
                                  RAGPULSE_LEASE_SECONDS="3")             # a short lease: recovery within seconds
        job_id = cluster.post(traces(120, "kill"))
        deadline = time.monotonic() + 60
        while cluster.http.get(f"/v1/jobs/{job_id}").json()["progress"]["done"] < 10:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        victim = cluster.workers[0]
        horses = children_of(victim.process.pid)
        assert horses, "the worker should be busy in a work-horse"
        for pid in [victim.process.pid, *horses]:                 # the worker and its busy work-horse, no warning
            os.kill(pid, signal.SIGKILL)
        job = wait_for_job(cluster.http, job_id, timeout=120)
        assert job["status"] == "finished", cluster.http.get(f"/v1/jobs/{job_id}/report").json()["failures"]
        items = cluster.results(job_id)
        assert sorted(i["trace_id"] for i in items) == sorted(f"kill-{i}" for i in range(120))
        assert all(i["status"] == "ok" for i in items)
        report = cluster.http.get(f"/v1/jobs/{job_id}/report").json()
        assert report["counts"]["total"] == 120 and report["generation"]["n_judged"] == 120
        survivor_logs = "".join(w.output() for w in cluster.workers[1:])
        # The dead worker's chunk was requeued (under a fresh RQ id, `-r<hex>`) by a janitor -- any worker's on this
        # Redis may notice the lapsed lease first -- and finished by the surviving worker.
        assert re.search(rf"{job_id}-\d+-r[0-9a-f]{{8}}", survivor_logs), survivor_logs[-3000:]


def test_online_traces_are_served_while_a_100k_batch_waits(cluster_factory) -> None:
    with FakeAnthropic(latency=0.01) as fake:
        # 100,000 traces in seconds is a flood by the default ingest limit (RAGPULSE_TENANT_TRACES_PER_SECOND):
        # this test is about queue priority, so it lifts the limit.
        cluster = cluster_factory(fake, 1, RAGPULSE_CHUNK_SIZE="500", RAGPULSE_TENANT_TRACES_PER_SECOND="0")
        big = []
        for n in range(10):                                       # 10 x 10,000 = 100,000 offline traces
            big.append(cluster.post(traces(10_000, f"bulk{n}"), judge="local"))
        online = cluster.post(traces(3, "prod", source="production"), environment="production")
        job = wait_for_job(cluster.http, online, timeout=60)
        assert job["status"] == "finished" and job["queue"] == "online"
        pending = [cluster.http.get(f"/v1/jobs/{j}").json() for j in big]
        assert sum(p["progress"]["done"] for p in pending) < 100_000   # the batch was still far from done
        assert any(p["status"] in {"queued", "running"} for p in pending)
