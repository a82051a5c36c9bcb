"""The generation job: one RQ job per POST /v1/datasets/{name}/generate, on the batch queue."""

from __future__ import annotations

import redis
from rq import Callback, Queue

from dispatch import paths
from dispatch.queues import queue_named, rq_queue_name
from ragpulse.config import defaults
from ragpulse.config.settings import Settings


def enqueue_generation(pipe: redis.client.Pipeline, connection: redis.Redis, settings: Settings, job_id: str) -> None:
    """Queue the writes enqueuing `generate_dataset(job_id)` on the batch queue onto `pipe` (executed by the caller,
    with the writes that store the job's request)."""
    ttl = settings.result_ttl_seconds
    queue_named(rq_queue_name(settings, "batch"), connection).enqueue_many([Queue.prepare_data(
        paths.GENERATE_DATASET, args=(job_id,), job_id=f"{job_id}-generate",
        timeout=defaults.GENERATION_JOB_TIMEOUT_SECONDS, result_ttl=ttl, failure_ttl=ttl, ttl=ttl,
        on_failure=Callback(paths.GENERATION_FAILED))], pipeline=pipe)
