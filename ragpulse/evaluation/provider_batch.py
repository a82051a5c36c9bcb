"""Batch delivery of one chunk: its judge requests go to the provider's batch API, the chunk waits without a worker,
and once the batches have ended it runs as any chunk does, its first judge calls answered by the batch results.

A chunk's life: `run_batched` stores at once the traces that need no judge, builds the requests of the others (the
interactive judge's own requests: the provider adapter's `params`), submits them through the judge's BatchApi
(Anthropic Message Batches, OpenAI's Batch API) split at its limits, and leaves the chunk `waiting` with its batch
ids in Redis (ragpulse.store.provider_batches).
Each worker's janitor hands due polls to the queue; `poll` retrieves the batches (cancelling them first when the job
was cancelled) and says when they have ended; the worker then queues the chunk again, and `run_batched` runs it on
the results. Every step reads its state from Redis, so any worker resumes what a killed one left.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator

import msgspec

from ragpulse.config import defaults
from ragpulse.config.prices import call_cost
from ragpulse.config.settings import Settings
from ragpulse.evaluation.chunk import ChunkWork, decide, run_chunk, wants_judge
from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.exceptions import JobNotFound, JudgeError
from ragpulse.judges import kinds
from ragpulse.judges.batches import (
    OUTCOMES, BatchApi, BatchLookup, BatchOutcome, BatchRequest, custom_id, index_of, keyed, split_requests, turns_key,
)
from ragpulse.intake.estimate import estimate_trace_tokens
from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.model.results import Spend, TraceResult
from ragpulse.monitoring import catalog
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.model.trace import Trace
from ragpulse.store import ChunkLeases, Store
from ragpulse.store.spend import SpendLedger
from ragpulse.store.provider_batches import ProviderState, SubmitIntent

log = logging.getLogger("ragpulse.evaluation.provider_batch")
CACHE_TTL = "1h"
"""Prompt-cache TTL the batch requests mark their fixed prefix with: a batch's requests run spread over far more than
the default 5 minutes."""


async def run_batched(store: Store, settings: Settings, work: ChunkWork) -> bool:
    """Advance a started chunk of a batch-delivery job; True when it now waits on the provider (the caller leaves it
    so), False when it has run (the caller completes it)."""
    record = work.record
    state = store.provider.get(record.job_id, work.chunk)
    if state is not None and state.status == "ended":
        try:
            async with _leased(store, settings, work):
                outcomes, prepaid, unusable = await _outcomes(settings, work, state)
            _record_unusable(store, record.job_id, unusable)
            await run_chunk(store, settings, dataclasses.replace(work, prepaid=prepaid), outcomes)
            store.results.drop_awaiting(record.job_id, [index for index, _ in work.pending])
        finally:  # a chunk that fails here ends failed (worker.jobs.chunk_failed): its reservation goes back too
            give_back(store, work)
        return False
    if state is not None and state.status != "submitting":
        return True  # already waiting: its poller owns it
    if store.jobs.failure(record.job_id) is not None:
        await run_chunk(store, settings, work)  # cancelled before it was submitted: every trace fails at once
        return False
    async with _leased(store, settings, work):
        return await _submit(store, settings, work, state or ProviderState())


@contextlib.asynccontextmanager
async def _leased(store: Store, settings: Settings, work: ChunkWork) -> AsyncIterator[None]:
    """Keep the chunk's lease alive meanwhile (a submission or a download of results can outlast it), so the
    janitor never hands the chunk to a second worker that would submit it again."""
    async def renew() -> None:
        while True:
            await asyncio.sleep(settings.lease_seconds / 3)
            with store.redis.pipeline(transaction=False) as pipe:
                ChunkLeases.queue_renew(pipe, work.record.job_id, work.chunk, settings.lease_seconds)
                pipe.execute()

    task = asyncio.create_task(renew())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def _submit(store: Store, settings: Settings, work: ChunkWork, state: ProviderState) -> bool:
    record = work.record
    wanting = [wants_judge(trace, work) for _, trace in work.pending]
    judged = [pending for pending, wanted in zip(work.pending, wanting) if wanted]
    unjudged = [pending for pending, wanted in zip(work.pending, wanting) if not wanted]
    if unjudged:  # retrieval metrics and checks of traces no judge reads are stored at once
        await run_chunk(store, settings, dataclasses.replace(work, pending=unjudged))
    wanted = judged
    if state.planned:  # resumed: the same traces as planned, so the parts not sent yet are the same too
        judged, reserved = judged[:state.planned], state.reserved_usd
    else:
        judged, reserved = _affordable(store, settings, work, judged)
    held = wanted[len(judged):]
    if held:  # past the budget at the batch price: kept with their retrieval metrics, skipped (re-runnable)
        await run_chunk(store, settings, dataclasses.replace(work, pending=held,
                                                             over_budget=frozenset(i for i, _ in held)))
    if not judged:
        return False
    awaiting = [await _awaiting(work, index, trace) for index, trace in judged]
    store.results.store_awaiting(record.job_id, awaiting)
    judge = kinds.make_judge(record.options.judge or settings.default_judge, settings)
    api = kinds.batch_api(record.options.judge or settings.default_judge, settings)
    try:
        requests = _requests(judge.provider, judged, record.options.repeats,  # type: ignore[union-attr]
                             JudgeInputLimits.from_settings(settings))
        parts = split_requests(requests, api.max_requests, api.max_bytes)
        state.counts, state.planned = {"processing": len(requests)}, len(judged)
        if reserved and not state.reserved_usd:  # counted once, with the state that says so
            with store.redis.pipeline(transaction=True) as pipe:
                SpendLedger.queue_add(pipe, record.job_id, record.tenant, _usd(reserved))
                state.reserved_usd = reserved
                store.provider.queue_save(pipe, record.job_id, work.chunk, state)
                pipe.execute()
        for number in range(len(state.ids), len(parts)):  # a resumed submission sends only the parts not sent yet
            batch_id = await _created_unsaved(store, settings, api, state, number)
            if batch_id is None:
                key = uuid.uuid4().hex[:16]
                state.intent = SubmitIntent(key=key, part=number, at=time.time(), requests=len(parts[number]))
                store.provider.save(record.job_id, work.chunk, state)  # before the provider can accept it
                batch_id = await api.create([BatchRequest(keyed(r.custom_id, key), r.params) for r in parts[number]],
                                            key)
            state.ids.append(batch_id)
            state.intent = None
            store.provider.submitted(record.job_id, work.chunk, state, batch_id)
    except JudgeError as exc:  # the provider refused or answered no batch; a dying worker or Redis propagates (resumed)
        await _abandon(store, api, work, state, awaiting, f"provider batch not created: {type(exc).__name__}: {exc}")
        return False
    finally:
        await api.aclose()
        await judge.aclose()  # type: ignore[union-attr]
    state = msgspec.structs.replace(state, status="waiting", delay=settings.batch_poll_min_seconds)
    store.provider.wait(record.job_id, work.chunk, state, state.delay)
    log.info("job %s chunk %s: %d judge requests submitted in provider batches %s", record.job_id, work.chunk,
             len(requests), state.ids)
    return True


async def _created_unsaved(store: Store, settings: Settings, api: BatchApi, state: ProviderState,
                           number: int) -> str | None:
    """The batch of part `number` that a worker created and died before saving, looked up at the provider by the
    intent it saved first; None when it saved none for this part, or the provider has no such batch (then it is
    submitted, under a new key)."""
    intent = state.intent
    if intent is None or intent.part != number:
        return None
    skew = defaults.SUBMIT_LOOKUP_SKEW_SECONDS
    found = await api.find(BatchLookup(
        key=intent.key, requests=intent.requests, after=intent.at - skew,
        before=intent.at + settings.judge_timeout_seconds + skew,
        known=frozenset(store.provider.submitted_since(intent.at - skew))))
    log.warning("part %d of a submission cut off after its intent was saved: %s", number,
                f"provider batch {found} found, not submitted again" if found else "no batch found, submitting it")
    return found


async def _abandon(store: Store, api: BatchApi, work: ChunkWork, state: ProviderState, awaiting: list[TraceResult],
                   reason: str) -> None:
    """A submission that failed (the provider answered an error, or a 200 that is no batch): the parts already
    created are cancelled, the reservation is given back (nothing was judged, so nothing is owed), and each trace
    that was to be judged ends judge_error with `reason`, kept with its retrieval metrics and checks. The traces are
    not sent interactively: the provider just failed, and a budget reserved at the batch price does not cover it."""
    record = work.record
    log.warning("job %s chunk %s: %s", record.job_id, work.chunk, reason)
    for batch_id in state.ids:
        try:
            await api.cancel(batch_id)
        except Exception as exc:  # noqa: BLE001 - best effort: the batch's results are never read either way
            log.warning("job %s chunk %s: cancelling provider batch %s failed: %s", record.job_id, work.chunk,
                        batch_id, exc)
    give_back(store, work)
    store.provider.forget(record.job_id, work.chunk)
    for result in awaiting:
        result.status, result.error = "judge_error", reason
        store.results.record(record.job_id, result)
    store.results.drop_awaiting(record.job_id, [result.index for result in awaiting])
    store.jobs.note_error(record.job_id, reason)
    _count(store, {"create_failed": 1})


def _record_unusable(store: Store, job_id: str, unusable: list[tuple[str, str]]) -> None:
    """Log, count and note on the job the results lines no request of the chunk could use ((reason, what) each)."""
    if not unusable:
        return
    for reason, what in unusable:
        log.warning("job %s: provider batch result ignored (%s): %s", job_id, reason, what)
    by_reason: dict[str, int] = defaultdict(int)
    for reason, _ in unusable:
        by_reason[reason] += 1
    store.jobs.note_error(job_id, f"{len(unusable)} provider batch result lines ignored, the first: "
                                  f"{unusable[0][0]}: {unusable[0][1]}")
    _count(store, by_reason)


def _count(store: Store, by_reason: dict[str, int]) -> None:
    batch = MetricsBatch(())
    for reason, n in by_reason.items():
        batch.inc(catalog.PROVIDER_BATCH_FAILURES, {"reason": reason}, n)
    batch.flush(store.redis)


async def _awaiting(work: ChunkWork, index: int, trace: Trace) -> TraceResult:
    """The interim result of a trace whose judge request goes to the provider: retrieval metrics, cheap checks and
    security checks at once (as the chunk run computes them), the judge's part once the batch answers."""
    checks, security, sampled, reason = decide(trace, work.policies[trace.app], work.record.options)
    result = await evaluate_trace(trace, index, work.record.options, None, security=security)
    result.status, result.checks, result.sampled, result.sample_reason = "awaiting_judge", checks, sampled, reason
    return result


