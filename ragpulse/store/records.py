"""Job records: the job hash (status, options, counts, spend, callback state), decoded once per read, and the
set of active jobs the janitor watches."""

from __future__ import annotations

import re
import time

import msgspec
import redis

from ragpulse.config import keys
from ragpulse.exceptions import JobNotFound
from ragpulse.model.dataset import DatasetBinding
from ragpulse.model.results import TERMINAL, CallbackState, DataWarning, JobStatus, JobView, Progress, Spend
from ragpulse.model.trace import BatchOptions
from ragpulse.store import scripts
from ragpulse.store.clock import utcnow

_JOB_ID = re.compile(r"^[0-9a-f]{32}$")


class JobRecord(msgspec.Struct, kw_only=True):
    """A job's hash, typed: read with one HGETALL and used as often as needed."""

    job_id: str
    tenant: str
    status: JobStatus
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    error: str | None = None
    queue: str = "batch"
    rq_queue: str
    attempt: int = 0
    total: int
    n_chunks: int
    chunk_size: int
    options: BatchOptions
    warnings: list[DataWarning]
    spend: Spend
    callback: CallbackState | None = None
    finalizing_since: int | None = None
    """When the current attempt's last chunk completed (epoch seconds); None until then."""
    apps: list[str] = []
    """The distinct apps its traces name, sorted; empty for jobs stored before apps were recorded."""
    dataset: DatasetBinding | None = None
    """The dataset version the batch was bound to (POST /v1/batches `dataset`), or None."""

    def view(self, progress: Progress) -> JobView:
        """The job as clients see it."""
        return JobView(job_id=self.job_id, status=self.status, queue=self.queue, progress=progress,
                       created_at=self.created_at, started_at=self.started_at, finished_at=self.finished_at,
                       error=self.error, warnings=self.warnings, spend=self.spend, callback=self.callback,
                       run=self.options.run, variant=self.options.variant, dataset=self.dataset,
                       environment=self.options.environment, delivery=self.options.delivery)


class JobRecords:
    """Job hashes and the active-job set; every key written carries a TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self._mark_running = client.register_script(scripts.MARK_RUNNING)

    def stage(self, pipe: redis.client.Pipeline, job_id: str, tenant: str, *, total: int, n_chunks: int,
              chunk_size: int, options: BatchOptions, warnings: list, queue: str, rq_queue: str,
              apps: list[str], dataset: DatasetBinding | None = None) -> None:
        """Queue the writes creating the job record onto `pipe`, and watch the job."""
        pipe.hset(keys.job(job_id), mapping={
            "tenant": tenant, "status": "queued", "created_at": utcnow(), "queue": queue, "rq_queue": rq_queue,
            "attempt": 0, "total": total, "n_chunks": n_chunks, "chunk_size": chunk_size,
            "options": msgspec.json.encode(options), "warnings": msgspec.json.encode(warnings),
            "apps": msgspec.json.encode(apps),
            **({"dataset": msgspec.json.encode(dataset)} if dataset is not None else {}),
        })
        pipe.zadd(keys.active_jobs(), {job_id: time.time()})
        for key in (keys.job(job_id), keys.active_jobs()):
            pipe.expire(key, self.ttl)

    def get(self, job_id: str, tenant: str | None = None) -> JobRecord:
        """The job's record; JobNotFound when absent, malformed as an id, or owned by another tenant."""
        if not _JOB_ID.match(job_id):
            raise JobNotFound(job_id)
        fields = {k.decode(): v.decode() for k, v in self.redis.hgetall(keys.job(job_id)).items()}
        if not fields or (tenant is not None and fields.get("tenant") != tenant):
            raise JobNotFound(job_id)
        return _record(job_id, fields)

    def find_many(self, job_ids: list[str], tenant: str) -> list[JobRecord | None]:
        """The tenant's records of these jobs, in one round trip; None for a job that has expired (or is another
        tenant's)."""
        with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hgetall(keys.job(job_id))
            raw = pipe.execute()
        found: list[JobRecord | None] = []
        for job_id, hash_ in zip(job_ids, raw):
            fields = {k.decode(): v.decode() for k, v in hash_.items()}
            found.append(_record(job_id, fields) if fields.get("tenant") == tenant else None)
        return found

    def failure(self, job_id: str) -> str | None:
        """The job's error when it has failed, else None (one cheap read)."""
        return failure_from(self.redis.hmget(keys.job(job_id), FAILURE_FIELDS))

    def mark_started(self, job_id: str) -> None:
        """The first chunk start sets started_at and moves a queued job to running."""
        self.redis.hsetnx(keys.job(job_id), "started_at", utcnow())
        self._mark_running(keys=[keys.job(job_id)])

    def finish(self, job_id: str, status: str, error: str | None = None) -> None:
        """Move the job to a terminal status (it stays watched by the janitor until its report is built)."""
        self.redis.hset(keys.job(job_id), mapping=finish_fields(status, error))

    def note_error(self, job_id: str, error: str) -> None:
        """Record on the job what failed a part of it while the rest ran on (its `error`; the first one is kept)."""
        self.redis.hsetnx(keys.job(job_id), "error", error)

    def reopen(self, pipe: redis.client.Pipeline, job_id: str) -> None:
        """Queue the writes that start a new attempt of a finished job onto `pipe`, and watch it again."""
        pipe.hincrby(keys.job(job_id), "attempt", 1)
        pipe.hset(keys.job(job_id), "status", "queued")
        pipe.hdel(keys.job(job_id), "finished_at", "error")
        pipe.zadd(keys.active_jobs(), {job_id: time.time()})

    def deactivate(self, job_id: str) -> None:
        """Stop the janitor from watching a job (its report is built)."""
        self.redis.zrem(keys.active_jobs(), job_id)

    def set_callback(self, job_id: str, status: str, error: str | None = None, attempted: bool = False) -> None:
        """Record the completion callback's state: pending, delivered or failed."""
        with self.redis.pipeline() as pipe:
            pipe.hset(keys.job(job_id), mapping={"callback_status": status, "callback_error": error or ""})
            if attempted:
                pipe.hincrby(keys.job(job_id), "callback_attempts", 1)
            pipe.execute()

    def active_ids(self) -> list[str]:
        """Ids of jobs not yet finalized; ids whose job expired are dropped from the set."""
        ids = [raw.decode() for raw in self.redis.zrange(keys.active_jobs(), 0, -1)]
        with self.redis.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.exists(keys.job(job_id))
            present = pipe.execute()
        gone = [job_id for job_id, exists in zip(ids, present) if not exists]
        if gone:
            self.redis.zrem(keys.active_jobs(), *gone)
        return [i for i in ids if i not in gone]

    def stuck_finalizing(self, job_id: str, older_than_seconds: int) -> bool:
        """True when every chunk is done but no report appeared within `older_than_seconds` (the finalizer died)."""
        record = self.get(job_id)
        return (record.status not in TERMINAL and record.finalizing_since is not None
                and time.time() - record.finalizing_since > older_than_seconds)


