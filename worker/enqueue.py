"""RQ queues as the worker sees them, and the completion-callback job.

Chunk jobs are enqueued through service.queueing.ChunkEnqueuer, the one definition of a chunk job, which the API
uses too (the API never imports worker code; the worker may use that small RQ helper).
"""

from __future__ import annotations

import uuid

from rq import Callback, Queue, Retry
from rq.serializers import JSONSerializer

from ragpulse import defaults
from ragpulse.settings import Settings


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
