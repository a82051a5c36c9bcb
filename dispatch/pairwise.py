"""The pairwise A/B run's RQ job: enqueued by the compare endpoint on the candidate job's queue."""

from __future__ import annotations

import redis
from rq import Callback

from dispatch import paths
from dispatch.queues import queue_named
from ragpulse.config import defaults
from ragpulse.config.settings import Settings


def enqueue_pairwise(connection: redis.Redis, settings: Settings, rq_queue: str, run_id: str) -> None:
    """Enqueue `judge_pairwise(run_id)`; a crash of the run marks it failed (PAIRWISE_FAILED)."""
    ttl = settings.pairwise_ttl_seconds
    queue_named(rq_queue, connection).enqueue_call(
        paths.JUDGE_PAIRWISE, args=(run_id,), job_id=paths.pairwise_job_id(run_id),
        timeout=defaults.PAIRWISE_TIMEOUT_SECONDS, result_ttl=ttl, failure_ttl=ttl, ttl=ttl,
        on_failure=Callback(paths.PAIRWISE_FAILED),
    )
