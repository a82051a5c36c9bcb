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
        self._known = False
        """True once a read of the job's failure has come back, and the latest did not fail."""
        self._read: asyncio.Future[None] | None = None
        """The read of the job's failure in progress (or the last one)."""

    def fail(self, reason: str) -> None:
        """This run failed the job: every later trace of the run sees it at once."""
        self._failure = reason

    async def failure(self) -> str | None:
        """The job's error once it has failed, else None. Read from Redis at most every JOB_FAILURE_CHECK_SECONDS
        (another worker may fail the job); known at once when this run failed it.

        Only the first read is waited for (traces starting together share it, and none passes before it is in: a job
        cancelled before its chunk runs judges none of them), and one after a read that failed (Redis's error is
        raised to the caller). Later reads run in the background while traces go on with the answer before: waiting
        for each one held every trace starting meanwhile, so the calls in flight went out in waves (issue 28)."""
        if self._failure is not None:
            return self._failure
        now = time.monotonic()
        if now - self._failure_read_at >= defaults.JOB_FAILURE_CHECK_SECONDS and (
                self._read is None or self._read.done()):
            self._failure_read_at = now
            self._read = asyncio.ensure_future(self._refresh())
            self._read.add_done_callback(_retrieved)
        if not self._known and self._read is not None:
            try:
                await asyncio.shield(self._read)
            except BaseException:
                self._failure_read_at = float("-inf")   # read again by the next caller
                raise
        return self._failure

    async def _refresh(self) -> None:
        try:
            failure = await self.job.failure()
        except BaseException:
            self._known = False
            raise
        if self._failure is None:  # fail() may have come while the read was out
            self._failure = failure
        self._known = True

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


def _retrieved(read: asyncio.Future[None]) -> None:
    """Mark a background read's error as seen (the next caller raises it), so asyncio does not log it as lost."""
    if not read.cancelled():
        read.exception()
