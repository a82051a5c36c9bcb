"""Run one chunk of a job: judge calls concurrently under a bound, each result stored as soon as it exists.

A chunk runs under a lease it renews; results are written per trace and idempotently, so a chunk picked up again
after its worker died skips what is already stored, and nothing is counted twice.

Two halves: `open_chunk` reads what the run needs and takes the lease, with blocking calls, before any event loop
runs; `run_chunk` judges on the event loop and never blocks it on Redis (redis.asyncio for the results and the lease,
judge calls reserved before they are sent, calls starting together in one small script call, and settled in memory
and written a few times a second, the job's failure flag read every half second).
With dozens of calls in flight, every blocking round trip held up all of them.

No pause at a hand-over (issue 28): a worker's RQ job takes its chunk with `take_chunk`, and once every trace of it has
started, its run takes the job's next chunk still waiting for a worker (`take_next_chunk`, in a thread, under a lease
its heartbeat renews with the others) and feeds its traces into the same bound of calls in flight, so they start as
the last calls of the chunk before finish; for CHUNK_CHAIN_SECONDS at most. The caller completes every chunk the run
held, and is told of each chunk taken so (`taken`), to take its RQ job off the queue: a worker would otherwise fork a
work-horse for it only to find it held. A run that dies leaves the leases of all its chunks to lapse, and the janitor
requeues each.

Verdicts and judge calls are paid for, so a Redis outage does not throw them away: a result or a write of counted
calls that Redis does not take through the client's retries (RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS) is held in
memory, no new trace is judged meanwhile (so at most RAGPULSE_JUDGE_CONCURRENCY results are held), and it is sent
again until Redis takes it, for one more outage budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.evaluation.calls import CallObserver, marker_seconds
from ragpulse.evaluation.guard import RunGuard
from ragpulse.judges.judge_input import JudgeInputLimits
from ragpulse.evaluation.reserve import SpendReservations
from ragpulse.evaluation.trace import evaluate_trace, failed_result, skipped_result
from ragpulse.exceptions import JudgeAuthError
from ragpulse.judges import kinds
from ragpulse.judges.batches import BatchOutcome, replaying
from ragpulse.labels.design import stamp
from ragpulse.labels.sources import TraceRef, queue_reviewable
from ragpulse.model.results import Security, TraceResult
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.model.verdicts import Judge
from ragpulse.monitoring.policy_store import PolicyStore
from ragpulse.monitoring.recorder import queue_result_counts
from ragpulse.monitoring.sampling import SamplingPolicy, cheap_checks, judge_for_injection, sampling_decision
from ragpulse.security.trace import CHECK_BUDGET_SECONDS, check_trace, check_trace_async
from ragpulse.store import JobRecord, Store, sessions
from ragpulse.store.aio import AsyncJobStore
from ragpulse.store.atomic import WriteQueue
from ragpulse.store.connection import RETRIED_ERRORS, OutageBackoff, worker_async_client

SET_ASIDE = "set_aside:retrieval_unanswerable"
"""The sample reason of a trace whose dataset item the retrieval filter flagged: it measures retrieval failure, not
generation, so it is never judged (kept, counted, its retrieval metrics reported)."""

log = logging.getLogger("ragpulse.evaluation.chunk")
T = TypeVar("T")


OVER_BUDGET_IN_BATCH = "budget left no room for this trace's judge request at the batch price"
"""The reason of a trace a budget held back from its provider batch."""


@dataclass
class ChunkWork:
    """A started chunk: its job, the traces that still need a result (with their indexes in the job) and the sampling
    policy of each of their apps."""

    record: JobRecord
    chunk: int
    pending: list[tuple[int, Trace]]
    policies: dict[str, SamplingPolicy]
    over_budget: frozenset[int] = frozenset()
    """Traces a budget held back from a provider batch (batch delivery): skipped without a budget check."""
    prepaid: frozenset[int] = frozenset()
    """Traces whose judge request a provider batch already answered (batch delivery): paid for, and reserved against
    the budgets when submitted, so no budget check holds them back."""


def open_chunk(store: Store, settings: Settings, job_id: str, chunk: int) -> ChunkWork:
    """Start a chunk: take its lease, mark the job started, and read its traces (less those already stored) and their
    apps' sampling policies. Blocking: call it before the event loop runs."""
    record = store.jobs.get(job_id)
    store.chunks.start(job_id, chunk, settings.lease_seconds)
    store.jobs.mark_started(job_id)
    return _read_work(store, settings, record, chunk)