def _affordable(store: Store, settings: Settings, work: ChunkWork,
                judged: list[tuple[int, Trace]]) -> tuple[list[tuple[int, Trace]], float]:
    """The traces to submit, in order, while their estimated cost at the batch price fits what is left of the job's
    and the tenant's budgets (none set: all of them), and that cost. The traces left out are judged (or skipped for
    the budget) when the chunk runs on the results."""
    options, record = work.record.options, work.record
    model = kinds.model_for(options.judge or settings.default_judge, settings) or ""
    costs = [options.repeats * call_cost(settings.judge_prices, model, *estimate_trace_tokens(trace), delivery="batch")
             for _, trace in judged]
    budgets = [b for b in (options.budget_usd, settings.tenant_daily_budget_usd) if b is not None]
    if not budgets:
        return judged, sum(costs)
    job_spent, tenant_spent = store.spend.spent(record.job_id, record.tenant)
    room = min(b - spent for b, spent in ((options.budget_usd, job_spent),
                                           (settings.tenant_daily_budget_usd, tenant_spent)) if b is not None)
    taken, total = 0, 0.0
    while taken < len(judged) and total + costs[taken] <= room:
        total += costs[taken]
        taken += 1
    return judged[:taken], total


def give_back(store: Store, work: ChunkWork) -> None:
    """Once the chunk has run on its batch results: give back the reservation made at submission, once."""
    record = work.record
    state = store.provider.get(record.job_id, work.chunk)
    if state is None or not state.reserved_usd:
        return
    with store.redis.pipeline(transaction=True) as pipe:
        SpendLedger.queue_add(pipe, record.job_id, record.tenant, _usd(-state.reserved_usd))
        state.reserved_usd = 0.0
        store.provider.queue_save(pipe, record.job_id, work.chunk, state)
        pipe.execute()


