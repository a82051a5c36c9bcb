"""Judge spend: what each job and each tenant's day cost, counting every call of every judge (retries and repairs
too; the offline local judge's at no cost)."""

from __future__ import annotations

import redis

from ragpulse.config import keys
from ragpulse.store.clock import utcday

TENANT_DAY_TTL_SECONDS = 2 * 86400
"""A tenant's daily spend outlives its day by a day, then expires."""


class SpendLedger:
    """Spend counters in the job hash and in a per-tenant, per-day hash."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client

    def add(self, job_id: str, tenant: str, cost_usd: float, input_tokens: int, output_tokens: int) -> None:
        """Count one judge call against the job and the tenant's day."""
        day_key = keys.tenant_spend(tenant, utcday())
        with self.redis.pipeline() as pipe:
            for key in (keys.job(job_id), day_key):
                pipe.hincrbyfloat(key, "cost_usd", cost_usd)
                pipe.hincrby(key, "judge_calls", 1)
                pipe.hincrby(key, "input_tokens", input_tokens)
                pipe.hincrby(key, "output_tokens", output_tokens)
            pipe.expire(day_key, TENANT_DAY_TTL_SECONDS)
            pipe.execute()

    def spent(self, job_id: str, tenant: str) -> tuple[float, float]:
        """(job spend, tenant spend today) in USD, in one round trip."""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hget(keys.job(job_id), "cost_usd")
            pipe.hget(keys.tenant_spend(tenant, utcday()), "cost_usd")
            job_cost, day_cost = pipe.execute()
        return float(job_cost or 0), float(day_cost or 0)
