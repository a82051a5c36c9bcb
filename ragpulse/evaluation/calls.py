"""Count a chunk run's judge calls in memory; write the counts to Redis a few times a second, not once per call."""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.model.results import Spend
from ragpulse.monitoring.recorder import CallMetrics
from ragpulse.store.aio import AsyncJobStore
from ragpulse.store.atomic import Group, Writes
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


@dataclass
class HeldWrite:
    """Counted judge calls taken for one write whose outcome is not known yet: sent again, under the same id, until
    Redis confirms it (AsyncJobStore.write_once applies it once however often it is sent)."""

    write_id: str
    spend: Spend
    group: Group


class CallObserver(CallCounter):
    """Counts every judge call of a chunk run: tokens and cost against its job and tenant-day, and in the shared
    request metrics.

    Counting is in memory; `write` applies everything counted since the last write in one script call (a chunk run
    writes every JUDGE_CALLS_WRITE_SECONDS and once more before its chunk completes), so a judge call costs no Redis
    round trip of its own. A write whose outcome is unknown (Redis unreachable, a reply lost) is held and sent again
    under its id, applied once: spend neither under-counts nor counts twice. `unwritten_cost` lets a budget check add
    what is counted here and not yet written.
    """

    def __init__(self, settings: Settings) -> None:
        super().__init__(dict(settings.judge_prices))
        self.unwritten = no_spend()
        self.held: HeldWrite | None = None
        self.marker_seconds = max(defaults.COUNTED_WRITE_MARKER_SECONDS,
                                  int(4 * settings.worker_redis_outage_seconds))

    @property
    def unwritten_cost(self) -> float:
        """USD of the calls counted here and not yet confirmed written to Redis."""
        return self.unwritten.cost_usd + (self.held.spend.cost_usd if self.held is not None else 0.0)

    @property
    def settled(self) -> bool:
        """True when every call counted here is confirmed written."""
        return self.held is None and not self.unwritten.judge_calls and not self.metrics.counted.pending

    def spent(self, spend: Spend) -> None:
        """Add one call's spend to the job's unwritten spend."""
        add_spend(self.unwritten, spend)

    async def write(self, job: AsyncJobStore) -> None:
        """Write the held write, if any, else every call counted since the last write: the job's and the tenant's
        spend and the request metrics, in one script call. When Redis stays unreachable through the client's
        retries, the write stays held (calls counted meanwhile wait for the next write) and the error is raised; a
        write cut off by cancellation stays held too, and is applied once whenever it is sent again."""
        if self.held is None:
            self.held = self._take(job)
        if self.held is not None:
            await job.write_once(self.held.write_id, self.held.group, self.marker_seconds)
            self.held = None

    def _take(self, job: AsyncJobStore) -> HeldWrite | None:
        spend, self.unwritten = self.unwritten, no_spend()
        writes = Writes()
        if spend.judge_calls:
            SpendLedger.queue_add(writes, job.job_id, job.tenant, spend)
        self.metrics.take().queue_onto(writes)
        return HeldWrite(uuid.uuid4().hex, spend, writes.group) if writes.group else None
