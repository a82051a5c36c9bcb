"""Judge spend: what each job and each tenant's day cost, counting every call of every judge (retries and repairs
too; the offline local judge's at no cost)."""

from __future__ import annotations

import redis

from ragpulse.config import keys
from ragpulse.model.results import Spend
from ragpulse.store.atomic import WriteQueue
from ragpulse.store.clock import utcday

TENANT_DAY_TTL_SECONDS = 2 * 86400
"""A tenant's daily spend outlives its day by a day, then expires."""


class SpendLedger:
    """Spend counters in the job hash and in a per-tenant, per-day hash."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client

    @staticmethod
    def queue_add(pipe: WriteQueue, job_id: str | None, tenant: str, spend: Spend) -> None:
        """Queue the writes counting `spend` (any number of judge calls) against the job (None: calls of no job,
        online traces) and the tenant's day onto `pipe` (a sync or an asyncio pipeline, or Writes; the caller
        applies it)."""
        day_key = keys.tenant_spend(tenant, utcday())
        for key in ([keys.job(job_id)] if job_id is not None else []) + [day_key]:
            pipe.hincrbyfloat(key, "cost_usd", spend.cost_usd)
            pipe.hincrby(key, "judge_calls", spend.judge_calls)
            pipe.hincrby(key, "input_tokens", spend.input_tokens)
            pipe.hincrby(key, "output_tokens", spend.output_tokens)
        pipe.expire(day_key, TENANT_DAY_TTL_SECONDS)

    @staticmethod
    def queue_spent(pipe: redis.client.Pipeline, job_id: str, tenant: str) -> None:
        """Queue the reads of `spent_from` onto `pipe` (a sync or an asyncio pipeline)."""
        pipe.hget(keys.job(job_id), "cost_usd")
        pipe.hget(keys.tenant_spend(tenant, utcday()), "cost_usd")

    @staticmethod
    def spent_from(replies: list) -> tuple[float, float]:
        """(job spend, tenant spend today) in USD from the replies of `queue_spent`."""
        job_cost, day_cost = replies
        return float(job_cost or 0), float(day_cost or 0)

    def spent(self, job_id: str, tenant: str) -> tuple[float, float]:
        """(job spend, tenant spend today) in USD, in one round trip."""
        with self.redis.pipeline(transaction=False) as pipe:
            self.queue_spent(pipe, job_id, tenant)
            return self.spent_from(pipe.execute())
