"""Run one pairwise A/B job: pair the two jobs' traces as the comparison does, choose at most
RAGPULSE_PAIRWISE_MAX_PAIRS items, ask the judge about each in both orders, and add the verdicts up.

`open_run` reads what the run needs with blocking calls before any event loop runs; `run_pairwise` judges on the
event loop. Every judge call is reserved in Redis before it is sent and settled after (evaluation.reserve), charged
to the tenant's day (a pairwise run belongs to no single job), and the tenant's daily budget is read before each
item. A failed item is recorded with its reason and counted, never given a verdict; a judge that refuses the
credentials, or is not configured here, fails the whole run with that reason.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import redis.asyncio

from ragpulse.config import keys
from ragpulse.config.settings import Settings
from ragpulse.evaluation.budget import budget_exhausted
from ragpulse.evaluation.calls import CallCounter, marker_seconds
from ragpulse.evaluation.reserve import SpendReservations
from ragpulse.exceptions import JobNotFound, JudgeAuthError, JudgeError, JudgeNotConfigured
from ragpulse.judges import kinds
from ragpulse.judges.judge_input import JudgeInputLimits
from ragpulse.judges.pairwise import Asks, item_from, judge_both_orders, pair_verdict
from ragpulse.judges.pairwise_prompt import LENGTH_BIAS_CONTROL, PAIRWISE, POSITION_BIAS_CONTROL
from ragpulse.model.pairwise import PairFailure, Pairwise, PairwiseStatus, PairVerdict
from ragpulse.model.results import Spend, TraceResult
from ragpulse.model.trace import Trace
from ragpulse.reporting.pairing import pair_results
from ragpulse.reporting.pairwise import choose, summarize
from ragpulse.store import Store
from ragpulse.store.clock import utcday, utcnow
from ragpulse.store.connection import worker_async_client
from ragpulse.store.pairwise import PairwiseRecord, PairwiseRuns
from ragpulse.store.spend import SpendLedger, add_spend, is_zero, no_spend

log = logging.getLogger("ragpulse.evaluation.pairwise")


@dataclass(frozen=True)
class Item:
    """One chosen item: both traces (as posted) and where they stand in their jobs."""

    trace_id: str
    candidate_index: int
    baseline_index: int
    candidate: Trace
    baseline: Trace

    def failure(self, reason: str) -> PairFailure:
        return PairFailure(trace_id=self.trace_id, candidate_index=self.candidate_index,
                           baseline_index=self.baseline_index, reason=reason)


@dataclass
class PairwiseWork:
    """A started run: its record, the items to judge, the items whose answers are identical, and the section so far
    (what was matched and what was not judged)."""

    record: PairwiseRecord
    items: list[Item]
    identical: int
    base: Pairwise
    failures: list[PairFailure] = field(default_factory=list)


def base_section(record: PairwiseRecord, status: PairwiseStatus = "running", error: str | None = None) -> Pairwise:
    """The section of a run before any verdict: its judge and the bias controls it sends."""
    return Pairwise(status=status, judge=record.judge, model=record.model,
                    prompt_version=record.prompt_version, matched=0, judged=0, error=error,
                    length_bias_control=LENGTH_BIAS_CONTROL, position_bias_control=POSITION_BIAS_CONTROL,
                    created_at=record.created_at, spend=no_spend())


def open_run(store: Store, runs: PairwiseRuns, settings: Settings, record: PairwiseRecord) -> PairwiseWork:
    """Pair the jobs' traces, choose the items, mark the run started. Blocking: call it before the event loop runs.
    JobNotFound when a job (or its traces) has expired."""
    pairing = pair_results(store.results.all(record.baseline), store.results.all(record.candidate))
    traces = _TraceReader(store)
    answered, identical, no_answer = [], 0, 0
    for base, cand in pairing.pairs:
        item = Item(cand.trace_id, cand.index, base.index, traces.get(record.candidate, cand),
                    traces.get(record.baseline, base))
        if not (item.candidate.answer and item.baseline.answer):
            no_answer += 1
        elif item.candidate.answer == item.baseline.answer:
            identical += 1
        else:
            answered.append(((base, cand), item))
    chosen, over_limit = choose([pair for pair, _ in answered], settings.pairwise_max_pairs)
    keep = {(cand.index, base.index) for base, cand in chosen}
    items = [item for (base, cand), item in answered if (cand.index, base.index) in keep]
    base = base_section(record)
    base.matched = len(pairing.pairs)
    base.not_judged = {reason: n for reason, n in (("over_limit", over_limit), ("no_answer", no_answer)) if n}
    base.self_preference, base.warnings = self_preference(items, record.model)
    runs.start(record.run_id, len(items))
    return PairwiseWork(record, items, identical, base)


def self_preference(items: list[Item], model: str) -> tuple[dict[str, int], list[str]]:
    """Per side, the items whose answer the judge model generated, and the warning they call for."""
    own = {side: n for side in ("candidate", "baseline")
           if (n := sum(getattr(item, side).generator_model == model for item in items))}
    if not own:
        return {}, []
    counted = " and ".join(f"{n} {side}" for side, n in own.items())
    return own, [f"{counted} answers of {len(items)} items were generated by the judge model {model}: a judge "
                 "prefers its own answers, so the run it wrote is favoured; compare with a different judge model"]


class _TraceReader:
    """Traces of a job by index, each chunk read once."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.chunks: dict[tuple[str, int], list[Trace]] = {}
        self.sizes: dict[str, int] = {}

    def get(self, job_id: str, result: TraceResult) -> Trace:
        size = self.sizes.get(job_id) or self.sizes.setdefault(job_id, self.store.jobs.get(job_id).chunk_size)
        chunk = result.index // size
        if (job_id, chunk) not in self.chunks:
            self.chunks[job_id, chunk] = self.store.chunks.load(job_id, chunk)
        return self.chunks[job_id, chunk][result.index % size]


