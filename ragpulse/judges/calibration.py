"""Calibrate a judge against human labels: accuracy and Cohen's kappa, with an interval and a warning below 0.6."""

from __future__ import annotations

from collections.abc import Sequence

from ragpulse.model.results import TraceResult
from ragpulse.metrics.agreement import accuracy, cohens_kappa, kappa_interval
from ragpulse.model.calibration import Agreement, Calibration, CalibrationRequest

KAPPA_RELIABLE = 0.6
"""Below this kappa the judge is unreliable for this data (the field's usual threshold)."""


def calibrate(job_id: str, request: CalibrationRequest, results: Sequence[TraceResult]) -> Calibration:
    """Compare the judge's faithful/hallucinated call (and claim verdicts, where labelled) with human labels."""
    judged = {r.trace_id: r for r in results if r.generation is not None}
    pairs = [(label, judged[label.trace_id]) for label in request.labels if label.trace_id in judged]
    unmatched = [label.trace_id for label in request.labels if label.trace_id not in judged]
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


def _warning(traces: Agreement | None) -> str | None:
    if traces is None:
        return "no labelled trace matched a judged trace of this job"
    if traces.kappa < KAPPA_RELIABLE:
        return (f"Cohen's kappa {traces.kappa:.2f} < {KAPPA_RELIABLE}: the judge is unreliable on this data; "
                "do not trust its generation metrics without review")
    return None
