"""Count a chunk run's judge calls: reserved in Redis before each is sent (evaluation.reserve), settled in memory
after, and the counts written to Redis a few times a second, not once per call."""

from __future__ import annotations

import abc
import uuid
from dataclasses import dataclass

from ragpulse.config import defaults
from ragpulse.config.prices import call_cost
from ragpulse.config.settings import Settings
from ragpulse.evaluation.reserve import SpendReservations
from ragpulse.model.results import Spend
from ragpulse.monitoring.recorder import CallMetrics
from ragpulse.store.aio import AsyncJobStore
from ragpulse.store.atomic import Group, Writes
from ragpulse.store.spend import SpendLedger, SpendTarget, add_spend, is_zero, no_spend


class CallCounter(abc.ABC):
    """Counts judge calls as the judge's observer: the shared request metrics in memory, each call's spend where
    `spent` puts it (a job's run, or the online traces' tenants) until it is written with the run's other counts.

    With `reservations`, a call is counted in Redis before it is sent (`reserve`: one call at its estimated input
    tokens and cost, reservations of calls starting together sent as one), and its response settles the difference
    in memory: the actual usage less the reservation, or the whole reservation given back when the attempt failed or
    was never sent. A worker killed mid-call then over-counts at most (reservations of calls never sent, estimates
    not yet settled), never under-counts. Without, a call is counted when its response comes."""

    def __init__(self, prices: dict[str, tuple[float, float]],
                 reservations: SpendReservations | None = None) -> None:
        self.prices = prices
        self.metrics = CallMetrics(prices)
        self.reservations = reservations

    async def reserve(self, model: str, input_tokens: int, output_tokens: int) -> Spend | None:
        """Count one call about to be sent, at these token estimates, in Redis; what is reserved (None without
        reservations). Raises Redis's error when it cannot be counted: the call must not be sent then."""
        if self.reservations is None:
            return None
        spend = Spend(judge_calls=1, input_tokens=input_tokens, output_tokens=0,
                      cost_usd=call_cost(self.prices, model, input_tokens, output_tokens))
        return await self.reservations.reserve(self.target(), spend)

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int, *,
                cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0,
                reserved: Spend | None = None, delivery: str = "interactive") -> None:
        """Count one provider request (failed requests carry no usage); its cost prices cache reads and writes, at the
        batch price for a `batch` request. A reserved call is settled: its actual spend less the reservation."""
        cost = self.metrics.request(model, status, latency_seconds, input_tokens, output_tokens,
                                    cache_read_input_tokens=cache_read_input_tokens,
                                    cache_creation_input_tokens=cache_creation_input_tokens, delivery=delivery)
        spend = no_spend()
        if status == "ok":
            spend = Spend(judge_calls=1, input_tokens=input_tokens, output_tokens=output_tokens, cost_usd=cost)
        if reserved is not None:
            add_spend(spend, reserved, -1)
        if not is_zero(spend):
            self.spent(spend)

    def unsent(self, reserved: Spend | None) -> None:
        """Give back the reservation of a call that was never sent."""
        if reserved is not None:
            spend = no_spend()
            add_spend(spend, reserved, -1)
            self.spent(spend)

    def waited(self, model: str, seconds: float) -> None:
        """Count time spent waiting for the shared rate limit."""
        self.metrics.waited(model, seconds)

    @abc.abstractmethod
    def target(self) -> SpendTarget:
        """Whom the call being made is charged to."""

    @abc.abstractmethod
    def spent(self, spend: Spend) -> None:
        """Keep the spend of one call (or a settlement: it may be negative) until it is written."""


def marker_seconds(settings: Settings) -> int:
    """Lifetime of what makes a write of counted calls, or a reservation, apply once: longer than any worker holds
    one it could not confirm."""
    return max(defaults.COUNTED_WRITE_MARKER_SECONDS, int(4 * settings.worker_redis_outage_seconds))


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

    def __init__(self, settings: Settings, job: SpendTarget = (None, "unknown"),
                 reservations: SpendReservations | None = None) -> None:
        super().__init__(dict(settings.judge_prices), reservations)
        self.job = job
        self.unwritten = no_spend()
        self.held: HeldWrite | None = None
        self.marker_seconds = marker_seconds(settings)

    @property
    def unwritten_cost(self) -> float:
        """USD of the calls counted here and not yet confirmed written to Redis (less the calls reserved ahead and
        not taken yet, which Redis counts already)."""
        unused = self.reservations.unused_cost(self.job) if self.reservations is not None else 0.0
        return self.unwritten.cost_usd + (self.held.spend.cost_usd if self.held is not None else 0.0) - unused

    async def give_back_unused(self) -> None:
        """Once the run's calls are made: give back the calls reserved ahead and never taken (with the next write)."""
        if self.reservations is not None:
            for spend in (await self.reservations.close()).values():
                add_spend(self.unwritten, spend, -1)

    @property
    def settled(self) -> bool:
        """True when every call counted here is confirmed written."""
        return self.held is None and is_zero(self.unwritten) and not self.metrics.counted.pending

    def target(self) -> SpendTarget:
        """The run's job and tenant."""
        return self.job

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
        if not is_zero(spend):
            SpendLedger.queue_add(writes, job.job_id, job.tenant, spend)
        self.metrics.take().queue_onto(writes)
        return HeldWrite(uuid.uuid4().hex, spend, writes.group) if writes.group else None