class PairwiseCalls(CallCounter):
    """Counts a pairwise run's judge calls: reserved against the tenant's day before each is sent, settled after,
    written with the run's progress; `total` is the run's own spend."""

    def __init__(self, settings: Settings, tenant: str, reservations: SpendReservations) -> None:
        super().__init__(dict(settings.judge_prices), reservations)
        self.tenant = tenant
        self.unwritten = no_spend()
        self.total = no_spend()

    async def reserve(self, model: str, input_tokens: int, output_tokens: int) -> Spend | None:
        """Reserve the call (CallCounter.reserve) and count it in the run's total until it is settled."""
        reserved = await super().reserve(model, input_tokens, output_tokens)
        if reserved is not None:
            add_spend(self.total, reserved)
        return reserved

    def target(self) -> tuple[None, str]:
        """The tenant's day: a pairwise run belongs to no single job."""
        return None, self.tenant

    def spent(self, spend: Spend) -> None:
        add_spend(self.unwritten, spend)
        add_spend(self.total, spend)

    async def write(self, client: redis.asyncio.Redis, run_id: str, done: int = 0, failed: int = 0) -> None:
        """Write the settlements and request metrics counted since the last write, and the run's progress, in one
        transaction."""
        spend, self.unwritten = self.unwritten, no_spend()
        async with client.pipeline(transaction=True) as pipe:
            if not is_zero(spend):
                SpendLedger.queue_add(pipe, None, self.tenant, spend)
            self.metrics.take().queue_onto(pipe)
            PairwiseRuns.queue_progress(pipe, run_id, done, failed)
            await pipe.execute()


async def run_pairwise(settings: Settings, work: PairwiseWork) -> Pairwise:
    """Judge every chosen item in both orders; the finished (or failed) section."""
    record = work.record
    client = worker_async_client(settings.redis_url, settings.judge_concurrency, settings.worker_redis_outage_seconds)
    calls = PairwiseCalls(settings, record.tenant, SpendReservations(client, marker_seconds(settings)))
    try:
        judge = kinds.make_task_client(record.judge, settings, PAIRWISE, calls)
        run = PairwiseRun(settings, client, work, judge, calls)
        try:
            verdicts = await run.run()
        finally:
            await judge.aclose()
        await calls.write(client, record.run_id)
    finally:
        await client.aclose()
    section = summarize(work.base, verdicts, work.identical, work.failures)
    section.spend = calls.total
    section.status = "failed" if run.fatal is not None else "finished"
    section.error = run.fatal
    section.finished_at = utcnow()
    return section


class PairwiseRun:
    """Judges a run's items, at most half of RAGPULSE_JUDGE_CONCURRENCY at once (each item makes two calls)."""

    def __init__(self, settings: Settings, client: redis.asyncio.Redis, work: PairwiseWork, judge: Asks,
                 calls: PairwiseCalls) -> None:
        self.settings, self.client, self.work, self.judge, self.calls = settings, client, work, judge, calls
        self.limits = JudgeInputLimits.from_settings(settings)
        self.fatal: str | None = None
        """Why the run failed as a whole (credentials refused, judge not configured); later items are not asked."""

    async def run(self) -> list[PairVerdict]:
        bound = asyncio.Semaphore(max(1, self.settings.judge_concurrency // 2))
        verdicts = await asyncio.gather(*(self._one(item, bound) for item in self.work.items))
        return [v for v in verdicts if v is not None]

    async def _one(self, item: Item, bound: asyncio.Semaphore) -> PairVerdict | None:
        async with bound:
            verdict, reason = await self._judged(item)
        if reason is not None:
            self.work.failures.append(item.failure(reason))
        await self.calls.write(self.client, self.work.record.run_id, done=int(verdict is not None),
                               failed=int(verdict is None))
        return verdict

    async def _judged(self, item: Item) -> tuple[PairVerdict | None, str | None]:
        if self.fatal is not None:
            return None, f"run failed: {self.fatal}"
        spent = await self._budget_spent()
        if spent is not None:
            return None, spent
        try:
            orders, _ = await judge_both_orders(self.judge, item_from(item.candidate, item.baseline, self.limits))
        except (JudgeAuthError, JudgeNotConfigured) as exc:
            self.fatal = self.fatal or exc.reason
            return None, f"run failed: {exc.reason}"
        except JudgeError as exc:
            return None, exc.reason
        except Exception as exc:  # noqa: BLE001 - a failing item is recorded as data; the run goes on
            log.exception("pairwise item %s of run %s failed", item.trace_id, self.work.record.run_id)
            return None, f"{type(exc).__name__}: {exc}"
        return pair_verdict(item.trace_id, item.candidate_index, item.baseline_index, orders), None

    async def _budget_spent(self) -> str | None:
        """Which budget ran out (the tenant's daily budget), or None: read before each item."""
        budget = self.settings.tenant_daily_budget_usd
        if budget is None:
            return None
        raw = await self.client.hget(keys.tenant_spend(self.work.record.tenant, utcday()), "cost_usd")
        spent = float(raw or 0) + self.calls.unwritten.cost_usd
        return budget_exhausted(self.calls.total.cost_usd, spent, None, budget)


def expired_section(record: PairwiseRecord, exc: JobNotFound) -> Pairwise:
    """The failed section of a run whose jobs expired before it ran."""
    return base_section(record, "failed", f"job {exc} or its traces expired before the pairwise run started")
