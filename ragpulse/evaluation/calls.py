"""Count a chunk run's judge calls in memory; write the counts to Redis a few times a second, not once per call."""

from __future__ import annotations

import abc

from ragpulse.config.settings import Settings
from ragpulse.model.results import Spend
from ragpulse.monitoring.recorder import CallMetrics
from ragpulse.store.aio import AsyncJobStore
from ragpulse.store.connection import RETRIED_ERRORS
from ragpulse.store.spend import SpendLedger


def no_spend() -> Spend:
    """Spend of no call."""
    return Spend(judge_calls=0, input_tokens=0, output_tokens=0, cost_usd=0.0)


def add_spend(total: Spend, more: Spend) -> None:
    """Add `more` to `total`."""
    total.judge_calls += more.judge_calls
    total.input_tokens += more.input_tokens
    total.output_tokens += more.output_tokens
    total.cost_usd += more.cost_usd


class CallCounter(abc.ABC):
    """Counts judge calls in memory as the judge's observer: the shared request metrics here, each successful call's
    spend where `spent` puts it (a job's run, or the online traces' tenants), so a call costs no Redis round trip."""

    def __init__(self, prices: dict[str, tuple[float, float]]) -> None:
        self.prices = prices
        self.metrics = CallMetrics(prices)

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int, *,
                cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0) -> None:
        """Count one provider request (failed requests carry no usage); its cost prices cache reads and writes."""
        cost = self.metrics.request(model, status, latency_seconds, input_tokens, output_tokens,
                                    cache_read_input_tokens=cache_read_input_tokens,
                                    cache_creation_input_tokens=cache_creation_input_tokens)
        if status == "ok":
            self.spent(Spend(judge_calls=1, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost))

    def waited(self, model: str, seconds: float) -> None:
        """Count time spent waiting for the shared rate limit."""
        self.metrics.waited(model, seconds)

    @abc.abstractmethod
    def spent(self, spend: Spend) -> None:
        """Keep the spend of one successful call until it is written."""


class CallObserver(CallCounter):
    """Counts every judge call of a chunk run: tokens and cost against its job and tenant-day, and in the shared
    request metrics.

    Counting is in memory; `write` applies everything counted since the last write in one transaction (a chunk run
    writes every JUDGE_CALLS_WRITE_SECONDS and once more before its chunk completes), so a judge call costs no Redis
    round trip of its own. `unwritten_cost` lets a budget check add what is counted here and not yet written.
    """

    def __init__(self, settings: Settings) -> None:
        super().__init__(dict(settings.judge_prices))
        self.unwritten = no_spend()

    @property
    def unwritten_cost(self) -> float:
        """USD of the calls counted here and not yet written to Redis."""
        return self.unwritten.cost_usd

    def spent(self, spend: Spend) -> None:
        """Add one call's spend to the job's unwritten spend."""
        add_spend(self.unwritten, spend)

    async def write(self, job: AsyncJobStore) -> None:
        """Write every call counted since the last write: the job's and the tenant's spend and the request metrics,
        in one transaction. When Redis stays unreachable through the client's retries, the calls stay counted for the
        next write and the error is raised; a write cut off by cancellation is not repeated (it may have been
        applied)."""
        spend, self.unwritten = self.unwritten, no_spend()
        increments = self.metrics.take()
        taken = dict(increments.pending)

        def queue(pipe) -> None:  # noqa: ANN001 - an asyncio pipeline
            if spend.judge_calls:
                SpendLedger.queue_add(pipe, job.job_id, job.tenant, spend)
            increments.queue_onto(pipe)

        try:
            await job.write(queue)
        except RETRIED_ERRORS:
            add_spend(self.unwritten, spend)
            self.metrics.give_back(taken)
            raise
