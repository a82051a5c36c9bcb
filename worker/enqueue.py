"""Enqueue chunk jobs: used by the janitor and the retry path inside workers."""

from __future__ import annotations

import uuid

from rq import Callback, Queue, Retry
from rq.queue import EnqueueData
from rq.serializers import JSONSerializer

from ragpulse import defaults
from ragpulse.settings import Settings


def chunk_job(job_id: str, chunk: int, settings: Settings, suffix: str = "") -> EnqueueData:
    """RQ job data for `evaluate_chunk(job_id, chunk)`: JSON-serialised ids only, with our failure callback."""
    return Queue.prepare_data(
        defaults.EVALUATE_CHUNK, args=(job_id, chunk), job_id=f"{job_id}-{chunk}{suffix}",
        timeout=defaults.CHUNK_TIMEOUT_SECONDS, result_ttl=settings.result_ttl_seconds,
        failure_ttl=settings.result_ttl_seconds, ttl=settings.result_ttl_seconds,
        on_failure=Callback(defaults.CHUNK_FAILED),
    )


def requeue(queue: Queue, job_id: str, chunks: list[int], settings: Settings) -> None:
    """Enqueue chunks again under fresh RQ job ids (the earlier ids may still exist in RQ's registries)."""
    suffix = f"-r{uuid.uuid4().hex[:8]}"
    queue.enqueue_many([chunk_job(job_id, n, settings, suffix) for n in chunks])


def queue_named(name: str, connection) -> Queue:  # noqa: ANN001 - a redis.Redis
    """An RQ queue that serialises job arguments as JSON, never pickle."""
    return Queue(name, connection=connection, serializer=JSONSerializer)


def enqueue_callback(connection, settings: Settings, rq_queue: str, job_id: str) -> None:  # noqa: ANN001
    """Enqueue the completion callback delivery on the job's queue, retried with backoff by RQ's scheduler."""
    queue = queue_named(rq_queue, connection)
    intervals = list(settings.callback_retry_seconds)
    queue.enqueue_call(
        defaults.DELIVER_CALLBACK, args=(job_id,), job_id=f"{job_id}-callback-{uuid.uuid4().hex[:6]}",
        timeout=60, result_ttl=settings.result_ttl_seconds, failure_ttl=settings.result_ttl_seconds,
        retry=Retry(max=len(intervals), interval=intervals) if intervals else None,
        on_failure=Callback(defaults.CALLBACK_FAILED),
    )
