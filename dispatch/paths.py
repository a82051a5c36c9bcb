"""The dotted paths of the worker's RQ functions and the formats of RQ job ids.

Jobs are enqueued by these names, never by import, so the API never loads worker code.
"""

from __future__ import annotations

import uuid

EVALUATE_CHUNK = "worker.jobs.evaluate_chunk"
"""Dotted path of the worker function that evaluates one chunk."""

CHUNK_FAILED = "worker.jobs.chunk_failed"
"""Dotted path of the worker's RQ failure callback of a chunk job."""

DELIVER_CALLBACK = "worker.jobs.deliver_callback"
"""Dotted path of the worker function that POSTs a job's completion callback."""

POLL_PROVIDER_BATCH = "worker.jobs.poll_provider_batch"
"""Dotted path of the worker function that polls one chunk's provider batches (batch delivery)."""

CALLBACK_FAILED = "worker.jobs.callback_failed"
"""Dotted path of the RQ failure callback run when the last delivery attempt failed."""


def requeue_suffix() -> str:
    """A fresh suffix for the RQ job ids of requeued chunks, so a requeue never collides with the RQ job of the
    attempt it replaces."""
    return f"-r{uuid.uuid4().hex[:8]}"


def chunk_job_id(job_id: str, chunk: int, suffix: str = "") -> str:
    """RQ job id of one chunk of a job (`suffix` from requeue_suffix for a requeue, else empty)."""
    return f"{job_id}-{chunk}{suffix}"


def callback_job_id(job_id: str) -> str:
    """A fresh RQ job id for one delivery of a job's completion callback."""
    return f"{job_id}-callback-{uuid.uuid4().hex[:6]}"

GENERATE_DATASET = "worker.jobs.generate_dataset"
"""Dotted path of the worker function that runs one synthetic dataset generation job."""

GENERATION_FAILED = "worker.jobs.generation_failed"
"""Dotted path of the RQ failure callback of a generation job."""

JUDGE_PAIRWISE = "worker.jobs.judge_pairwise"
"""Dotted path of the worker function that runs one pairwise A/B run."""

PAIRWISE_FAILED = "worker.jobs.pairwise_failed"
"""Dotted path of the RQ failure callback of a pairwise run."""


def pairwise_job_id(run_id: str) -> str:
    """RQ job id of a pairwise run."""
    return f"pairwise-{run_id}"


def poll_job_id(job_id: str, chunk: int) -> str:
    """A fresh RQ job id for one poll of a chunk's provider batches."""
    return f"{job_id}-{chunk}-poll-{uuid.uuid4().hex[:6]}"

QUALIFY_JUDGE = "worker.jobs.qualify_judge"
"""Dotted path of the worker function that runs one judge qualification."""

QUALIFICATION_FAILED = "worker.jobs.qualification_failed"
"""Dotted path of the RQ failure callback of a qualification run."""
