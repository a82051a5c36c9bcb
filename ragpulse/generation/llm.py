"""The generation job's LLM: one client per task on the judge's provider and model, sharing the judge's rate limiter,
retries and spend reservations, with calls counted against the tenant's day (and its daily budget) and the job."""

from __future__ import annotations

from typing import TypeVar

import msgspec
import redis.asyncio

from ragpulse.config import keys
from ragpulse.config.prices import call_cost
from ragpulse.config.settings import Settings
from ragpulse.evaluation.budget import budget_exhausted
from ragpulse.evaluation.calls import CallObserver
from ragpulse.evaluation.reserve import SpendReservations
from ragpulse.exceptions import BudgetSpent
from ragpulse.generation import prompts
from ragpulse.judges import kinds
from ragpulse.judges.structured import Reply, StructuredJudge
from ragpulse.judges.task import ToolTask
from ragpulse.model.results import Spend
from ragpulse.store.clock import utcday
from ragpulse.store.spend import add_spend, no_spend

T = TypeVar("T")


class GenerationCalls(CallObserver):
    """Counts a generation job's calls: reserved and settled against the tenant's day as a chunk run's are (a job of
    no batch: spend target (None, tenant)), and summed in memory as the job's own spend.

    The job's budget counts the calls in flight too: each attempt's estimated cost is held in `in_flight` from just
    before it is sent until its response settles it at the real cost, and an attempt that finds the finished calls and
    those in flight at the budget is refused (BudgetSpent). The check and the hold happen with no await between them,
    so however many calls run at once the job overshoots its budget by at most one call's estimate."""

    def __init__(self, settings: Settings, tenant: str, reservations: SpendReservations,
                 job_budget: float | None = None) -> None:
        super().__init__(settings, (None, tenant), reservations)
        self.total = no_spend()
        self.job_budget = job_budget
        self.in_flight = 0.0
        """USD held for the calls sent and not yet answered (their reservations' estimates)."""

    def job_spent(self) -> float:
        """USD of the job's answered calls and of those in flight."""
        return self.total.cost_usd + self.in_flight

    async def reserve(self, model: str, input_tokens: int, output_tokens: int) -> Spend | None:
        """Hold one call's estimate against the job's budget, then reserve it in Redis (CallCounter.reserve);
        BudgetSpent when the budget is already held or spent, and then the call is not sent."""
        refused = budget_exhausted(self.job_spent(), 0.0, self.job_budget, None)
        if refused is not None:
            raise BudgetSpent(refused)
        estimate = call_cost(self.prices, model, input_tokens, output_tokens)
        self.in_flight += estimate
        try:
            reserved = await super().reserve(model, input_tokens, output_tokens)
        finally:
            self.in_flight -= estimate
        if reserved is not None:
            self.in_flight += reserved.cost_usd
        return reserved

    def unsent(self, reserved: Spend | None) -> None:
        """Give back the reservation, and the hold, of a call that was never sent."""
        self._release(reserved)
        super().unsent(reserved)

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int, *,
                cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0,
                reserved: Spend | None = None, delivery: str = "interactive") -> None:
        """Count one request (CallObserver.request) and add an answered one to the job's spend."""
        super().request(model, status, latency_seconds, input_tokens, output_tokens,
                        cache_read_input_tokens=cache_read_input_tokens,
                        cache_creation_input_tokens=cache_creation_input_tokens, reserved=reserved, delivery=delivery)
        self._release(reserved)
        if status == "ok":
            cost = call_cost(self.prices, model, input_tokens, output_tokens, cache_read_input_tokens,
                             cache_creation_input_tokens, delivery)
            add_spend(self.total, Spend(judge_calls=1, input_tokens=input_tokens, output_tokens=output_tokens,
                                        cost_usd=cost))

    def _release(self, reserved: Spend | None) -> None:
        if reserved is not None:
            self.in_flight = max(0.0, self.in_flight - reserved.cost_usd)


class TaskClients:
    """One StructuredJudge per generation task, built inside the event loop that uses them."""

    def __init__(self, judge: str, settings: Settings, calls: GenerationCalls) -> None:
        self.clients: dict[str, StructuredJudge] = {
            task.name: kinds.make_task_client(judge, settings, task, calls) for task in prompts.TASKS}

    async def ask(self, task: ToolTask, message: str, kind: type[T]) -> T:
        """One call of `task` with `message`; its output decoded as `kind` (one repair when it does not decode)."""
        output, _ = await self.clients[task.name].ask([{"role": "user", "content": message}],
                                                     lambda reply: _decoded(reply, kind))
        return output

    async def aclose(self) -> None:
        """Close every client and its limiter."""
        for client in self.clients.values():
            await client.aclose()


def _decoded(reply: Reply, kind: type[T]) -> tuple[T | None, str | None]:
    if reply.problem is not None:
        return None, reply.problem
    try:
        return msgspec.convert(reply.output, kind), None
    except msgspec.ValidationError as exc:
        return None, str(exc)


class GenerationBudget:
    """The job's budget and the tenant's daily budget, asked before every call."""

    def __init__(self, client: redis.asyncio.Redis, tenant: str, calls: GenerationCalls, job_budget: float | None,
                 tenant_daily_budget: float | None) -> None:
        self.client, self.tenant, self.calls = client, tenant, calls
        self.job_budget, self.tenant_daily_budget = job_budget, tenant_daily_budget

    async def spent(self) -> str | None:
        """Which budget ran out, or None. The job's counts its calls in flight (GenerationCalls); the tenant's day
        counts every worker's reserved calls, and this job's calls counted here and not yet written."""
        if self.job_budget is None and self.tenant_daily_budget is None:
            return None
        tenant_spent = 0.0
        if self.tenant_daily_budget is not None:
            tenant_spent = float(await self.client.hget(keys.tenant_spend(self.tenant, utcday()), "cost_usd") or 0)
        return budget_exhausted(self.calls.job_spent(), tenant_spent + self.calls.unwritten_cost,
                                self.job_budget, self.tenant_daily_budget)
