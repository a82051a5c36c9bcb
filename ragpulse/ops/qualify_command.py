"""`ragpulse judge qualify`: measure a judge on the shipped suite, in this process or on a running service, print
the table and exit on the verdict."""

from __future__ import annotations

import asyncio
import sys
import time

from ragpulse.config.settings import Settings
from ragpulse.ops.client import Client
from ragpulse.exceptions import ConfigError, JudgeAuthError, JudgeNotConfigured
from ragpulse.judges import kinds
from ragpulse.qualification import suite
from ragpulse.qualification.model import Qualification, SplitChoice
from ragpulse.qualification.render import render
from ragpulse.qualification.runner import qualify

QUALIFIED = 0
"""The judge met every floor (ragpulse.qualification.verdict)."""
NOT_QUALIFIED = 1
"""It missed a floor, the run failed, or the service could not run it."""
BAD_ARGS = 2
"""Bad arguments, or a judge that cannot judge here (no credentials, no server)."""
NAME = "ragpulse judge qualify"


def exit_for(result: Qualification) -> int:
    """0 qualified, 1 not."""
    return QUALIFIED if result.verdict == "qualified" else NOT_QUALIFIED


def run_local(judge: str | None, split: SplitChoice, limit: int | None) -> int:
    """Judge the suite in this process with the judge `judge` (default: RAGPULSE_JUDGE) and print the result."""
    try:
        settings = Settings.from_env()
    except ConfigError as exc:
        print(f"{NAME}: {exc}", file=sys.stderr)
        return BAD_ARGS
    name = judge or settings.default_judge
    if not kinds.judges_traces(name):
        print(f"{NAME}: judge {name} judges nothing; name one of {', '.join(kinds.judging_names())}", file=sys.stderr)
        return BAD_ARGS
    problem = kinds.unconfigured(name, settings)
    if problem is not None:
        print(f"{NAME}: {problem}", file=sys.stderr)
        return BAD_ARGS
    items = suite.select(split, limit)
    print(f"judging {len(items)} suite items with {name}", file=sys.stderr)
    try:
        result = asyncio.run(qualify(name, settings, items, split))
    except (JudgeAuthError, JudgeNotConfigured) as exc:
        print(f"{NAME}: {exc.reason}", file=sys.stderr)
        return BAD_ARGS
    print(render(result))
    return exit_for(result)


POLL_SECONDS = 1.0
"""Between two reads of a run's status while `--server` waits for it."""


def run_remote(client: Client, judge: str | None, split: SplitChoice, limit: int | None) -> int:
    """Have the service run the qualification as a job, wait for it, and print the result."""
    body = {"split": split, **({"judge": judge} if judge else {}), **({"limit": limit} if limit else {})}
    started = client.qualify(body)
    print(f"qualification job {started.job_id}: {started.items} items with {started.judge}", file=sys.stderr)
    job = client.qualification(started.job_id or "")
    while job.status in ("queued", "running"):
        time.sleep(POLL_SECONDS)
        job = client.qualification(job.job_id)
    if job.result is None:
        print(f"{NAME}: job {job.job_id} {job.status}: {job.error}", file=sys.stderr)
        return NOT_QUALIFIED
    print(render(job.result))
    return exit_for(job.result)