def take_chunk(store: Store, settings: Settings, job_id: str, chunk: int) -> ChunkWork | None:
    """`open_chunk`, unless the chunk is done or a live worker holds it (None): the RQ job of a chunk that another run
    took as its next one. Blocking: call it before the event loop runs."""
    record = store.jobs.get(job_id)
    if not store.chunks.take(job_id, chunk, settings.lease_seconds):
        return None
    store.jobs.mark_started(job_id)
    return _read_work(store, settings, record, chunk)


Taken = Callable[[JobRecord, int], None]
"""Told of each chunk a run takes as its next one (the worker takes the chunk's own RQ job off the queue)."""


def take_next_chunk(store: Store, settings: Settings, record: JobRecord,
                    taken: Taken | None = None) -> ChunkWork | None:
    """Take the job's first chunk still waiting for a worker and read it; None when none waits. Blocking: run it in a
    thread, beside the event loop."""
    chunk = store.chunks.take_next(record.job_id, settings.lease_seconds)
    if chunk is None:
        return None
    if taken is not None:
        taken(record, chunk)
    return _read_work(store, settings, record, chunk)


def _read_work(store: Store, settings: Settings, record: JobRecord, chunk: int) -> ChunkWork:
    traces = store.chunks.load(record.job_id, chunk)
    offset = chunk * record.chunk_size
    stored = store.results.stored_indexes(record.job_id, range(offset, offset + len(traces)))
    pending = [(offset + i, t) for i, t in enumerate(traces) if offset + i not in stored]
    pending = sessions.with_job_evidence(store.redis, record.job_id, pending)   # a follow-up's earlier turns' documents
    policies = PolicyStore(store.redis, settings.default_sample_rate, settings.max_apps_per_tenant)
    apps = {trace.app for _, trace in pending}
    return ChunkWork(record, chunk, pending, {app: policies.get(record.tenant, app) for app in apps})


async def run_chunk(store: Store, settings: Settings, work: ChunkWork,
                    outcomes: Mapping[str, deque[BatchOutcome]] | None = None, follow: bool = False,
                    taken: Taken | None = None) -> list[int]:
    """Judge a started chunk's pending traces and store their results, on an async Redis client of its own (the
    sync `store` only builds commands). With `follow`, the job's next waiting chunks too, each taken as the one before
    has started its last traces, and `taken` told of each. Answers the chunks it ran, which the caller completes.
    With a batch's `outcomes` (batch delivery), each trace's first judge call is answered by its batch result
    (ragpulse.judges.batches.ReplayProvider)."""
    record = work.record
    client = worker_async_client(settings.redis_url, settings.judge_concurrency, settings.worker_redis_outage_seconds)
    reservations = SpendReservations(client, marker_seconds(settings),
                                     ahead=int(settings.judge_concurrency * defaults.JUDGE_CALLS_RESERVED_AHEAD))
    calls = CallObserver(settings, (record.job_id, record.tenant), reservations)
    following = functools.partial(asyncio.to_thread, take_next_chunk, store, settings, record, taken) if follow \
        else None
    try:
        judge = kinds.make_judge(record.options.judge or settings.default_judge, settings, calls)
        if outcomes is not None and judge is not None:
            judge = replaying(judge, outcomes, retry=settings.batch_retry == "interactive")
        try:
            job = AsyncJobStore(store, client, record.job_id, record.tenant)
            run = ChunkRun(job, settings, work, judge, calls, following)
            await run.run()
            return run.chunks
        finally:
            if judge is not None:
                await judge.aclose()
    finally:
        await client.aclose()