FAILURE_FIELDS = ("status", "error")
"""The job hash's fields that `failure_from` reads."""


def failure_from(values: list[bytes | None]) -> str | None:
    """The job's error when it has failed, else None, from its FAILURE_FIELDS."""
    status, error = values
    return (error or b"failed").decode() if status == b"failed" else None


def finish_fields(status: str, error: str | None = None) -> dict[str, str]:
    """The job hash's fields that move it to a terminal status."""
    mapping = {"status": status, "finished_at": utcnow()}
    if error:
        mapping["error"] = error
    return mapping


def _record(job_id: str, fields: dict[str, str]) -> JobRecord:
    attempt = fields.get("attempt", "0")
    finalizing = fields.get(f"finalizing:{attempt}")
    return JobRecord(
        job_id=job_id, tenant=fields["tenant"], status=fields["status"], created_at=fields["created_at"],
        started_at=fields.get("started_at"), finished_at=fields.get("finished_at"), error=fields.get("error"),
        queue=fields.get("queue", "batch"), rq_queue=fields["rq_queue"], attempt=int(attempt),
        total=int(fields["total"]), n_chunks=int(fields["n_chunks"]), chunk_size=int(fields["chunk_size"]),
        options=msgspec.json.decode(fields["options"], type=BatchOptions),
        warnings=msgspec.json.decode(fields["warnings"], type=list[DataWarning]),
        spend=_spend(fields), callback=_callback(fields),
        finalizing_since=int(finalizing) if finalizing is not None else None,
        apps=msgspec.json.decode(fields.get("apps", "[]"), type=list[str]),
        dataset=msgspec.json.decode(fields["dataset"], type=DatasetBinding) if "dataset" in fields else None,
    )


def _spend(fields: dict[str, str]) -> Spend:
    return Spend(judge_calls=int(fields.get("judge_calls", 0)), input_tokens=int(fields.get("input_tokens", 0)),
                 output_tokens=int(fields.get("output_tokens", 0)), cost_usd=round(float(fields.get("cost_usd", 0)), 6))


def _callback(fields: dict[str, str]) -> CallbackState | None:
    if "callback_status" not in fields:
        return None
    return CallbackState(status=fields["callback_status"], attempts=int(fields.get("callback_attempts", 0)),
                         last_error=fields.get("callback_error") or None)
