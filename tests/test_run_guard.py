"""RunGuard.failure: the first read of the job's failure is waited for, later reads are not (issue 28: waiting for
each one held every trace starting meanwhile, and the calls in flight went out in waves)."""

from __future__ import annotations

import asyncio

import pytest
import redis

from ragpulse.config import defaults
from ragpulse.evaluation.guard import RunGuard


class SlowJob:
    """An AsyncJobStore stand-in whose failure reads wait for `answer` to be released, one per read."""

    def __init__(self) -> None:
        self.reads = 0
        self.answers: asyncio.Queue[str | None | BaseException] = asyncio.Queue()

    async def failure(self) -> str | None:
        self.reads += 1
        answer = await self.answers.get()
        if isinstance(answer, BaseException):
            raise answer
        return answer


def guard_on(job: SlowJob) -> RunGuard:
    return RunGuard(job, calls=None, job_budget=None, tenant_daily_budget=None)  # type: ignore[arg-type]


def test_callers_wait_for_the_first_read_and_share_it() -> None:
    async def scenario() -> None:
        job = SlowJob()
        guard = guard_on(job)
        waiting = [asyncio.create_task(guard.failure()) for _ in range(5)]
        await asyncio.sleep(0.01)
        assert not any(task.done() for task in waiting)   # nobody passes before the first answer
        job.answers.put_nowait("cancelled by the user")
        assert await asyncio.gather(*waiting) == ["cancelled by the user"] * 5
        assert job.reads == 1

    asyncio.run(scenario())


def test_a_later_read_runs_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaults, "JOB_FAILURE_CHECK_SECONDS", 0.0)

    async def scenario() -> None:
        job = SlowJob()
        guard = guard_on(job)
        job.answers.put_nowait(None)
        assert await guard.failure() is None
        # The next read is due and Redis is slow: callers go on with the answer they had, without waiting.
        assert await asyncio.wait_for(guard.failure(), 0.5) is None
        assert await asyncio.wait_for(guard.failure(), 0.5) is None
        assert job.reads == 2   # one read out at a time
        job.answers.put_nowait("judge credentials refused")
        await asyncio.sleep(0.01)
        assert await guard.failure() == "judge credentials refused"

    asyncio.run(scenario())


def test_a_failed_read_is_raised_to_the_next_caller_then_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaults, "JOB_FAILURE_CHECK_SECONDS", 3600.0)

    async def scenario() -> None:
        job = SlowJob()
        guard = guard_on(job)
        job.answers.put_nowait(redis.ConnectionError("Redis went away"))
        with pytest.raises(redis.ConnectionError):
            await guard.failure()
        job.answers.put_nowait(None)
        assert await guard.failure() is None   # read again at once, though the check interval is an hour
        assert job.reads == 2

    asyncio.run(scenario())


def test_a_failure_this_run_set_is_known_at_once() -> None:
    async def scenario() -> None:
        job = SlowJob()
        guard = guard_on(job)
        guard.fail("judge credentials refused")
        assert await guard.failure() == "judge credentials refused"
        assert job.reads == 0

    asyncio.run(scenario())
