"""Whether two jobs' judged metrics may be read side by side: each job's judge, model and prompt version and its
judged share, read off its results, and the two refusals compare and gate make.

- A judge mismatch: both jobs have judged traces but not by the same judge (an offline heuristic counts as one judge
  whatever its name), model or prompt version. A change in a judged metric would then measure the judges.
- A judged share below JUDGED_SHARE_FLOOR on either side: that side's judged metrics leave the tested family, each
  delta saying why. The retrieval metrics are still compared; the caller refuses outright (409, exit 2) only when a
  judged metric was asked for by name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence

from ragpulse.config import defaults
from ragpulse.judges import kinds
from ragpulse.metrics.registry import needs_judge
from ragpulse.model.compare import RunInfo
from ragpulse.model.judging import Judging
from ragpulse.model.results import TraceResult

Identity = tuple[str, str | None, str | None]
SENT_UNJUDGED = ("judge_error", "skipped_budget", "failed")
"""Statuses of a trace that counts as sent to the judge without a judgment, when its job has a judge."""


def judging(results: Sequence[TraceResult]) -> Judging:
    """The judge, model and prompt version of most of the job's judged traces (of its judge errors when none was
    judged), and how many of the traces sent to the judge were judged."""
    judged = Counter(_identity(r) for r in results if r.generation is not None)
    tried = judged or Counter(_identity(r) for r in results if r.judge is not None)
    judged.pop(None, None)
    tried.pop(None, None)
    if not tried:
        return Judging(judge=None, model=None, prompt_version=None, judged=0, sent=0)
    (name, model, prompt), _ = tried.most_common(1)[0]
    sent = sum(1 for r in results if r.generation is not None or r.judge is not None or r.status in SENT_UNJUDGED)
    return Judging(judge=name, model=model, prompt_version=prompt, heuristic=_heuristic(name),
                   judged=sum(judged.values()), sent=sent)


def _identity(result: TraceResult) -> Identity | None:
    """(judge, model, prompt version) of a trace's first judgment, else of its first failed call, else its judge."""
    for source in (result.judgments, result.failed_calls):
        if source:
            return source[0].judge, source[0].model, source[0].prompt_version
    return None if result.judge is None else (result.judge, None, None)


def _heuristic(name: str) -> bool:
    """The capability, for a judge this service still declares; a judge no longer declared is no heuristic here."""
    return name in kinds.JUDGES and kinds.is_heuristic(name)


def _key(side: Judging) -> tuple[str | None, str | None, str | None]:
    """What must be equal on both sides: every heuristic is one judge, whatever name it ran under."""
    return ("heuristic" if side.heuristic else side.judge), side.model, side.prompt_version


def judge_mismatch(baseline: RunInfo, candidate: RunInfo) -> str | None:
    """Why the two jobs' judged metrics measure different judges, naming both sides' judge, model and prompt
    version; None when they share them, or when either has no judged trace (no judged metric to compare)."""
    b, c = baseline.judging, candidate.judging
    if b is None or c is None or not (b.judged and c.judged) or _key(b) == _key(c):
        return None
    return (f"the baseline job {baseline.job_id} was judged by {b.describe()}, the candidate job {candidate.job_id} "
            f"by {c.describe()}: a change in a judged metric would measure the judges as much as the system")


def below_floor(role: str, run: RunInfo) -> str | None:
    """`baseline job X: 0 of 65 traces judged (floor 90%)` when the side sent traces to a judge and got fewer than
    the floor back judged; None otherwise."""
    side = run.judging
    if side is None or side.share is None or side.share >= defaults.JUDGED_SHARE_FLOOR:
        return None
    return (f"{role} job {run.job_id}: {side.judged} of {side.sent} traces judged "
            f"(floor {defaults.JUDGED_SHARE_FLOOR:.0%})")


def refusals(baseline: RunInfo, candidate: RunInfo) -> list[str]:
    """Each side whose judged share is below the floor, said as below_floor says it."""
    return [why for why in (below_floor("baseline", baseline), below_floor("candidate", candidate)) if why]


def judged_keys(keys: Collection[str]) -> list[str]:
    """The keys, in order, whose metric needs a judge."""
    return [key for key in keys if needs_judge(key)]


def comparable(job: Judging, other: Judging) -> bool:
    """True when `other` may serve as `job`'s baseline for its judged metrics: judged enough, and by the same judge,
    model and prompt version when both were judged (what the job page's default baseline looks for)."""
    job_run = RunInfo(job_id="", run=None, variant="rag", judging=job)
    other_run = RunInfo(job_id="", run=None, variant="rag", judging=other)
    return below_floor("baseline", other_run) is None and judge_mismatch(other_run, job_run) is None