def _usd(cost: float) -> Spend:
    return Spend(judge_calls=0, input_tokens=0, output_tokens=0, cost_usd=cost)


def _requests(provider, judged, repeats: int, limits: JudgeInputLimits) -> list[BatchRequest]:  # noqa: ANN001
    """The interactive judge's first request of each trace (cut to the judge input limits as it would be), once per
    repeat, with the 1-hour prompt cache."""
    return [BatchRequest(custom_id(index, repeat),
                         provider.params(provider.first_turns(for_judging(trace, limits)[0]), CACHE_TTL))
            for index, trace in judged for repeat in range(repeats)]


async def _outcomes(settings: Settings, work: ChunkWork, state: ProviderState) -> tuple[
        dict[str, deque[BatchOutcome]], frozenset[int], list[tuple[str, str]]]:
    """The batch outcomes of the chunk's pending traces, keyed by the first turns the judge will send for each, in
    repeat order; the indexes of the traces the batch answered; and the results lines no trace of the chunk could use,
    as (reason, what): each is ignored, so one bad line costs no other trace its billed verdict. A trace whose own
    line was unreadable has no outcome, and ends as one the batch did not run (retried, or judge_error saying so)."""
    limits = JudgeInputLimits.from_settings(settings)
    name = work.record.options.judge or settings.default_judge
    judge = kinds.make_judge(name, settings)
    api = kinds.batch_api(name, settings)
    pending = dict(work.pending)
    found: dict[str, list[tuple[str, BatchOutcome]]] = defaultdict(list)
    answered: set[int] = set()
    reported: set[int] = set()
    unusable: list[tuple[str, str]] = []
    try:
        for batch_id in state.ids:
            async for outcome in api.results(batch_id):
                index = index_of(outcome.custom_id)
                if outcome.kind == "unreadable" or index is None or not _in_chunk(work, index):
                    reason = "unreadable_line" if outcome.kind == "unreadable" else "unknown_custom_id"
                    unusable.append((reason, f"batch {batch_id}: {outcome.error or repr(outcome.custom_id)}"))
                    continue
                trace = pending.get(index)
                if trace is None:
                    continue  # stored already (a chunk run again after its worker died)
                turns = judge.provider.first_turns(for_judging(trace, limits)[0])  # type: ignore[union-attr]
                found[turns_key(turns)].append((outcome.custom_id, outcome))
                reported.add(index)
                if outcome.kind == "succeeded":
                    answered.add(index)
        missing = BatchOutcome("", "expired") if not any(r == "unreadable_line" for r, _ in unusable) else \
            BatchOutcome("", "errored", error="no readable result line (the batch results held unreadable lines)")
        for index, trace in work.pending:  # submitted and in no result file (OpenAI leaves out what did not run)
            if index not in reported and wants_judge(trace, work):
                turns = judge.provider.first_turns(for_judging(trace, limits)[0])  # type: ignore[union-attr]
                found[turns_key(turns)] += [(custom_id(index, r), dataclasses.replace(missing, custom_id=custom_id(
                    index, r))) for r in range(work.record.options.repeats)]
    finally:
        await api.aclose()
        await judge.aclose()  # type: ignore[union-attr]
    outcomes = {key: deque(o for _, o in sorted(items, key=lambda item: item[0])) for key, items in found.items()}
    return outcomes, frozenset(answered), unusable


