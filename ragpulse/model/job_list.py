"""GET /v1/jobs: one page of the tenant's jobs, newest first."""

from __future__ import annotations

import msgspec

from ragpulse.model.environment import StoredEnvironment
from ragpulse.model.results import JobStatus, Progress
from ragpulse.model.trace import DatasetRef


class JobLinks(msgspec.Struct, kw_only=True):
    """Where to read the job: the JSON report (API, Bearer key) and its page (web UI, session cookie)."""

    report: str
    page: str


class JobSummary(msgspec.Struct, kw_only=True):
    """One job of the list."""

    job_id: str
    status: JobStatus
    created_at: str
    finished_at: str | None
    progress: Progress
    """Trace counts: total, done, failed, skipped."""
    apps: list[str]
    """The apps its traces name, sorted (empty for jobs created before apps were recorded)."""
    run: str | None
    variant: str
    environment: StoredEnvironment
    """The batch's `options.environment`: only a production job's traces reach the app's monitor and alerts."""
    judge: str | None
    """The batch's `options.judge`; null means the service's default judge."""
    dataset: DatasetRef | None = None
    """The dataset version the batch ran (`{name, version}`); null for a batch bound to none."""
    delivery: str = "interactive"
    """The batch's `options.delivery`: `interactive` or `batch` (the provider's batch API)."""
    links: JobLinks


class JobFilter(msgspec.Struct, kw_only=True, frozen=True):
    """Filters of GET /v1/jobs; None matches every job."""

    app: str | None = None
    run: str | None = None
    status: JobStatus | None = None


class JobsPage(msgspec.Struct, kw_only=True):
    """One page of jobs; pass next_cursor back for the next. With filters, a page may hold fewer than `limit` items
    while next_cursor is not null (each page reads a bounded stretch of the index)."""

    items: list[JobSummary]
    next_cursor: str | None
