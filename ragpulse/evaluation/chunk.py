"""Run one chunk of a job: judge calls concurrently under a bound, each result stored as soon as it exists.

A chunk runs under a lease it renews; results are written per trace and idempotently, so a chunk picked up again
after its worker died skips what is already stored, and nothing is counted twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from dataclasses import dataclass, field

from ragpulse.config.prices import call_cost
from ragpulse.evaluation.budget import budget_exhausted
from ragpulse.evaluation.judge_input import JudgeInputLimits
from ragpulse.evaluation.trace import evaluate_trace, failed_result, skipped_result
from ragpulse.exceptions import JudgeAuthError
from ragpulse.model.results import TraceResult
from ragpulse.judges import kinds
from ragpulse.model.verdicts import Judge
from ragpulse.monitoring.policy_store import PolicyStore
from ragpulse.monitoring.sampling import SamplingPolicy, cheap_checks, sampling_decision
from ragpulse.monitoring.recorder import CallMetrics, queue_result_counts
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.config.settings import Settings
from ragpulse.store import Store
from ragpulse.store.connection import RETRIED_ERRORS, OutageBackoff

log = logging.getLogger("ragpulse.evaluation.chunk")


class CallObserver:
    """Counts every judge call: tokens and cost against its job and tenant-day, and in the shared metrics."""

    def __init__(self, store: Store, job_id: str, tenant: str, settings: Settings) -> None:
        self.store, self.job_id, self.tenant, self.settings = store, job_id, tenant, settings
        self.metrics = CallMetrics(store.redis, dict(settings.judge_prices))

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int, *,
                cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0) -> None:
        """Record one provider request (failed requests carry no usage); its cost prices cache reads and writes."""
        cached = {"cache_read_input_tokens": cache_read_input_tokens,
                  "cache_creation_input_tokens": cache_creation_input_tokens}
        self.metrics.request(model, status, latency_seconds, input_tokens, output_tokens, **cached)
        if status == "ok":
            cost = call_cost(self.settings.judge_prices, model, input_tokens, output_tokens, **cached)
            self.store.spend.add(self.job_id, self.tenant, cost, input_tokens, output_tokens)

    def waited(self, model: str, seconds: float) -> None:
        """Record time spent waiting for the shared rate limit."""
        self.metrics.waited(model, seconds)


@dataclass
class ChunkRun:
    """Everything one chunk run needs."""

    store: Store
    settings: Settings
    job_id: str
    chunk: int
    judge: Judge | None
    _policies: dict[str, SamplingPolicy] = field(default_factory=dict)

    @property
    def limits(self) -> JudgeInputLimits:
        """How much of each trace the judge sees (RAGPULSE_JUDGE_MAX_*_CHARS)."""
        s = self.settings
        return JudgeInputLimits(s.judge_max_answer_chars, s.judge_max_doc_chars, s.judge_max_context_chars)

    async def run(self) -> bool:
        """Evaluate the chunk's remaining traces; True when this completed the job (the caller finalizes)."""
        store, job_id = self.store, self.job_id
        record = store.jobs.get(job_id)
        traces = store.chunks.load(job_id, self.chunk)
        offset = self.chunk * record.chunk_size
        store.chunks.start(job_id, self.chunk, self.settings.lease_seconds)
        store.jobs.mark_started(job_id)
        stored = store.results.stored_indexes(job_id, range(offset, offset + len(traces)))
        pending = [(offset + i, t) for i, t in enumerate(traces) if offset + i not in stored]
        heartbeat = asyncio.create_task(self._heartbeat())
        try:
            await self._evaluate_all(pending, record.options, record.tenant)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
        return store.chunks.complete(job_id, self.chunk)

    async def _evaluate_all(self, pending: list[tuple[int, Trace]], options: BatchOptions, tenant: str) -> None:
        bound = asyncio.Semaphore(self.settings.judge_concurrency)
        policies = PolicyStore(self.store.redis, self.settings.default_sample_rate, self.settings.max_apps_per_tenant)

        async def one(index: int, trace: Trace) -> None:
            policy = self._policies.get(trace.app) or self._policies.setdefault(trace.app, policies.get(tenant, trace.app))
            async with bound:
                result = await self._evaluate(index, trace, options, tenant, policy)
            self.store.results.record(self.job_id, result, counting=functools.partial(
                queue_result_counts, apps=self.settings.apps, tenants=self.settings.tenants, tenant=tenant,
                result=result))

        await asyncio.gather(*(one(index, trace) for index, trace in pending))

    async def _evaluate(self, index: int, trace: Trace, options: BatchOptions, tenant: str,
                        policy: SamplingPolicy) -> TraceResult:
        failure = self.store.jobs.failure(self.job_id)
        if failure is not None:
            return failed_result(trace, index, f"job failed: {failure}")
        checks = cheap_checks(trace, policy)
        sampled, reason = (True, "all") if options.sample != "policy" else sampling_decision(trace, policy, checks)
        judge = self.judge if (trace.answer and sampled) else None
        result = await self._judged(index, trace, options, tenant, judge)
        if self.judge is not None:
            result.sampled, result.sample_reason = sampled, reason
        result.checks = checks
        return result

    async def _judged(self, index: int, trace: Trace, options: BatchOptions, tenant: str,
                      judge: Judge | None) -> TraceResult:
        if judge is not None and kinds.is_billable(judge.name):
            reason = budget_exhausted(*self.store.spend.spent(self.job_id, tenant), options.budget_usd,
                                      self.settings.tenant_daily_budget_usd)
            if reason:
                return skipped_result(trace, index, reason, options)
        outage = OutageBackoff()
        while True:
            try:
                return await evaluate_trace(trace, index, options, judge, self.limits)
            except JudgeAuthError as exc:
                self.store.jobs.finish(self.job_id, "failed", exc.reason)
                return failed_result(trace, index, f"job failed: {exc.reason}")
            except RETRIED_ERRORS as exc:
                # Redis (the judge's shared rate limiter) went away mid-trace: not the trace's fault, so it is
                # judged again once Redis is back, unless the outage outlasts WORKER_REDIS_OUTAGE_SECONDS.
                wait = outage.next_wait()
                if wait is None:
                    log.exception("trace %s of job %s failed: Redis unreachable", index, self.job_id)
                    return failed_result(trace, index, f"{type(exc).__name__}: {exc}")
                log.warning("trace %s of job %s: Redis unreachable (%s); judging it again in %.1f s", index,
                            self.job_id, exc, wait)
                await asyncio.sleep(wait)
            except Exception as exc:  # noqa: BLE001 - a failing trace is recorded as data; the chunk goes on
                log.exception("trace %s of job %s failed", index, self.job_id)
                return failed_result(trace, index, f"{type(exc).__name__}: {exc}")

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_seconds / 3)
            self.store.chunks.renew(self.job_id, self.chunk, self.settings.lease_seconds)