def _in_chunk(work: ChunkWork, index: int) -> bool:
    """True when trace `index` of the job is one of this chunk's (a custom_id naming another was never submitted)."""
    return work.chunk * work.record.chunk_size <= index < (work.chunk + 1) * work.record.chunk_size


async def poll(store: Store, settings: Settings, job_id: str, chunk: int) -> ProviderState | None:
    """Retrieve a waiting chunk's provider batches (cancelling them first when the job was cancelled or failed);
    save their counts and when to poll next, or return the state `ended` for the caller to queue the chunk. None when
    there is nothing to poll (the job is gone, or the chunk was queued already)."""
    state = store.provider.get(job_id, chunk)
    try:
        record = store.jobs.get(job_id)
    except JobNotFound:
        record = None
    if state is None or record is None or state.status in ("ended", "submitting"):
        store.provider.forget(job_id, chunk)
        return None
    api = kinds.batch_api(record.options.judge or settings.default_judge, settings)
    try:
        if state.status == "waiting" and record.status == "failed":
            for batch_id in state.ids:
                await api.cancel(batch_id)
            state.status = "canceling"
            log.info("job %s chunk %s: provider batches %s cancelled", job_id, chunk, state.ids)
        found = [await api.retrieve(batch_id) for batch_id in state.ids]
    except Exception as exc:  # noqa: BLE001 - a poll that fails is tried again later; the batch id is kept
        log.warning("job %s chunk %s: polling provider batches %s failed: %s", job_id, chunk, state.ids, exc)
        found = None
    finally:
        await api.aclose()
    if found is not None:
        state.counts = {name: sum(b.counts.get(name, 0) for b in found) for name in OUTCOMES}
        if all(b.status == "ended" for b in found):
            state.status = "ended"
            return state
    state.delay = min(settings.batch_poll_max_seconds, max(settings.batch_poll_min_seconds, state.delay * 2))
    with store.redis.pipeline(transaction=True) as pipe:
        store.provider.queue_save(pipe, job_id, chunk, state)
        store.provider.queue_due(pipe, job_id, chunk, state.delay)
        pipe.execute()
    return state
