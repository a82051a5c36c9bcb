"""POST /v1/batches: validate, store and enqueue a batch; answer 202 with the job id."""

from __future__ import annotations

import uuid

from litestar import Controller, post
from rq import Callback, Queue

from ragpulse.ingest import decode_batch
from ragpulse.jobs import Accepted
from ragpulse.quality import data_quality_warnings
from ragpulse.settings import Settings
from ragpulse.store import Store
from ragpulse.telemetry import ApiMetrics

EVALUATE_CHUNK = "worker.jobs.evaluate_chunk"
"""Dotted path of the worker function; the API never imports worker code."""
CHUNK_FAILED = "worker.jobs.chunk_failed"
"""Dotted path of the worker's failure callback."""
CHUNK_TIMEOUT_SECONDS = 600
"""Longest a chunk may run before RQ kills it (its traces are then recorded as failed)."""


class BatchController(Controller):
    """Batch ingestion."""

    path = "/v1/batches"
    tags = ["batches"]

    @post("/", status_code=202, sync_to_thread=True, summary="Submit a batch of traces for evaluation")
    def create(self, body: bytes, tenant: str, store: Store, queue: Queue, settings: Settings,
               api_metrics: ApiMetrics) -> Accepted:
        """Accept a batch: 400 on malformed JSON, 422 listing every schema violation, 413 over the limits."""
        batch = decode_batch(body, settings.max_traces)
        if batch.options.judge is None:
            batch.options.judge = settings.default_judge
        warnings = data_quality_warnings(batch.traces, batch.options, settings.judge_model)
        job_id = uuid.uuid4().hex
        with store.redis.pipeline(transaction=True) as pipe:
            chunks = store.stage_job(pipe, job_id, tenant, batch.traces, batch.options, warnings, settings.chunk_size)
            queue.enqueue_many([_chunk_job(job_id, n, settings) for n in range(chunks)], pipeline=pipe)
            pipe.execute()
        api_metrics.batches.inc()
        api_metrics.traces.inc(len(batch.traces))
        for warning in warnings:
            api_metrics.data_warnings.labels(code=warning.code).inc()
        return Accepted(job_id=job_id, status_url=f"/v1/jobs/{job_id}", trace_count=len(batch.traces),
                        warnings=warnings)


def _chunk_job(job_id: str, chunk: int, settings: Settings):  # noqa: ANN202 - rq.queue.EnqueueData
    return Queue.prepare_data(
        EVALUATE_CHUNK, args=(job_id, chunk), job_id=f"{job_id}-{chunk}", timeout=CHUNK_TIMEOUT_SECONDS,
        result_ttl=settings.result_ttl_seconds, failure_ttl=settings.result_ttl_seconds,
        ttl=settings.result_ttl_seconds, on_failure=Callback(CHUNK_FAILED),
    )
