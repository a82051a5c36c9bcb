"""What a worker does with one online post: evaluate each trace (judging the sampled ones), and build the writes
that store the sampled traces' records and count every trace. The writes are applied by the acknowledgement that
finds the post pending (stream.OnlineStream.acknowledge), so a post processed twice is counted once."""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import logging
from dataclasses import dataclass, field

import msgspec
import redis.asyncio

from ragpulse.config import keys
from ragpulse.config.settings import Settings
from ragpulse.evaluation.budget import budget_exhausted
from ragpulse.evaluation.calls import CallCounter
from ragpulse.judges.judge_input import JudgeInputLimits
from ragpulse.evaluation.reserve import SpendReservations
from ragpulse.evaluation.trace import evaluate_trace, failed_result, skipped_result
from ragpulse.judges import kinds
from ragpulse.labels.design import stamp
from ragpulse.labels.sources import TraceRef, queue_reviewable
from ragpulse.model.results import Security, Spend, TraceResult
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.model.verdicts import Judge
from ragpulse.monitoring.recorder import queue_result_counts
from ragpulse.monitoring.sampling import judge_for_injection
from ragpulse.store import online_records, sessions
from ragpulse.online.post import Decision, Post, pending_record
from ragpulse.security.trace import check_trace_async
from ragpulse.store.atomic import Group, Writes, WriteQueue
from ragpulse.store.clock import utcday, utcnow
from ragpulse.store.connection import RETRIED_ERRORS
from ragpulse.store.spend import SpendLedger, SpendTarget, add_spend, no_spend

log = logging.getLogger("ragpulse.online")
ONLINE_OPTIONS = BatchOptions(sample="policy", queue="online")
"""How online traces are evaluated: the default cutoffs and gain, one judgment, the app's sampling policy."""
_tenant: contextvars.ContextVar[str] = contextvars.ContextVar("ragpulse_online_tenant")
"""The tenant whose trace the current task judges: the judge's observer charges its calls to it."""


class BufferedCallObserver(CallCounter):
    """Counts judge calls (request metrics, and spend per tenant and day; with `reservations`, each call reserved in
    Redis before it is sent and settled here after) for the next acknowledgement to write: no Redis round trip of its
    own per call beyond the reservation's share. Calls are counted as made, never rolled back. Unlike a
    chunk run's CallObserver, whose calls belong to one job, these belong to the tenant of the trace being judged (a
    context variable the processor sets)."""

    def __init__(self, prices: dict[str, tuple[float, float]],
                 reservations: SpendReservations | None = None) -> None:
        super().__init__(prices, reservations)
        self.spend: dict[str, Spend] = {}

    def target(self) -> SpendTarget:
        """The tenant of the trace being judged (no job)."""
        return None, _tenant.get("unknown")

    def spent(self, spend: Spend) -> None:
        """Add one call's spend (or settlement) to its tenant's unwritten spend."""
        add_spend(self.spend.setdefault(self.target()[1], no_spend()), spend)

    def unwritten_spend(self, tenant: str) -> float:
        """What this worker's calls for `tenant` cost since the last drain."""
        return self.spend[tenant].cost_usd if tenant in self.spend else 0.0

    @property
    def counted_anything(self) -> bool:
        """True when something is counted and not yet drained."""
        return bool(self.spend or self.metrics.counted.pending)

    def drain(self, pipe: WriteQueue) -> None:
        """Queue every counted increment onto `pipe`, and forget them."""
        self.metrics.take().queue_onto(pipe)
        for tenant, spend in self.spend.items():
            SpendLedger.queue_add(pipe, None, tenant, spend)
        self.spend.clear()


