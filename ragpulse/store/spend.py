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

def no_spend() -> Spend:
    """Spend of no call."""
    return Spend(judge_calls=0, input_tokens=0, output_tokens=0, cost_usd=0.0)


def add_spend(total: Spend, more: Spend, sign: int = 1) -> None:
    """Add `more` to `total` (subtract it with sign=-1)."""
    total.judge_calls += sign * more.judge_calls
    total.input_tokens += sign * more.input_tokens
    total.output_tokens += sign * more.output_tokens
    total.cost_usd += sign * more.cost_usd


def is_zero(spend: Spend) -> bool:
    """True when `spend` adds nothing."""
    return not (spend.judge_calls or spend.input_tokens or spend.output_tokens or spend.cost_usd)


SpendTarget = tuple[str | None, str]
"""Whom judge calls are charged to: (job id, or None for calls of no job such as online traces; tenant)."""


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
    def reservation(run_key: str, number: int, run_key_seconds: int,
                    reserved: dict[SpendTarget, Spend]) -> tuple[list[str], list[object]]:
        """The KEYS and ARGV of the scripts.RESERVE_SPEND call that reserves `reserved` (calls about to be sent, at
        their estimated input tokens and cost) against each target's job and tenant-day, as the run's reservation
        `number` (its last applied number kept at `run_key` for `run_key_seconds`)."""
        spend_keys: list[str] = [run_key]
        args: list[object] = [number, run_key_seconds]
        day = utcday()
        for (job_id, tenant), spend in reserved.items():
            counts = (spend.judge_calls, spend.input_tokens, repr(spend.cost_usd))
            if job_id is not None:
                spend_keys.append(keys.job(job_id))
                args += [*counts, 0]
            spend_keys.append(keys.tenant_spend(tenant, day))
            args += [*counts, TENANT_DAY_TTL_SECONDS]
        return spend_keys, args

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
