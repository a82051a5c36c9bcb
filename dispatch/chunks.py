"""Chunk jobs: ChunkEnqueuer, the one definition of a chunk job and of a batch's chunk size, `requeue`, shared
by the retry endpoint and the janitor, and `withdraw`, for a chunk another chunk's run took as its next."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import redis
from rq import Callback, Queue

from dispatch import paths
from dispatch.fanout import LiveWorkers, chunk_size_for
from dispatch.queues import queue_named
from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.store import Store
from ragpulse.store.connection import RETRIED_ERRORS
from ragpulse.store.records import JobRecord

log = logging.getLogger("ragpulse.dispatch")


class ChunkEnqueuer:
    """Enqueues `evaluate_chunk(job_id, n)` jobs; keeps one RQ Queue per name (building one costs more than the
    enqueue on the single-trace ingest path)."""

    def __init__(self, connection: redis.Redis, settings: Settings) -> None:
        self._connection = connection
        self._settings = settings
        self._queues: dict[str, Queue] = {}
        self._workers = LiveWorkers(connection)

    def _queue(self, name: str) -> Queue:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues[name] = queue_named(name, self._connection)
        return queue

    def chunk_size(self, rq_queue_name: str, traces: int) -> int:
        """Traces per chunk for a batch of `traces` on this queue: RAGPULSE_CHUNK_SIZE, or fewer so that every live
        worker gets a chunk (fanout.chunk_size_for). A batch of MIN_CHUNK_SIZE traces or fewer needs no count."""
        most = self._settings.chunk_size
        if traces <= defaults.MIN_CHUNK_SIZE:
            return chunk_size_for(traces, 1, most)
        return chunk_size_for(traces, self._workers.count(self._queue(rq_queue_name)), most)

    def enqueue(self, pipe: redis.client.Pipeline, rq_queue_name: str, job_id: str, chunks: Sequence[int],
                fresh_ids: bool = False) -> None:
        """Queue the writes enqueuing each chunk onto `pipe` (executed by the caller). `fresh_ids` gives requeued
        chunks new RQ job ids, so a requeue never collides with the RQ job of the attempt it replaces."""
        suffix = paths.requeue_suffix() if fresh_ids else ""
        result_ttl = self._settings.result_ttl_seconds
        self._queue(rq_queue_name).enqueue_many([
            Queue.prepare_data(
                paths.EVALUATE_CHUNK, args=(job_id, n), job_id=paths.chunk_job_id(job_id, n, suffix),
                timeout=defaults.CHUNK_TIMEOUT_SECONDS, result_ttl=result_ttl, failure_ttl=result_ttl,
                ttl=result_ttl, on_failure=Callback(paths.CHUNK_FAILED),
            ) for n in chunks
        ], pipeline=pipe)


def requeue(store: Store, enqueuer: ChunkEnqueuer, job_id: str, chunks: Sequence[int]) -> None:
    """Enqueue `chunks` of a job again, with fresh RQ job ids, on the queue the job was first enqueued on; one
    Redis transaction."""
    with store.redis.pipeline(transaction=True) as pipe:
        enqueuer.enqueue(pipe, store.jobs.get(job_id).rq_queue, job_id, chunks, fresh_ids=True)
        pipe.execute()


def withdraw(connection: redis.Redis, record: JobRecord, chunk: int) -> None:
    """Take a chunk's first RQ job off its queue: a run took the chunk as its next one, so the job would only fork a
    work-horse to find it held. Best effort: a job left queued still finds the chunk held and does nothing, and a
    requeued chunk's job (a fresh id) is left so. The job's hash expires with the TTL it was enqueued with."""
    try:
        queue_named(record.rq_queue, connection).remove(paths.chunk_job_id(record.job_id, chunk))
    except RETRIED_ERRORS as exc:
        log.warning("job %s: chunk %d's RQ job left queued, Redis unreachable (%s)", record.job_id, chunk, exc)
