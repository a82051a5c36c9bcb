"""A submission cut off between two parts resumes with the parts not sent yet (real Redis; the provider's batch API
replaced by a recorder at the kinds.batch_api seam, since the point is what ragpulse sends, not how)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence

import pytest
import redis

from ragpulse.config import keys
from ragpulse.config.settings import Settings
from ragpulse.evaluation import provider_batch
from ragpulse.evaluation.chunk import open_chunk
from ragpulse.judges import kinds
from ragpulse.judges.batches import BatchRequest
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.store import Store

pytestmark = pytest.mark.integration


class Cut(Exception):
    """The worker dies here."""


class Recorder:
    """A BatchApi that keeps what it was sent, and dies before the create numbered `die_at` (counting from 0)."""

    max_requests, max_bytes = 3, 10**9                                # 7 requests: parts of 3, 3 and 1

    def __init__(self, sent: list[list[str]], die_at: int | None = None) -> None:
        self.sent, self.die_at = sent, die_at

    async def create(self, requests: Sequence[BatchRequest], key: str) -> str:
        if self.die_at is not None and len(self.sent) == self.die_at:
            raise Cut
        assert all(r.custom_id.endswith(f"-{key}") for r in requests)
        self.sent.append([r.custom_id.rpartition("-")[0] for r in requests])
        return f"msgbatch_{len(self.sent)}"

    async def find(self, lookup: object) -> None:
        return None                                                   # it died before the provider had the batch

    async def aclose(self) -> None:
        pass


def test_a_cut_submission_resumes_with_the_parts_not_sent(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings.from_env({"REDIS_URL": redis_url, "ANTHROPIC_API_KEY": "k",
                                  "RAGPULSE_JUDGE_BASE_URL": "http://127.0.0.1:9"})
    store = Store(redis.Redis.from_url(redis_url), 600)
    job_id = uuid.uuid4().hex
    traces = [Trace(query=f"q{i}", trace_id=f"r{i}", answer="It is so.", retrieved_docs=[]) for i in range(7)]
    options = BatchOptions(judge="anthropic", delivery="batch", queue="batch", sample="all")
    with store.redis.pipeline(transaction=True) as pipe:
        store.stage_job(pipe, job_id, "default", traces, options, [], 10, "batch", f"resume-{job_id}")
        pipe.execute()
    sent: list[list[str]] = []

    monkeypatch.setattr(kinds, "batch_api", lambda name, s: Recorder(sent, die_at=1))
    with pytest.raises(Cut):
        asyncio.run(provider_batch.run_batched(store, settings, open_chunk(store, settings, job_id, 0)))
    state = store.provider.get(job_id, 0)
    assert state.status == "submitting" and state.ids == ["msgbatch_1"] and state.planned == 7

    monkeypatch.setattr(kinds, "batch_api", lambda name, s: Recorder(sent))
    assert asyncio.run(provider_batch.run_batched(store, settings, open_chunk(store, settings, job_id, 0)))
    state = store.provider.get(job_id, 0)
    assert state.status == "waiting" and state.ids == ["msgbatch_1", "msgbatch_2", "msgbatch_3"]
    assert sent == [["t0-0", "t1-0", "t2-0"], ["t3-0", "t4-0", "t5-0"], ["t6-0"]]   # each request sent once
    assert state.counts == {"processing": 7}
    assert store.redis.hget(keys.job_chunk_states(job_id), 0) == b"waiting"      # out of the janitor's requeue
