"""POST /v1/batches: validate, store and enqueue a batch; answer 202 with the job id (or 200 with a dry run)."""

from __future__ import annotations

import uuid
from collections import Counter

from litestar import Controller, Response, post

from ragpulse.callbacks import CallbackRejected, matching_entry
from ragpulse.cost import estimate_batch
from ragpulse.exceptions import InvalidBody
from ragpulse.ingest import decode_batch
from ragpulse.jobs import Accepted
from ragpulse.monitoring.catalog import TRACES_RECEIVED
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.quality import data_quality_warnings
from ragpulse.settings import Settings
from ragpulse.store import Store
from ragpulse.telemetry import ApiMetrics
from service.queueing import enqueue_chunks, pick_queue, rq_queue_name


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


class BatchController(Controller):
    """Batch ingestion."""

    path = "/v1/batches"
    tags = ["batches"]

    @post("/", status_code=202, sync_to_thread=True, summary="Submit a batch of traces for evaluation")
    def create(self, body: bytes, tenant: str, store: Store, settings: Settings, api_metrics: ApiMetrics,
               dry_run: bool = False) -> Accepted | Response:
        """Accept a batch: 400 on malformed JSON, 422 listing every schema violation, 413 over the limits.

        With `?dry_run=true`, answer 200 with the estimated judge calls, tokens and cost, and enqueue nothing.
        """
        batch = decode_batch(body, settings.max_traces)
        if batch.options.callback_url:
            check_callback_url(batch.options.callback_url, settings)
        if batch.options.judge is None:
            batch.options.judge = settings.default_judge
        if dry_run:
            estimate = estimate_batch(batch.traces, batch.options, settings.judge_model, settings.judge_prices)
            return Response({"dry_run": True, "trace_count": len(batch.traces), "estimate": estimate}, status_code=200)
        warnings = data_quality_warnings(batch.traces, batch.options, settings.judge_model)
        job_id = uuid.uuid4().hex
        queue = batch.options.queue = pick_queue(batch.traces, batch.options)
        batch.options.sample = batch.options.sample or ("policy" if queue == "online" else "all")
        received = MetricsBatch(settings.apps)
        for app, count in Counter(t.app for t in batch.traces).items():
            received.inc(TRACES_RECEIVED, {"app": received.app(app)}, count)
        with store.redis.pipeline(transaction=True) as pipe:
            rq_queue = rq_queue_name(settings, queue)
            chunks = store.stage_job(pipe, job_id, tenant, batch.traces, batch.options, warnings,
                                     settings.chunk_size, queue, rq_queue)
            enqueue_chunks(pipe, store.redis, settings, rq_queue, job_id, range(chunks))
            received.queue_onto(pipe)
            pipe.execute()
        api_metrics.batches.inc()
        api_metrics.traces.inc(len(batch.traces))
        for warning in warnings:
            api_metrics.data_warnings.labels(code=warning.code).inc()
        return Accepted(job_id=job_id, status_url=f"/v1/jobs/{job_id}", trace_count=len(batch.traces),
                        warnings=warnings)