class ChunkRun:
    """Judges a chunk's pending traces, at most RAGPULSE_JUDGE_CONCURRENCY at once, and stores each result."""

    def __init__(self, job: AsyncJobStore, settings: Settings, work: ChunkWork, judge: Judge | None,
                 calls: CallObserver, following: Callable[[], Awaitable[ChunkWork | None]] | None = None) -> None:
        self.job, self.settings, self.work, self.judge, self.calls = job, settings, work, judge, calls
        self.following = following
        """Takes the job's next waiting chunk (None when none waits); None: this run judges its one chunk."""
        self.chunks = [work.chunk]
        """Every chunk this run holds the lease of, in the order it took them."""
        self.failure: BaseException | None = None
        """The first error a trace's task raised: no further trace is started, and `run` raises it."""
        self.options = work.record.options
        self.guard = RunGuard(job, calls, self.options.budget_usd, settings.tenant_daily_budget_usd)
        self.limits = JudgeInputLimits.from_settings(settings)
        self.recording = asyncio.Event()
        """Clear while Redis does not take what this run records: no new trace is judged until it does."""
        self.recording.set()

    async def run(self) -> None:
        """Evaluate every pending trace (and those of the chunks taken after it), then write the judge calls still
        counted in memory."""
        judged = asyncio.Event()
        heartbeat = asyncio.create_task(self._heartbeat(judged))
        writer = asyncio.create_task(self._write_calls(judged))
        try:
            await self._judge_all()
        finally:
            # Both finish the round trip in progress and stop: the writer's write could not say whether it landed if
            # cancelled, and a cancelled heartbeat was seen to lose the cancellation inside the Redis client's
            # timeouts and renew the leases for ever (the run never ended).
            judged.set()
            await asyncio.gather(heartbeat, writer)
        await self.calls.give_back_unused()
        while not self.calls.settled:
            await self._held(lambda: self.calls.write(self.job), "write the judge calls")

    async def _judge_all(self) -> None:
        """Start each trace as a place among the RAGPULSE_JUDGE_CONCURRENCY in flight frees; once a chunk's traces have
        all started, go on with the next chunk taken (the hand-over costs no pause)."""
        bound = asyncio.Semaphore(self.settings.judge_concurrency)
        running: set[asyncio.Task[None]] = set()
        started = time.monotonic()
        work: ChunkWork | None = self.work
        while work is not None and self.failure is None:
            for index, trace in work.pending:
                await bound.acquire()
                if self.failure is not None:
                    bound.release()
                    break
                task = asyncio.create_task(self._one(work, index, trace, bound))
                running.add(task)
                task.add_done_callback(functools.partial(_finished, running))
            work = await self._next(started)
        await asyncio.gather(*running, return_exceptions=True)
        if self.failure is not None:
            raise self.failure

    async def _next(self, started: float) -> ChunkWork | None:
        """The job's next waiting chunk, taken under a lease, or None (not following, chained long enough, a trace
        failed the run, the job failed or was cancelled, or Redis did not answer: the chunks left run as their own RQ
        jobs)."""
        if self.following is None or self.failure is not None:
            return None
        if time.monotonic() - started >= defaults.CHUNK_CHAIN_SECONDS:
            return None
        if await self._held(self.guard.failure, "read the job's failure flag") is not None:
            return None
        try:
            work = await self.following()
        except RETRIED_ERRORS as exc:
            log.warning("job %s: could not take its next chunk, Redis unreachable (%s)", self.job.job_id, exc)
            return None
        if work is not None:
            self.chunks.append(work.chunk)
        return work

    async def _one(self, work: ChunkWork, index: int, trace: Trace, bound: asyncio.Semaphore) -> None:
        """Judge one trace in the place taken for it in `bound`, free the place, store the result."""
        try:
            try:
                await self.recording.wait()
                result = await self._evaluate(work, index, trace)
            finally:
                bound.release()
            counting = functools.partial(self._counting, result=result)
            await self._held(lambda: self.job.record(result, counting=counting), f"store the result of trace {index}")
        except BaseException as exc:
            if self.failure is None:
                self.failure = exc
            raise

    async def _held(self, action: Callable[[], Awaitable[T]], what: str) -> T:
        """Run `action` (idempotent) until Redis answers: past the client's own retries, what it writes is held and
        sent again for one more outage budget (then the error is raised), and no new trace is judged meanwhile."""
        outage = OutageBackoff(self.settings.worker_redis_outage_seconds)
        while True:
            try:
                answer = await action()
                self.recording.set()
                return answer
            except RETRIED_ERRORS as exc:
                self.recording.clear()
                wait = outage.next_wait()
                if wait is None:
                    raise
                log.warning("could not %s of job %s, Redis unreachable (%s); holding it, trying again in %.1f s",
                            what, self.job.job_id, exc, wait)
                await asyncio.sleep(wait)

    def _counting(self, pipe: WriteQueue, result: TraceResult) -> None:
        """The writes applied with a newly stored result: its counts, and its entry in the app's review index."""
        s, tenant = self.settings, self.job.tenant
        queue_result_counts(pipe, s.apps, s.tenants, tenant, result)
        queue_reviewable(pipe, s, tenant, TraceRef(result.trace_id, self.job.job_id, result.index), result)

    async def _evaluate(self, work: ChunkWork, index: int, trace: Trace) -> TraceResult:
        failure = await self._held(self.guard.failure, "read the job's failure flag")
        if failure is not None:
            return failed_result(trace, index, f"job failed: {failure}")
        policy = work.policies[trace.app]
        security = await check_trace_async(trace, datetime.datetime.now(datetime.UTC), policy.max_source_age_days)
        checks, security, sampled, reason = decide(trace, policy, self.options, security)
        judge = self.judge if (trace.answer and sampled) else None
        result = await self._judged(work, index, trace, judge, security)
        if self.judge is not None:
            result.sampled, result.sample_reason = sampled, reason
        result.checks = checks
        stamp(result, self.job.tenant, work.policies[trace.app].review_share(self.settings.review_sample_rate))
        return result

    async def _judged(self, work: ChunkWork, index: int, trace: Trace, judge: Judge | None,
                      security: Security) -> TraceResult:
        if judge is not None and index in work.over_budget:
            return skipped_result(trace, index, OVER_BUDGET_IN_BATCH, self.options, security)
        if judge is not None and kinds.is_billable(judge.name) and index not in work.prepaid:
            reason = await self._held(self.guard.budget_spent, "read the job's spend")
            if reason:
                return skipped_result(trace, index, reason, self.options, security)
        outage = OutageBackoff(self.settings.worker_redis_outage_seconds)
        while True:
            try:
                return await evaluate_trace(trace, index, self.options, judge, self.limits, security)
            except JudgeAuthError as exc:
                self.guard.fail(exc.reason)
                await self.job.finish("failed", exc.reason)
                return failed_result(trace, index, f"job failed: {exc.reason}")
            except RETRIED_ERRORS as exc:
                # Redis (the judge's shared rate limiter) went away mid-trace: not the trace's fault, so it is
                # judged again once Redis is back, unless the outage outlasts RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS.
                wait = outage.next_wait()
                if wait is None:
                    log.exception("trace %s of job %s failed: Redis unreachable", index, self.job.job_id)
                    return failed_result(trace, index, f"{type(exc).__name__}: {exc}")
                log.warning("trace %s of job %s: Redis unreachable (%s); judging it again in %.1f s", index,
                            self.job.job_id, exc, wait)
                await asyncio.sleep(wait)
            except Exception as exc:  # noqa: BLE001 - a failing trace is recorded as data; the chunk goes on
                log.exception("trace %s of job %s failed", index, self.job.job_id)
                return failed_result(trace, index, f"{type(exc).__name__}: {exc}")

    async def _heartbeat(self, judged: asyncio.Event) -> None:
        """Renew the lease of every chunk the run holds, all in one round trip (one after the other, a CPU-bound run
        with twenty chunks chained took longer than a lease to renew them, and the janitor requeued chunks in work)."""
        lease = self.settings.lease_seconds
        await _every(lease / 3, lambda: self.job.renew(self.chunks, lease), "renew the chunks' leases", until=judged)

    async def _write_calls(self, judged: asyncio.Event) -> None:
        await _every(defaults.JUDGE_CALLS_WRITE_SECONDS, lambda: self.calls.write(self.job), "write the judge calls",
                     until=judged)


