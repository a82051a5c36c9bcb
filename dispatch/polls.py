"""Polls of provider batches (batch delivery): due polls handed to the queue, one poller per chunk at a time.

No worker waits on a provider batch. A chunk waiting on one is a member of a sorted set scored by when it is next
due a poll; each worker's janitor takes the due ones, and for each whose poll lease it wins (Redis SET NX PX) enqueues
one short poll job. A poller that dies frees the lease when it lapses, and the chunk, still due, is handed out again.
"""

from __future__ import annotations

import uuid

from rq import Queue

from dispatch import paths
from dispatch.chunks import ChunkEnqueuer
from dispatch.queues import queue_named
from ragpulse.config.settings import Settings
from ragpulse.exceptions import JobNotFound
from ragpulse.store import Store
from ragpulse.store.provider_batches import ProviderState

DUE_PER_SWEEP = 100
"""Most polls one janitor hands out per look."""
POLL_TIMEOUT_SECONDS = 300
"""Longest one poll may run before RQ stops it."""
FAILED_POLL_TTL_SECONDS = 3600
"""How long RQ keeps a failed poll job (a successful one is not kept at all)."""


def dispatch_due_polls(store: Store, settings: Settings) -> int:
    """Enqueue a poll job for each chunk due one whose lease this caller wins; how many were enqueued."""
    enqueued = 0
    for job_id, chunk in store.provider.due(DUE_PER_SWEEP):
        token = uuid.uuid4().hex
        if not store.provider.lease(job_id, chunk, token, settings.lease_seconds):
            continue
        try:
            rq_queue = store.jobs.get(job_id).rq_queue
        except JobNotFound:
            store.provider.forget(job_id, chunk)
            store.provider.release(job_id, chunk, token)
            continue
        with store.redis.pipeline(transaction=True) as pipe:
            store.provider.queue_due(pipe, job_id, chunk, settings.lease_seconds)  # again only once the lease lapses
            queue_named(rq_queue, store.redis).enqueue_many([Queue.prepare_data(
                paths.POLL_PROVIDER_BATCH, args=(job_id, chunk, token), job_id=paths.poll_job_id(job_id, chunk),
                timeout=POLL_TIMEOUT_SECONDS, result_ttl=0, failure_ttl=FAILED_POLL_TTL_SECONDS,
                ttl=settings.lease_seconds)], pipeline=pipe)
            pipe.execute()
        enqueued += 1
    return enqueued


def queue_chunk_on_results(store: Store, enqueuer: ChunkEnqueuer, job_id: str, chunk: int,
                           state: ProviderState) -> None:
    """A chunk whose provider batches have ended: saved so, and enqueued to run on their results, in one
    transaction (a poller killed in between leaves the chunk due a poll, never stranded)."""
    with store.redis.pipeline(transaction=True) as pipe:
        store.provider.queue_ended(pipe, job_id, chunk, state)
        enqueuer.enqueue(pipe, store.jobs.get(job_id).rq_queue, job_id, [chunk], fresh_ids=True)
        pipe.execute()
