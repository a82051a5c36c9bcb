"""A batch smaller than RAGPULSE_CHUNK_SIZE x the live workers is cut so that every worker gets a chunk."""

from __future__ import annotations

import time
import uuid

import pytest
import redis
from rq import Worker

from dispatch.chunks import ChunkEnqueuer
from dispatch.fanout import chunk_size_for
from dispatch.queues import queue_named
from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from tests.fake_anthropic import FakeAnthropic
from tests.support import wait_for_job


def test_a_chunk_per_live_worker_within_the_configured_size_and_the_minimum() -> None:
    assert defaults.MIN_CHUNK_SIZE == 50                     # the figures below are worked out with it
    assert chunk_size_for(100, 2, 500) == 50                 # ceil(100 / 2): both workers get 50
    assert chunk_size_for(1_000, 8, 500) == 125              # 8 chunks of 125
    assert chunk_size_for(10_000, 2, 500) == 500             # large batches keep RAGPULSE_CHUNK_SIZE
    assert chunk_size_for(100, 1, 500) == 100                # one worker: one chunk
    assert chunk_size_for(100, 0, 500) == 100                # none registered yet: as for one
    assert chunk_size_for(120, 8, 500) == 50                 # ceil(120 / 8) = 15 is below the minimum: 3 chunks
    assert chunk_size_for(100, 2, 20) == 20                  # a smaller configured size still wins


def test_the_api_counts_the_workers_on_the_batchs_queue_and_keeps_the_count_a_while(
        redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"fanout-{uuid.uuid4().hex[:8]}"
    queue = queue_named(name, redis_client)
    workers = [Worker([queue], connection=redis_client, name=f"{name}-{n}") for n in range(3)]
    enqueuer = ChunkEnqueuer(redis_client, Settings(chunk_size=500))
    try:
        assert enqueuer.chunk_size(name, 100) == 100          # no live worker
        for worker in workers[:2]:
            worker.register_birth()
        assert enqueuer.chunk_size(name, 100) == 100          # the count of a moment ago still holds...
        monkeypatch.setattr(defaults, "WORKER_COUNT_SECONDS", 0.0)
        assert enqueuer.chunk_size(name, 100) == 50           # ...until it is WORKER_COUNT_SECONDS old
        assert enqueuer.chunk_size(name, 40) >= 40            # at most MIN_CHUNK_SIZE traces: one chunk
    finally:
        for worker in workers:
            worker.register_death()


@pytest.mark.integration
def test_a_100_trace_batch_is_shared_by_two_workers(cluster_factory, redis_client: redis.Redis) -> None:
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 2)                    # RAGPULSE_CHUNK_SIZE at its default, 500
        batch = [{"trace_id": f"f{i}", "query": f"question {i}", "answer": f"Fact {i} holds.", "gold_doc_ids": ["d"],
                  "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds."}]} for i in range(100)]
        job_id = cluster.post(batch, judge="local")
        assert wait_for_job(cluster.http, job_id, timeout=120)["status"] == "finished"
        assert int(redis_client.hget(keys.job(job_id), "n_chunks")) == 2
        assert all("evaluate_chunk" in w.output() for w in cluster.workers)      # each worker took one


def test_the_chunks_a_run_follows_on_to_never_run_as_rq_jobs_of_their_own(cluster_factory,
                                                                          redis_client: redis.Redis) -> None:
    """One worker, five chunks: the first chunk's run takes the other four as it goes, and takes their RQ jobs off
    the queue, so the worker forks no work-horse only to find them held."""
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_CHUNK_SIZE="20")
        batch = [{"trace_id": f"w{i}", "query": f"question {i}", "answer": f"Fact {i} holds.",
                  "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds."}]} for i in range(100)]
        job_id = cluster.post(batch, judge="local")
        assert wait_for_job(cluster.http, job_id, timeout=120)["status"] == "finished"
        assert int(redis_client.hget(keys.job(job_id), "n_chunks")) == 5
        queue = queue_named(redis_client.hget(keys.job(job_id), "rq_queue").decode(), redis_client)
        deadline = time.monotonic() + 30
        while f"{job_id}-0" not in queue.finished_job_registry.get_job_ids():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(1.5)                                   # a queued chunk job would be done (as "held") by now
        assert queue.finished_job_registry.get_job_ids() == [f"{job_id}-0"] and queue.job_ids == []
