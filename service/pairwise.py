"""Pairwise A/B judging behind GET /v1/jobs/{candidate}/compare?pairwise=true: find the run of the two jobs by the
judge (or start it, as an RQ job: 2 judge calls per item never run inside a request), and answer its result or that
it is still running."""

from __future__ import annotations

import urllib.parse

import msgspec

from dispatch.pairwise import enqueue_pairwise
from ragpulse.exceptions import Unsupported
from ragpulse.judges import kinds
from ragpulse.judges.pairwise_prompt import PAIRWISE_VERSION
from ragpulse.model.pairwise import Pairwise, PairwisePending
from ragpulse.store.pairwise import PairwiseRuns
from service.context import Services

JUDGE_PATH = "query.judge"


def pairwise_judge(services: Services, named: str | None, batch: str | None) -> str:
    """The LLM judge the pairwise run uses: `named`, else the candidate batch's (`batch`), else the service's default.
    422 naming query.judge when it cannot compare two answers (the local heuristic, none) or is not configured here."""
    name = named or batch or services.settings.default_judge
    whose = ("" if named else " (the candidate batch's judge)" if batch else " (the service's default judge, "
             "RAGPULSE_JUDGE)")
    if not kinds.takes_tasks(name):
        what = "an offline heuristic" if kinds.is_heuristic(name) else "no judge"
        options = " or ".join(f"judge={n}" for n in kinds.task_judges())
        raise Unsupported(
            f"pairwise judging needs an LLM judge: {name}{whose} is {what} and cannot compare two answers; pass "
            f"{options}", [{"path": JUDGE_PATH, "message": f"{name} cannot judge pairwise; use {options}"}])
    reason = kinds.unconfigured(name, services.settings)
    if reason is not None:
        raise Unsupported(f"pairwise judging with {name}{whose}: {reason}", [{"path": JUDGE_PATH, "message": reason}])
    return name


def pairwise_result(services: Services, tenant: str, candidate: str, baseline: str,
                    named: str | None) -> Pairwise | PairwisePending:
    """The ended run's section, or what to answer while it is queued or running (starting it when there is none)."""
    settings, store = services.settings, services.store
    job = store.jobs.get(candidate, tenant)
    judge = pairwise_judge(services, named, job.options.judge)
    runs = PairwiseRuns(store.redis, settings.pairwise_ttl_seconds)
    record, created = runs.find_or_create(
        tenant=tenant, candidate=candidate, baseline=baseline, judge=judge,
        model=kinds.model_for(judge, settings) or "", version=PAIRWISE_VERSION, rq_queue=job.rq_queue)
    if created:
        try:
            enqueue_pairwise(store.redis, settings, record.rq_queue, record.run_id)
        except Exception:
            runs.forget(record)
            raise
    raw = runs.result(record.run_id) if record.status in ("finished", "failed") else None
    if raw is not None:
        return msgspec.json.decode(raw, type=Pairwise)
    query = urllib.parse.urlencode({"baseline": baseline, "pairwise": "true", "judge": judge})
    return PairwisePending(candidate=candidate, baseline=baseline, judge=judge, status=record.status,
                           progress=record.progress, poll=f"/v1/jobs/{candidate}/compare?{query}")
