"""POST /v1/batches: validate, store and enqueue a batch; answer 202 with the job id (or 200 with a dry run)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Annotated

import anyio.to_thread
import msgspec
from litestar import Controller, Response, post
from litestar.params import Parameter

from dispatch.queues import pick_queue, rq_queue_name
from ragpulse.config import keys
from ragpulse.store.atomic import Group, queued_commands, take_tokens
from ragpulse.reporting.callbacks import matching_entry
from ragpulse.intake.estimate import Estimate, estimate_batch
from ragpulse.judges import kinds
from ragpulse.exceptions import AlreadyAnswered, CallbackRejected, InvalidBody, RateLimited
from ragpulse.intake.binding import bind_dataset
from ragpulse.intake.decode import decode_batch
from ragpulse.model.results import Accepted, DataWarning
from ragpulse.monitoring.recorder import queue_received_counts
from ragpulse.intake.warnings import data_quality_warnings
from ragpulse.config.settings import Settings
from service.context import Call
from service.errors import over_ingest_rate
from service.idempotency import IdempotencyKey, kept_answer, replay

DryRunFlag = Annotated[bool, Parameter(description=(
    "true: answer 200 with the estimated judge calls, tokens and cost of judging the batch, and enqueue nothing."))]

INLINE_BODY_BYTES = 256 * 1024
"""Bodies up to this size are decoded on the event loop (a thread hop costs more than the work); larger ones,
whose decoding takes milliseconds, in a worker thread so the loop keeps serving other requests. The Redis write
is awaited on the loop either way."""


def check_callback_url(url: str, settings: Settings) -> None:
    """422 naming `$.options.callback_url` when callbacks are off or the URL is not allowlisted."""
    if not settings.callback_secret or not settings.callback_allowlist:
        reason = "callbacks are not configured (RAGPULSE_CALLBACK_SECRET and RAGPULSE_CALLBACK_ALLOWLIST)"
    else:
        try:
            matching_entry(url, settings.callback_allowlist, settings.callback_allow_http)
            return
        except CallbackRejected as exc:
            reason = str(exc)
    raise InvalidBody("callback_url is not allowed", [{"path": "$.options.callback_url", "message": reason}])


def check_delivery(delivery: str, judge: str, settings: Settings) -> None:
    """422 naming `$.options.delivery` when batch delivery is asked of a judge that offers no batch API here (the
    local and none judges call no provider: they ignore it)."""
    reason = kinds.batch_refusal(judge, settings) if delivery == "batch" else None
    if reason is not None:
        raise InvalidBody("batch delivery is not available", [{"path": "$.options.delivery", "message": reason}])


def check_judge_configured(named: str | None, judge: str, settings: Settings) -> None:
    """422 naming `$.options.judge` when the batch's judge (`named`, else the service's default `judge`) cannot judge
    here, with the service setting to set: accepted, every trace would end a judge error one by one."""
    reason = kinds.unconfigured(judge, settings)
    if reason is None:
        return
    if named is None:
        reason = f"the service's default judge (RAGPULSE_JUDGE) is {judge}, but {reason}"
    raise InvalidBody("the judge is not configured", [{"path": "$.options.judge", "message": reason}])


class DryRun(msgspec.Struct, kw_only=True):
    """POST /v1/batches?dry_run=true: what judging the batch would cost; nothing is enqueued."""

    dry_run: bool = True
    trace_count: int
    estimate: Estimate


@dataclass
class StagedBatch:
    """A checked batch whose Redis writes are built but not yet applied."""

    writes: Group
    accepted: Accepted
    warning_codes: list[str]


def stage_batch(body: bytes, call: Call, dry_run: bool) -> StagedBatch | Response:
    """Decode and check one batch and build every Redis write that stores and enqueues it (applied by the caller).

    Answers the dry run itself: a Response with the estimate, nothing to write.
    """
    settings, store = call.settings, call.store
    batch = decode_batch(body, settings.max_traces)
    dataset = bind_dataset(batch, call.tenant, call.services.datasets)
    options = batch.options
    if dataset is not None and options.queue is None:
        # An eval set run is a batch, judged whole, even when its items came from production queries.
        options.queue = "batch"
    if options.callback_url:
        check_callback_url(options.callback_url, settings)
    renamed = kinds.deprecation(options.judge)
    named = options.judge = kinds.canonical(options.judge) if options.judge else None
    options.judge = named or settings.default_judge
    check_delivery(options.delivery, options.judge, settings)
    if dry_run:  # what judging would cost is worth knowing before the judge is configured
        estimate = estimate_batch(batch.traces, options, kinds.model_for(options.judge, settings),
                                  settings.judge_prices)
        return Response(DryRun(trace_count=len(batch.traces), estimate=estimate), status_code=200)
    check_judge_configured(named, options.judge, settings)
    warnings = data_quality_warnings(batch.traces, options, kinds.model_for(options.judge, settings))
    if named is None and not kinds.judges_traces(options.judge):
        answered = sum(1 for trace in batch.traces if trace.answer)
        warnings.append(DataWarning(code="not_judged", message=kinds.NOT_JUDGED, count=answered,
                                    total=len(batch.traces)))
    if renamed:
        warnings.append(DataWarning(code="judge_renamed", message=renamed, count=len(batch.traces),
                                    total=len(batch.traces)))
    job_id = uuid.uuid4().hex
    queue = options.queue = pick_queue(batch.traces, options)
    options.sample = options.sample or ("policy" if queue == "online" else "all")
    with store.redis.pipeline(transaction=True) as pipe:
        rq_queue = rq_queue_name(settings, queue)
        chunks = store.stage_job(pipe, job_id, call.tenant, batch.traces, options, warnings,
                                 call.services.enqueuer.chunk_size(rq_queue, len(batch.traces)), queue, rq_queue,
                                 dataset)
        call.services.enqueuer.enqueue(pipe, rq_queue, job_id, range(chunks))
        queue_received_counts(pipe, settings.apps, settings.tenants, call.tenant, batch.traces)
        writes = queued_commands(pipe)
    if settings.tenant_traces_per_second:  # the batch's traces are paid for in the same script that writes it
        writes.insert(0, take_tokens(keys.tenant_ingest_bucket(call.tenant), len(batch.traces),
                                     settings.tenant_traces_per_second, settings.tenant_traces_burst))
    accepted = Accepted(job_id=job_id, status_url=f"/v1/jobs/{job_id}", trace_count=len(batch.traces),
                        warnings=warnings)
    return StagedBatch(writes, accepted, [w.code for w in warnings])


async def accept_batch(body: bytes, call: Call, dry_run: bool, key: str | None = None) -> Accepted | Response:
    """Stage the batch, then apply its writes atomically, together with those of concurrent requests; with an
    Idempotency-Key `key` (a dry run ignores it), keep the answer with them, or replay the one kept for that key."""
    # A batch bound to a dataset reads its items from Redis while staging (a blocking read): never on the loop.
    small = len(body) <= INLINE_BODY_BYTES and b'"dataset"' not in body
    if small:
        staged = stage_batch(body, call, dry_run)
    else:
        staged = await anyio.to_thread.run_sync(stage_batch, body, call, dry_run)
    if isinstance(staged, Response):
        return staged
    kept = await kept_answer(key, call.tenant, "batches", body, staged.accepted, 202, call.settings, on_loop=small)
    try:
        await call.services.committer.apply(staged.writes if kept is None else kept.guard(staged.writes, call.tenant),
                                            alone=not small)
    except AlreadyAnswered as exc:
        return replay(exc)
    except RateLimited as exc:
        raise over_ingest_rate(exc, call.tenant, call.settings, staged.accepted.trace_count) from exc
    metrics = call.services.api_metrics
    metrics.batches.inc()
    for code in staged.warning_codes:
        metrics.data_warnings.labels(code=code).inc()
    return kept.response() if kept else staged.accepted


class BatchController(Controller):
    """Batch ingestion."""

    path = "/v1/batches"
    tags = ["batches"]

    @post("/", status_code=202, summary="Submit a batch of traces for evaluation")
    async def create(self, body: bytes, call: Call, dry_run: DryRunFlag = False,
                     idempotency_key: IdempotencyKey = None) -> Accepted | Response:
        """Accept a batch: 400 on malformed JSON, 422 listing every schema violation, 413 over the limits, 429 (with
        Retry-After) when the tenant is over its ingest rate (RAGPULSE_TENANT_TRACES_PER_SECOND).

        With `?dry_run=true`, answer 200 with the estimated judge calls, tokens and cost, and enqueue nothing.

        With an `Idempotency-Key`, a retry of an accepted batch gets its first answer (the same job) again and creates
        no second job (RAGPULSE_IDEMPOTENCY_TTL_SECONDS); the same key with another body is 422. A dry run ignores it.
        """
        return await accept_batch(body, call, dry_run, idempotency_key)
