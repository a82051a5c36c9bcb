"""Cancel and retry of an interactive job against a real API and Redis: a retry is refused (409 naming the job)
while a worker still holds one of the cancelled job's chunks, and accepted once it has let go, so a retried job is
never ended by the old run's finalize."""

from __future__ import annotations

import uuid

import httpx
import pytest

from ragpulse.config import keys
from ragpulse.store.chunks import ChunkLeases

pytestmark = pytest.mark.integration


def test_a_cancelled_job_is_retried_only_once_its_chunks_have_stopped(api_factory, redis_client) -> None:
    url = api_factory({"RAGPULSE_QUEUE": f"idle-{uuid.uuid4().hex[:8]}"})      # no worker: the test plays it
    with httpx.Client(base_url=url, timeout=30) as http:
        job_id = http.post("/v1/batches", json={"traces": [{"query": "q", "answer": "A."}],
                                                "options": {"judge": "none"}}).json()["job_id"]
        leases = ChunkLeases(redis_client, 3600)
        leases.start(job_id, 0, 60)                                   # a worker holds chunk 0
        cancelled = http.post(f"/v1/jobs/{job_id}/cancel")
        assert cancelled.status_code == 202 and cancelled.json()["status"] == "failed"
        early = http.post(f"/v1/jobs/{job_id}/retry")
        assert early.status_code == 409, early.text
        assert early.json()["errors"] == [{"path": "path.job_id", "message": "chunks still finishing"}]
        assert "chunk(s) 0" in early.json()["detail"]
        redis_client.delete(keys.job_lease(job_id, 0))                # the worker let go (or died: lease lapsed)
        retried = http.post(f"/v1/jobs/{job_id}/retry")
        assert retried.status_code == 202, retried.text
