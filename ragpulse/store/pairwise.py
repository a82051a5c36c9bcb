"""Pairwise A/B runs: one hash per run (its two jobs, judge, status, progress and result) and the pointer that finds
the run of two jobs by a judge again, so a second ask neither enqueues nor pays twice. Every key expires."""

from __future__ import annotations

import uuid

import msgspec
import redis

from ragpulse.config import defaults, keys
from ragpulse.model.pairwise import PairwiseProgress, PairwiseStatus
from ragpulse.store.clock import utcnow


class PairwiseRecord(msgspec.Struct, kw_only=True):
    """A run's hash, typed."""

    run_id: str
    tenant: str
    candidate: str
    baseline: str
    judge: str
    model: str
    prompt_version: str
    status: PairwiseStatus
    created_at: str
    rq_queue: str
    total: int = 0
    done: int = 0
    failed: int = 0
    error: str | None = None

    @property
    def progress(self) -> PairwiseProgress:
        return PairwiseProgress(total=self.total, done=self.done, failed=self.failed)


class PairwiseRuns:
    """Pairwise run hashes and their finders."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds

    def find_or_create(self, *, tenant: str, candidate: str, baseline: str, judge: str, model: str, version: str,
                       rq_queue: str) -> tuple[PairwiseRecord, bool]:
        """The run of these jobs by this judge, model and prompt version, and whether it was created now (then the
        caller enqueues it). Two asks at once create one run: the finder is set only if absent, and the loser's
        hash is deleted."""
        finder = keys.pairwise_find(tenant, candidate, baseline, judge, version, model)
        for _ in range(3):
            found = self.redis.get(finder)
            if found is not None:
                record = self.get(found.decode())
                if record is not None:
                    return record, False
                self.redis.delete(finder)   # its run expired first (written a moment before it)
            record = PairwiseRecord(run_id=uuid.uuid4().hex, tenant=tenant, candidate=candidate, baseline=baseline,
                                    judge=judge, model=model, prompt_version=version, status="queued",
                                    created_at=utcnow(), rq_queue=rq_queue)
            with self.redis.pipeline(transaction=True) as pipe:
                pipe.hset(keys.pairwise_run(record.run_id), mapping=_fields(record))
                pipe.expire(keys.pairwise_run(record.run_id), self.ttl)
                pipe.execute()
            if self.redis.set(finder, record.run_id, nx=True, ex=self.ttl):
                return record, True
            self.redis.delete(keys.pairwise_run(record.run_id))
        raise RuntimeError("the pairwise run could neither be found nor created")  # pragma: no cover - needs 3 races

    def forget(self, record: PairwiseRecord) -> None:
        """Delete a run that could not be enqueued, and its finder, so the next ask starts it again."""
        self.redis.delete(keys.pairwise_run(record.run_id), keys.pairwise_find(
            record.tenant, record.candidate, record.baseline, record.judge, record.prompt_version, record.model))

    def get(self, run_id: str, tenant: str | None = None) -> PairwiseRecord | None:
        """The run's record; None when it has expired (or is another tenant's)."""
        fields = {k.decode(): v.decode() for k, v in self.redis.hgetall(keys.pairwise_run(run_id)).items()
                  if k != b"result"}
        if not fields or (tenant is not None and fields.get("tenant") != tenant):
            return None
        return msgspec.convert({**fields, "run_id": run_id}, PairwiseRecord, strict=False)

    def result(self, run_id: str) -> bytes | None:
        """The run's JSON result (a Pairwise) once it has ended, else None."""
        return self.redis.hget(keys.pairwise_run(run_id), "result")

    def start(self, run_id: str, total: int) -> None:
        """The worker took the run: `total` items to judge."""
        self.redis.hset(keys.pairwise_run(run_id), mapping={"status": "running", "total": total})

    @staticmethod
    def queue_progress(pipe: redis.client.Pipeline, run_id: str, done: int, failed: int) -> None:
        """Queue the increments of the run's progress onto `pipe` (a sync or an asyncio pipeline)."""
        pipe.hincrby(keys.pairwise_run(run_id), "done", done)
        pipe.hincrby(keys.pairwise_run(run_id), "failed", failed)

    def finish(self, record: PairwiseRecord, status: PairwiseStatus, result: bytes, error: str | None = None) -> None:
        """Store the result and end the run. A failed run's finder expires within a minute, so the error is seen
        and the next ask starts a new run."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(keys.pairwise_run(record.run_id),
                      mapping={"status": status, "result": result, **({"error": error} if error else {})})
            if status == "failed":
                finder = keys.pairwise_find(record.tenant, record.candidate, record.baseline, record.judge,
                                            record.prompt_version, record.model)
                pipe.expire(finder, defaults.PAIRWISE_FAILED_KEEP_SECONDS)
            pipe.execute()


def _fields(record: PairwiseRecord) -> dict[str, str | int]:
    return {k: v for k, v in msgspec.structs.asdict(record).items() if v is not None and k != "run_id"}
