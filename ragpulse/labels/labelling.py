"""Labels as stored: the reviewer's call beside the judge's and the trace's place in the review design."""

from __future__ import annotations

from collections.abc import Sequence

from ragpulse.labels.design import Placement
from ragpulse.labels.lookup import Judged
from ragpulse.model.calibration import CalibrationRequest
from ragpulse.model.labels import CALIBRATION_REVIEWER, JudgeView, Label, LabelRequest


def new_label(request: LabelRequest, judged: Judged, view: JudgeView, placement: Placement, at: str) -> Label:
    """The label a POST /v1/labels stores."""
    return Label(trace_id=judged.ref.trace_id, job_id=judged.ref.job_id, app=judged.app, reviewer=request.reviewer,
                 hallucinated=request.hallucinated, abstained=request.abstained, claims=request.claims,
                 note=request.note, labelled_at=at, content_key=judged.content, **_judged(view, placement))


def calibration_labels(request: CalibrationRequest, judged: Sequence[tuple[Judged, Placement]],
                       at: str) -> list[Label]:
    """The labels a POST /v1/calibrations stores, under reviewer `calibration`: one per label matching a judged
    trace (`faithful` is the opposite of hallucinated; it says nothing of abstention)."""
    by_id = {j.ref.trace_id: (j, p) for j, p in judged}
    labels = []
    for label in request.labels:
        if label.trace_id in by_id:
            trace, placement = by_id[label.trace_id]
            labels.append(Label(trace_id=label.trace_id, job_id=request.job_id, app=trace.app,
                                reviewer=CALIBRATION_REVIEWER, hallucinated=not label.faithful, abstained=None,
                                claims=label.claims, labelled_at=at, content_key=trace.content,
                                **_judged(trace.verdict(), placement)))
    return labels


def _judged(view: JudgeView, placement: Placement) -> dict:
    return {"judge": view.judge, "prompt_version": view.prompt_version, "judge_hallucinated": view.hallucinated,
            "judge_abstained": view.abstained, "unanswerable": view.unanswerable, "answered": bool(view.claims),
            "sample": placement.sample,
            "reason": placement.reason,
            "inclusion_probability": placement.inclusion_probability,
            "uniform_probability": placement.uniform_probability}
