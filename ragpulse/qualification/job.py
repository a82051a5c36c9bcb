"""Run one qualification job end to end (the RQ function in worker/ only calls `run_job`): judge the suite items
the request chose, keep the result beside the tenant's earlier ones, and record the outcome on the job."""

from __future__ import annotations

import asyncio
import datetime

import redis

from ragpulse.config.settings import Settings
from ragpulse.exceptions import JudgeAuthError, JudgeNotConfigured
from ragpulse.qualification import suite
from ragpulse.qualification.model import QualificationJob
from ragpulse.qualification.runner import qualify
from ragpulse.qualification.store import Qualifications


def run_job(client: redis.Redis, settings: Settings, job_id: str) -> QualificationJob:
    """Run the qualification `job_id`; a judge without credentials ends it `failed` with the reason."""
    store = Qualifications(client, settings.result_ttl_seconds)
    job = store.job(job_id)
    job.status = "running"
    store.save_job(job)
    items = suite.select(job.split, job.limit)
    try:
        result = asyncio.run(qualify(job.judge, settings, items, job.split))
    except (JudgeAuthError, JudgeNotConfigured) as exc:
        return finish(store, job, error=exc.reason)
    store.keep(job.tenant, result)
    job.result = result
    return finish(store, job)


def mark_failed(client: redis.Redis, settings: Settings, job_id: str, error: str) -> None:
    """Record a run that crashed (the RQ failure callback) as failed, unless it already ended."""
    store = Qualifications(client, settings.result_ttl_seconds)
    job = store.job(job_id)
    if job.status in ("queued", "running"):
        finish(store, job, error=error)


def finish(store: Qualifications, job: QualificationJob, error: str | None = None) -> QualificationJob:
    """Mark the run ended: `failed` with `error`, else `finished`."""
    job.status, job.error = ("failed", error) if error is not None else ("finished", None)
    job.finished_at = datetime.datetime.now(datetime.UTC)
    store.save_job(job)
    return job