@dataclass
class PostProcessor:
    """Evaluates online posts with one judge (or none), at most `settings.judge_concurrency` judge calls at once."""

    settings: Settings
    client: redis.asyncio.Redis
    """The worker's async client: the budget check reads the tenant's spend through it."""
    judge: Judge | None
    observer: BufferedCallObserver
    _bound: asyncio.Semaphore = field(init=False)
    _policy_judges: dict[str, Judge | None] = field(init=False)

    def __post_init__(self) -> None:
        self._bound = asyncio.Semaphore(self.settings.judge_concurrency)
        self._policy_judges = {}
        self.limits = JudgeInputLimits.from_settings(self.settings)

    async def process(self, post: Post) -> Group:
        """Evaluate every trace of the post; the writes that record and count them. Redis outages propagate (the
        post stays pending and is processed again); anything else fails only its trace, recorded as data."""
        results = await asyncio.gather(*(self._evaluate(i, trace, decision, post.tenant)
                                         for i, (trace, decision) in enumerate(zip(post.traces, post.decisions))))
        return self.writes(post, results)

    def writes(self, post: Post, results: list[TraceResult]) -> Group:
        """The writes counting every trace of the post and storing the record of each sampled or failed one, and
        making the judged ones the review design can pick reviewable."""
        pipe = Writes()
        processed_at = utcnow()
        for trace, decision, result in zip(post.traces, post.decisions, results, strict=True):
            queue_result_counts(pipe, self.settings.apps, self.settings.tenants, post.tenant, result)
            if result.sampled or result.status != "ok":
                record = online_records.finished(pending_record(trace, decision, post.received_at), result, processed_at)
                pipe.set(keys.online_trace(post.tenant, record.trace_id), online_records.encode(record),
                         ex=self.settings.online_result_ttl_seconds)
                queue_reviewable(pipe, self.settings, post.tenant, TraceRef(record.trace_id), result, trace)
                if result.sampled and not decision.sampled and trace.session_id is not None:  # judged for injection
                    sessions.queue_turn(pipe, post.tenant, trace, self.settings.online_result_ttl_seconds)
        return pipe.group

    def failed_writes(self, post: Post, error: str) -> Group:
        """The writes recording every trace of a post that could not be processed as failed, with `error`."""
        results = [self._labelled(failed_result(trace, i, error), decision)
                   for i, (trace, decision) in enumerate(zip(post.traces, post.decisions))]
        return self.writes(post, results)

    async def _evaluate(self, index: int, trace: Trace, decision: Decision, tenant: str) -> TraceResult:
        _tenant.set(tenant)
        try:
            # Off the event loop and under a time budget: one tenant's hostile answer must not stall the other
            # posts this loop is processing.
            security = await check_trace_async(trace, datetime.datetime.now(datetime.UTC),
                                               decision.max_source_age_days)
            decision = self._upgraded(decision, security)
            judge = self._judge_for(decision) if (decision.sampled and trace.answer) else None
            if judge is None:
                result = await evaluate_trace(trace, index, ONLINE_OPTIONS, security=security)
            elif reason := await self._budget_spent(judge, tenant):
                result = skipped_result(trace, index, reason, ONLINE_OPTIONS, security)
            else:
                judged = await sessions.with_session_evidence(self.client, tenant, trace)
                async with self._bound:
                    result = await evaluate_trace(judged, index, ONLINE_OPTIONS, judge, self.limits, security)
        except RETRIED_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing trace is recorded as data (JudgeAuthError included)
            log.exception("online trace %s of tenant %s failed", trace.trace_id, tenant)
            result = failed_result(trace, index, getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}")
        return self._labelled(result, decision, tenant)

    @staticmethod
    def _upgraded(decision: Decision, security: Security) -> Decision:
        """The API's decision, judged after all when a document carries injected instructions."""
        sampled, reason = judge_for_injection(decision.sampled, decision.reason, decision.judge_injection,
                                              bool(security.injection_docs))
        return msgspec.structs.replace(decision, sampled=sampled, reason=reason)

    def _labelled(self, result: TraceResult, decision: Decision, tenant: str | None = None) -> TraceResult:
        result.sampled, result.sample_reason, result.checks = decision.sampled, decision.reason, decision.checks
        if tenant is not None:
            share = self.settings.review_sample_rate if decision.review_share is None else decision.review_share
            stamp(result, tenant, share)
        return result

    def _judge_for(self, decision: Decision) -> Judge | None:
        """The service's judge, or the one the app's policy names instead (`none`, or the offline heuristic)."""
        if decision.judge is None or (self.judge is not None and self.judge.name == decision.judge):
            return self.judge
        if not kinds.judges_traces(decision.judge):
            return None
        if decision.judge not in self._policy_judges:
            self._policy_judges[decision.judge] = kinds.make_judge(decision.judge, self.settings, self.observer)
        return self._policy_judges[decision.judge]

    async def _budget_spent(self, judge: Judge, tenant: str) -> str | None:
        budget = self.settings.tenant_daily_budget_usd
        if budget is None or not kinds.is_billable(judge.name):
            return None
        stored = await self.client.hget(keys.tenant_spend(tenant, utcday()), "cost_usd")
        return budget_exhausted(0.0, float(stored or 0) + self.observer.unwritten_spend(tenant), None, budget)

