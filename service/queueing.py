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


class ChunkEnqueuer:
    """Enqueues `evaluate_chunk(job_id, n)` jobs; keeps one RQ Queue per name (building one costs more than the
    enqueue on the single-trace ingest path)."""

    def __init__(self, connection: redis.Redis, settings: Settings) -> None:
        self._connection = connection
        self._settings = settings
        self._queues: dict[str, Queue] = {}

    def _queue(self, name: str) -> Queue:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues[name] = Queue(name, connection=self._connection, serializer=JSONSerializer)
        return queue

    def enqueue(self, pipe: redis.client.Pipeline, rq_queue_name: str, job_id: str, chunks: Sequence[int],
                fresh_ids: bool = False) -> None:
        """Queue the writes enqueuing each chunk onto `pipe` (executed by the caller). `fresh_ids` gives requeued
        chunks new RQ job ids, so a requeue never collides with the RQ job of the attempt it replaces."""
        suffix = f"-r{uuid.uuid4().hex[:8]}" if fresh_ids else ""
        result_ttl = self._settings.result_ttl_seconds
        self._queue(rq_queue_name).enqueue_many([
            Queue.prepare_data(
                defaults.EVALUATE_CHUNK, args=(job_id, n), job_id=f"{job_id}-{n}{suffix}",
                timeout=defaults.CHUNK_TIMEOUT_SECONDS, result_ttl=result_ttl, failure_ttl=result_ttl,
                ttl=result_ttl, on_failure=Callback(defaults.CHUNK_FAILED),
            ) for n in chunks
        ], pipeline=pipe)
