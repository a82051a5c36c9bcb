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
    _check_claim_indexes(request, judged)
    traces = _agreement([lab.faithful for lab, _ in pairs], [not r.generation.hallucinated for _, r in pairs])
    human_claims, judge_claims = [], []
    for label, result in pairs:
        for claim in label.claims or ():
            human_claims.append(claim.verdict)
            judge_claims.append(result.claims[claim.index].verdict)
    claims = _agreement(human_claims, judge_claims)
    judges = {r.judge for _, r in pairs}
    return Calibration(job_id=job_id, judge=", ".join(sorted(j for j in judges if j)) or None, traces=traces,
                       claims=claims, unmatched_trace_ids=unmatched[:1000], warning=_warning(traces))


def check_labels(request: CalibrationRequest) -> None:
    """InvalidBody (422) for labels that contradict one another: a trace labelled again (naming the repeat's
    `$.labels[i].trace_id`) or a claim given a second verdict in one label (`$.labels[i].claims[j].index`).

    One label per trace, one verdict per claim, even when the repeat agrees: a repeated trace would count twice in
    the agreement, and of two contradictory calls the one that counted would be chosen by its position."""
    errors: list[dict[str, str]] = []
    first: dict[str, int] = {}
    for i, label in enumerate(request.labels):
        if label.trace_id in first:
            before = request.labels[first[label.trace_id]]
            how = "agreeing with" if before == label else "contradicting"
            errors.append({"path": f"$.labels[{i}].trace_id", "message": f"trace {label.trace_id} is labelled again, "
                           f"{how} $.labels[{first[label.trace_id]}]: one label per trace"})
        first.setdefault(label.trace_id, i)
        verdicts: dict[int, int] = {}
        for j, claim in enumerate(label.claims or ()):
            if claim.index in verdicts:
                errors.append({"path": f"$.labels[{i}].claims[{j}].index", "message": f"claim {claim.index} already "
                               f"has a verdict at $.labels[{i}].claims[{verdicts[claim.index]}]: one per claim"})
            verdicts.setdefault(claim.index, j)
    if errors:
        raise _bounded("labels contradict one another", errors)


def _check_claim_indexes(request: CalibrationRequest, judged: dict[str, TraceResult]) -> None:
    """InvalidBody (422) naming each `$.labels[i].claims[j].index` past the end of the judge's claim list of a
    matched trace: a verdict on a claim the judge never made cannot agree or disagree with it."""
    errors = []
    for i, label in enumerate(request.labels):
        result = judged.get(label.trace_id)
        if result is None:
            continue
        have = f"trace {label.trace_id} has {len(result.claims)} claims" + (
            f" (index 0 to {len(result.claims) - 1})" if result.claims else "")
        errors += [{"path": f"$.labels[{i}].claims[{j}].index", "message": have}
                   for j, claim in enumerate(label.claims or ()) if claim.index >= len(result.claims)]
    if errors:
        raise _bounded("a claim label names a claim the judge did not make", errors)


def _bounded(detail: str, errors: list[dict[str, str]]) -> InvalidBody:
    truncated = len(errors) > MAX_UNMATCHED_ERRORS
    return InvalidBody(detail + (f"; the first {MAX_UNMATCHED_ERRORS} are listed" if truncated else ""),
                       errors[:MAX_UNMATCHED_ERRORS], errors_truncated=truncated)


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