def _finished(running: set[asyncio.Task[None]], task: asyncio.Task[None]) -> None:
    """Forget a finished trace's task; its error, if any, is the run's (ChunkRun.failure), read here so that asyncio
    does not also log it as never retrieved."""
    running.discard(task)
    if not task.cancelled():
        task.exception()


def decide(trace: Trace, policy: SamplingPolicy, options: BatchOptions,
           security: Security | None = None) -> tuple[list[str], Security, bool, str]:
    """The cheap checks and security checks of a trace (unless given them), and whether it is sampled for judging (and
    why). The security checks run under CHECK_BUDGET_SECONDS, so a batch spends bounded time on any trace."""
    checks = cheap_checks(trace, policy)
    if security is None:
        security = check_trace(trace, datetime.datetime.now(datetime.UTC), policy.max_source_age_days,
                               CHECK_BUDGET_SECONDS)
    sampled, reason = (True, "all") if options.sample != "policy" else judge_for_injection(
        *sampling_decision(trace, policy, checks), policy.always_judge.injection_docs, bool(security.injection_docs))
    if trace.retrieval_answerable is False:   # a dataset item the retrieval filter set aside: never judged
        sampled, reason = False, SET_ASIDE
    return checks, security, sampled, reason


def wants_judge(trace: Trace, work: ChunkWork) -> bool:
    """True when the chunk run would judge this trace (it has an answer and is sampled)."""
    return bool(trace.answer) and decide(trace, work.policies[trace.app], work.record.options)[2]


async def _every(seconds: float, action: Callable[[], Awaitable[None]], what: str,
                 until: asyncio.Event | None = None) -> None:
    """Run `action` every `seconds` until cancelled, or until `until` is set (a turn in progress is finished, no
    other begun); a Redis outage that outlasts the client's own retries skips one turn (logged)."""
    until = until or asyncio.Event()
    while not until.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until.wait(), seconds)
            return
        try:
            await action()
        except RETRIED_ERRORS as exc:
            log.warning("could not %s, Redis unreachable (%s); trying again in %.2f s", what, exc, seconds)
