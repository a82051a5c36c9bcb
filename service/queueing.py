"""Enqueue chunk jobs by dotted path (the API never imports worker code), JSON-serialised, ids only."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import redis
from rq import Callback, Queue
from rq.serializers import JSONSerializer

from ragpulse import defaults
from ragpulse.schema import BatchOptions, Trace
from ragpulse.settings import Settings


def pick_queue(traces: Sequence[Trace], options: BatchOptions) -> str:
    """`online` when asked, or when every trace comes from production; else `batch`."""
    if options.queue is not None:
        return options.queue
    return "online" if all(t.source == "production" for t in traces) else "batch"


def rq_queue_name(settings: Settings, queue: str) -> str:
    """The RQ queue behind a priority label."""
    online, batch = settings.queues
    return online if queue == "online" else batch


def enqueue_chunks(pipe: redis.client.Pipeline, connection: redis.Redis, settings: Settings, rq_queue_name: str,
                   job_id: str, chunks: Sequence[int], fresh_ids: bool = False) -> None:
    """Enqueue `evaluate_chunk(job_id, n)` for each chunk onto `pipe` (executed by the caller)."""
    rq_queue = Queue(rq_queue_name, connection=connection, serializer=JSONSerializer)
    suffix = f"-r{uuid.uuid4().hex[:8]}" if fresh_ids else ""
    rq_queue.enqueue_many([
        Queue.prepare_data(
            defaults.EVALUATE_CHUNK, args=(job_id, n), job_id=f"{job_id}-{n}{suffix}",
            timeout=defaults.CHUNK_TIMEOUT_SECONDS, result_ttl=settings.result_ttl_seconds,
            failure_ttl=settings.result_ttl_seconds, ttl=settings.result_ttl_seconds,
            on_failure=Callback(defaults.CHUNK_FAILED),
        ) for n in chunks
    ], pipeline=pipe)
