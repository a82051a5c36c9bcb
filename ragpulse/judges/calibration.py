"""Calibrate a judge against human labels: accuracy and Cohen's kappa, with an interval and a warning below 0.6."""

from __future__ import annotations

from collections.abc import Sequence

from ragpulse.config import defaults
from ragpulse.exceptions import InvalidBody
from ragpulse.model.results import TraceResult
from ragpulse.metrics.agreement import accuracy, cohens_kappa, kappa_interval
from ragpulse.model.calibration import Agreement, Calibration, CalibrationRequest

KAPPA_RELIABLE = defaults.KAPPA_RELIABLE
"""Below this kappa the judge is unreliable for this data (the field's usual threshold)."""


MAX_UNMATCHED_ERRORS = 100
"""A 422 for labels that match nothing names at most this many of them."""


def calibrate(job_id: str, request: CalibrationRequest, results: Sequence[TraceResult]) -> Calibration:
    """Compare the judge's faithful/hallucinated call (and claim verdicts, where labelled) with human labels.

    InvalidBody (422) naming each label's `$.labels[i].trace_id` when no label matches a judged trace of the job:
    there is nothing to calibrate, and an all-null calibration must not replace a stored one. Labels that match
    nothing beside labels that do are listed in `unmatched_trace_ids`.
    """
    judged = {r.trace_id: r for r in results if r.generation is not None}
    pairs = [(label, judged[label.trace_id]) for label in request.labels if label.trace_id in judged]
    unmatched = [label.trace_id for label in request.labels if label.trace_id not in judged]
    if not pairs:
        raise _nothing_matched(job_id, request, results)
    traces = _agreement([lab.faithful for lab, _ in pairs], [not r.generation.hallucinated for _, r in pairs])
    human_claims, judge_claims = [], []
    for label, result in pairs:
        for claim in label.claims or ():
            if claim.index < len(result.claims):
                human_claims.append(claim.verdict)
                judge_claims.append(result.claims[claim.index].verdict)
    claims = _agreement(human_claims, judge_claims)
    judges = {r.judge for _, r in pairs}
    return Calibration(job_id=job_id, judge=", ".join(sorted(j for j in judges if j)) or None, traces=traces,
                       claims=claims, unmatched_trace_ids=unmatched[:1000], warning=_warning(traces))


def _agreement(human: list, judge: list) -> Agreement | None:
    if not human:
        return None
    return Agreement(n=len(human), accuracy=accuracy(human, judge), kappa=cohens_kappa(human, judge),
                     kappa_ci95=kappa_interval(human, judge))


def _nothing_matched(job_id: str, request: CalibrationRequest, results: Sequence[TraceResult]) -> InvalidBody:
    by_id = {r.trace_id: r for r in results}
    errors = []
    for i, label in enumerate(request.labels[:MAX_UNMATCHED_ERRORS]):
        result = by_id.get(label.trace_id)
        if result is None:
            why = f"trace {label.trace_id} is not in job {job_id}"
        else:
            detail = result.error or ("not judged" if result.judge is None else "no verdict")
            why = f"trace {label.trace_id} has no judge verdict (status {result.status}: {detail})"
        errors.append({"path": f"$.labels[{i}].trace_id", "message": why})
    shown = "" if len(request.labels) <= MAX_UNMATCHED_ERRORS else f" (the first {MAX_UNMATCHED_ERRORS} listed)"
    return InvalidBody(f"none of the {len(request.labels)} labels matches a judged trace of job {job_id}{shown}; "
                       "the stored calibration is unchanged", errors)


def _warning(traces: Agreement | None) -> str | None:
    if traces is None:
        return "no labelled trace matched a judged trace of this job"
    if traces.kappa < KAPPA_RELIABLE:
        return (f"Cohen's kappa {below(traces.kappa, KAPPA_RELIABLE)} < {KAPPA_RELIABLE}: the judge is unreliable "
                "on this data; do not trust its generation metrics without review")
    return None


def below(value: float, threshold: float) -> str:
    """`value` (< threshold) with 3 decimals, or as many more as it takes to print below the threshold: 0.598,
    0.5996, never a rounded 0.600 that would contradict the comparison."""
    for digits in range(3, 17):
        text = f"{value:.{digits}f}"
        if float(text) < threshold:
            return text
    return repr(value)
