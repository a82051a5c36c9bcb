"""What stops a chunk run from judging its next trace: the job failed, or a budget ran out."""

from __future__ import annotations

import asyncio
import time

from ragpulse.config import defaults
from ragpulse.evaluation.budget import budget_exhausted
from ragpulse.evaluation.calls import CallObserver
from ragpulse.store.aio import AsyncJobStore


class RunGuard:
    """Asked before each trace of a chunk run; reads Redis without blocking the event loop, and only as often as the
    answer can change."""

    def __init__(self, job: AsyncJobStore, calls: CallObserver, job_budget: float | None,
                 tenant_daily_budget: float | None) -> None:
        self.job, self.calls = job, calls
        self.job_budget, self.tenant_daily_budget = job_budget, tenant_daily_budget
        self._failure: str | None = None
        self._failure_read_at = float("-inf")
        self._read: asyncio.Future[str | None] | None = None
        """The latest read of the job's failure: every trace asking while it is out waits for it."""

    def fail(self, reason: str) -> None:
        """This run failed the job: every later trace of the run sees it at once."""
        self._failure = reason

    async def failure(self) -> str | None:
        """The job's error once it has failed, else None. Read from Redis at most every JOB_FAILURE_CHECK_SECONDS
        (another worker may fail the job); known at once when this run failed it."""
        now = time.monotonic()
        if self._failure is None and now - self._failure_read_at >= defaults.JOB_FAILURE_CHECK_SECONDS:
            self._failure_read_at = now
            self._read = asyncio.ensure_future(self.job.failure())
        if self._failure is None and self._read is not None:
            # Traces starting together (a chunk run's first ones, all at once) share the read, none passes before
            # it is in: a job cancelled before its chunk runs (batch delivery's results) judges none of them.
            try:
                failure = await asyncio.shield(self._read)
            except BaseException:
                self._read, self._failure_read_at = None, float("-inf")   # read again by the next caller
                raise
            if self._failure is None:  # fail() may have come while the read was out
                self._failure = failure
        return self._failure

    async def budget_spent(self) -> str | None:
        """Which budget ran out, or None: read before every billable call, when there is a budget at all. Every
        worker's calls count from their reservation, before they are sent, at their estimated cost; this run's
        settlements to the actual cost not yet written count too, other workers' within JUDGE_CALLS_WRITE_SECONDS. A
        run overshoots by its traces in flight at most (the calls of traces that passed this check)."""
        if self.job_budget is None and self.tenant_daily_budget is None:
            return None
        job_spent, tenant_spent = await self.job.spent()
        unwritten = self.calls.unwritten_cost
        return budget_exhausted(job_spent + unwritten, tenant_spent + unwritten, self.job_budget,
                                self.tenant_daily_budget)
