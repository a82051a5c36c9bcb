"""Qualification runs and results in Redis, per tenant like every other record.

A run's job record expires with jobs (settings.result_ttl_seconds). Results are kept per (judge, model, prompt
version): the RUNS_KEPT newest, for RESULT_TTL_SECONDS after the newest, so the latest qualification of a judge
configuration stays visible long after its job record is gone.
"""

from __future__ import annotations

import re
import time

import msgspec
import redis

from ragpulse.config import keys
from ragpulse.exceptions import JobNotFound
from ragpulse.qualification.model import Qualification, QualificationJob

RUNS_KEPT = 5
"""Results kept per judge, model and prompt version: enough to see a run-to-run spread, small enough to list."""
RESULT_TTL_SECONDS = 400 * 86_400
"""How long results outlive their newest run: a judge configuration kept unchanged for a year stays qualified."""
_JOB_ID = re.compile(r"^[0-9a-f]{32}$")

_encode = msgspec.json.Encoder().encode
_decode_job = msgspec.json.Decoder(QualificationJob).decode
_decode_result = msgspec.json.Decoder(Qualification).decode


class Qualifications:
    """Qualification job records and kept results; every key written carries a TTL."""

    def __init__(self, client: redis.Redis, job_ttl_seconds: int) -> None:
        self.redis = client
        self.job_ttl = job_ttl_seconds

    def save_job(self, job: QualificationJob, pipe: redis.client.Pipeline | None = None) -> None:
        """Write a run's record (onto `pipe` when given)."""
        (pipe if pipe is not None else self.redis).set(keys.qualification_job(job.job_id), _encode(job),
                                                       ex=self.job_ttl)

    def job(self, job_id: str, tenant: str | None = None) -> QualificationJob:
        """A run's record; JobNotFound when absent, malformed as an id, or another tenant's."""
        raw = self.redis.get(keys.qualification_job(job_id)) if _JOB_ID.match(job_id) else None
        job = _decode_job(raw) if raw is not None else None
        if job is None or (tenant is not None and job.tenant != tenant):
            raise JobNotFound(job_id)
        return job

    def keep(self, tenant: str, result: Qualification) -> None:
        """Keep `result` as the newest of its judge, model and prompt version."""
        runs = keys.qualification_runs(tenant, result.judge, result.model, result.prompt_version)
        index = keys.qualification_index(tenant)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.lpush(runs, _encode(result))
            pipe.ltrim(runs, 0, RUNS_KEPT - 1)
            pipe.expire(runs, RESULT_TTL_SECONDS)
            pipe.hset(index, runs, int(time.time() * 1000))
            pipe.expire(index, RESULT_TTL_SECONDS)
            pipe.execute()

    def latest(self, tenant: str) -> list[Qualification]:
        """The newest result of each judge, model and prompt version of the tenant, newest first; configurations
        whose results expired are dropped from the index."""
        index = keys.qualification_index(tenant)
        members = sorted(((int(v), k.decode()) for k, v in self.redis.hgetall(index).items()), reverse=True)
        found, gone = [], []
        for _, runs in members:
            raw = self.redis.lindex(runs, 0)
            if raw is None:
                gone.append(runs)
            else:
                found.append(_decode_result(raw))
        if gone:
            self.redis.hdel(index, *gone)
        return found

    def history(self, tenant: str, judge: str, model: str, prompt_version: str) -> list[Qualification]:
        """The kept results of one configuration, newest first."""
        raws = self.redis.lrange(keys.qualification_runs(tenant, judge, model, prompt_version), 0, -1)
        return [_decode_result(raw) for raw in raws]
