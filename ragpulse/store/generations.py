"""Generation jobs in Redis: the request the worker reads, and the record (tenant, status, outcome) clients poll.

The API writes both when it accepts a request (the request only while the tenant's queued jobs are under their caps,
keys.tenant_generations_queued), and lists the job in its dataset's index (keys.dataset_generations); the one worker
running the job takes the request (read and deleted: its corpus is not needed again) and rewrites the record as the
job starts and ends. All of them expire with jobs (settings.result_ttl_seconds), and the index keeps only the
GENERATIONS_LISTED newest. A generated draft itself is a dataset version (store.datasets), which does not expire.
"""

from __future__ import annotations

import re
import time

import msgspec
import redis

from ragpulse.config import defaults, keys
from ragpulse.exceptions import JobNotFound, TooManyQueued
from ragpulse.store import scripts
from ragpulse.model.generation import GenerateRequest, GenerationView

_JOB_ID = re.compile(r"^[0-9a-f]{32}$")


class GenerationRecord(msgspec.Struct, kw_only=True):
    """A generation job as stored: whose it is, and what clients see of it."""

    tenant: str
    view: GenerationView


_encode_record = msgspec.json.Encoder().encode
_decode_record = msgspec.json.Decoder(GenerationRecord).decode
_encode_request = msgspec.msgpack.Encoder().encode
_decode_request = msgspec.msgpack.Decoder(GenerateRequest).decode
_REQUEST_KEY = keys.generation_request("\0").split("\0")
"""The request key's prefix and suffix around the job id, for the script that sizes a tenant's queued requests."""


class Generations:
    """Generation job records and requests; every key written carries a TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds
        self._queue = client.register_script(scripts.QUEUE_GENERATION)

    def queue_request(self, tenant: str, job_id: str, request: GenerateRequest) -> None:
        """Store a job's request, counted among the tenant's queued jobs; TooManyQueued when the tenant already holds
        GENERATION_QUEUED_PER_TENANT of them, or the request would take their bytes past
        GENERATION_QUEUED_BYTES_PER_TENANT. Store it before the job is enqueued, which must then follow (or
        `forget_request`)."""
        raw = _encode_request(request)
        refused = self._queue(
            keys=[keys.tenant_generations_queued(tenant), keys.generation_request(job_id)],
            args=[job_id, raw, self.ttl, defaults.GENERATION_QUEUED_PER_TENANT,
                  defaults.GENERATION_QUEUED_BYTES_PER_TENANT, *_REQUEST_KEY])
        if refused:
            raise _too_many(refused.decode() if isinstance(refused, bytes) else str(refused), len(raw))

    def stage(self, pipe: redis.client.Pipeline, record: GenerationRecord) -> None:
        """Queue the writes creating a job's record, and listing it in its dataset's index, onto `pipe`."""
        job_id = record.view.job_id
        pipe.set(keys.generation(job_id), _encode_record(record), ex=self.ttl)
        now_us = time.time_ns() // 1000          # µs: jobs posted one after another do not tie
        index = keys.dataset_generations(record.tenant, record.view.dataset)
        pipe.zadd(index, {job_id: now_us})
        pipe.zremrangebyscore(index, "-inf", f"({now_us - self.ttl * 1_000_000}")
        pipe.zremrangebyrank(index, 0, -defaults.GENERATIONS_LISTED - 1)
        pipe.expire(index, self.ttl)

    def recent(self, tenant: str, dataset: str, limit: int) -> list[GenerationView]:
        """The dataset's newest generation jobs, at most `limit`, newest first; members whose record has expired are
        dropped from the index."""
        index = keys.dataset_generations(tenant, dataset)
        job_ids = [raw.decode() for raw in self.redis.zrevrange(index, 0, limit - 1)]
        raws = self.redis.mget([keys.generation(job_id) for job_id in job_ids]) if job_ids else []
        records = [_decode_record(raw) if raw is not None else None for raw in raws]
        gone = [job_id for job_id, record in zip(job_ids, records) if record is None]
        if gone:
            self.redis.zrem(index, *gone)
        return [r.view for r in records if r is not None and r.tenant == tenant and r.view.dataset == dataset]

    def save(self, record: GenerationRecord) -> None:
        """Rewrite a job's record (its status or outcome changed)."""
        self.redis.set(keys.generation(record.view.job_id), _encode_record(record), ex=self.ttl)

    def get(self, job_id: str, tenant: str | None = None) -> GenerationRecord:
        """A job's record; JobNotFound when absent, malformed as an id, or another tenant's."""
        raw = self.redis.get(keys.generation(job_id)) if _JOB_ID.match(job_id) else None
        record = _decode_record(raw) if raw is not None else None
        if record is None or (tenant is not None and record.tenant != tenant):
            raise JobNotFound(job_id)
        return record

    def forget_request(self, tenant: str, job_id: str) -> None:
        """Drop a job's request, and its place among the tenant's queued jobs (a job that ended, or was never
        enqueued)."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(keys.generation_request(job_id))
            pipe.hdel(keys.tenant_generations_queued(tenant), job_id)
            pipe.execute()

    def take_request(self, tenant: str, job_id: str) -> GenerateRequest:
        """A job's request, deleted as it is read (the job keeps it in memory; its corpus may be tens of MiB), which
        frees its place among the tenant's queued jobs; JobNotFound once it has expired or was taken."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.get(keys.generation_request(job_id))
            pipe.delete(keys.generation_request(job_id))
            pipe.hdel(keys.tenant_generations_queued(tenant), job_id)
            raw = pipe.execute()[0]
        if raw is None:
            raise JobNotFound(job_id)
        return _decode_request(raw)


def _too_many(refused: str, size: int) -> TooManyQueued:
    what, held = refused.split()
    if what == "JOBS":
        message = (f"the tenant has {held} generation jobs queued, the most it may have "
                   f"(GENERATION_QUEUED_PER_TENANT); post again once a worker has started one")
    else:
        message = (f"the tenant's queued generation requests hold {int(held) / 2**20:.1f} MiB; this one "
                   f"({size / 2**20:.1f} MiB) would take them past "
                   f"{defaults.GENERATION_QUEUED_BYTES_PER_TENANT / 2**20:.0f} MiB (GENERATION_QUEUED_BYTES_PER_TENANT); "
                   "post again once a worker has started one")
    return TooManyQueued("too many queued generation jobs", [{"path": "path.name", "message": message}])
