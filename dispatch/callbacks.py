"""The completion-callback job: enqueued on the job's queue, retried with backoff by RQ's scheduler."""

from __future__ import annotations

import redis
from rq import Callback, Retry

from dispatch import paths
from dispatch.queues import queue_named
from ragpulse.config.settings import Settings


def enqueue_callback(connection: redis.Redis, settings: Settings, rq_queue: str, job_id: str) -> None:
    """Enqueue the completion callback delivery on the job's queue, retried with backoff by RQ's scheduler."""
    queue = queue_named(rq_queue, connection)
    intervals = list(settings.callback_retry_seconds)
    queue.enqueue_call(
        paths.DELIVER_CALLBACK, args=(job_id,), job_id=paths.callback_job_id(job_id),
        timeout=60, result_ttl=settings.result_ttl_seconds, failure_ttl=settings.result_ttl_seconds,
        retry=Retry(max=len(intervals), interval=intervals) if intervals else None,
        on_failure=Callback(paths.CALLBACK_FAILED),
    )
