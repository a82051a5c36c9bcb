"""The janitor: requeue chunks whose worker died, finalize jobs whose finalizer died, hand out the polls of provider
batches that are due (dispatch.polls). Runs in every worker."""

from __future__ import annotations

import logging
import threading
import time

import redis

from dispatch.chunks import ChunkEnqueuer, requeue
from dispatch.polls import dispatch_due_polls
from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.store import Store
from ragpulse.store.connection import worker_client
from worker.jobs import finalize

log = logging.getLogger("ragpulse.janitor")


def sweep(store: Store, settings: Settings, enqueuer: ChunkEnqueuer) -> int:
    """One pass over active jobs; returns how many chunks were requeued."""
    requeued = 0
    for job_id in store.jobs.active_ids():
        chunks = store.chunks.claim_stale(job_id)
        if chunks:
            requeue(store, enqueuer, job_id, chunks)
            log.warning("job %s: requeued chunks %s whose worker stopped renewing its lease", job_id, chunks)
            requeued += len(chunks)
        elif store.jobs.stuck_finalizing(job_id, settings.lease_seconds):
            log.warning("job %s: finalizing again; the previous finalizer stopped", job_id)
            finalize(store, job_id)
    return requeued


def start_janitor(settings: Settings, stop: threading.Event) -> threading.Thread:
    """A daemon thread sweeping every JANITOR_INTERVAL_SECONDS until `stop` is set."""
    client = worker_client(settings.redis_url, socket_timeout=defaults.REDIS_SOCKET_TIMEOUT,
                           outage_seconds=settings.worker_redis_outage_seconds)
    store = Store(client, settings.result_ttl_seconds)
    enqueuer = ChunkEnqueuer(client, settings)

    def loop() -> None:
        swept = time.monotonic()
        while not stop.wait(defaults.PROVIDER_POLL_CHECK_SECONDS):
            try:
                dispatch_due_polls(store, settings)
                if time.monotonic() - swept >= defaults.JANITOR_INTERVAL_SECONDS:
                    swept = time.monotonic()
                    sweep(store, settings, enqueuer)
            except redis.RedisError as exc:
                log.warning("janitor sweep skipped: %s", exc)

    thread = threading.Thread(target=loop, name="ragpulse-janitor", daemon=True)
    thread.start()
    return thread
