"""The judge qualification's RQ job: one per POST /v1/judges/qualify, on the batch queue."""

from __future__ import annotations

import redis
from rq import Callback, Queue

from dispatch import paths
from dispatch.queues import queue_named, rq_queue_name
from ragpulse.config.settings import Settings

QUALIFICATION_TIMEOUT_SECONDS = 6 * 3600
"""How long a run may take: about 400 judge calls, which a rate-limited LLM judge can spread over hours."""


def enqueue_qualification(pipe: redis.client.Pipeline, connection: redis.Redis, settings: Settings,
                          job_id: str) -> None:
    """Queue the writes enqueuing `qualify_judge(job_id)` on the batch queue onto `pipe` (executed by the caller,
    with the write that stores the run's record)."""
    ttl = settings.result_ttl_seconds
    queue_named(rq_queue_name(settings, "batch"), connection).enqueue_many([Queue.prepare_data(
        paths.QUALIFY_JUDGE, args=(job_id,), job_id=f"{job_id}-qualify", timeout=QUALIFICATION_TIMEOUT_SECONDS,
        result_ttl=ttl, failure_ttl=ttl, ttl=ttl, on_failure=Callback(paths.QUALIFICATION_FAILED))], pipeline=pipe)
