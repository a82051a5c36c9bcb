"""The review loop's operations, as the API calls them: label a trace, list a trace's labels, store a calibration's
labels, serve the review queue. Each composes the modules that own one concern."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ragpulse.config.settings import Settings
from ragpulse.evaluation.judge_input import JudgeInputLimits
from ragpulse.labels import annotators, lookup, queue
from ragpulse.labels.design import ReviewDesign
from ragpulse.labels.labelling import calibration_labels, new_label
from ragpulse.labels.placing import near_threshold, place, place_judged
from ragpulse.labels.reading import SourceReader
from ragpulse.labels.store import LabelStore
from ragpulse.model.calibration import CalibrationRequest
from ragpulse.model.labels import InterAnnotator, Label, LabelRequest, ReviewQueue, TraceLabels
from ragpulse.model.results import TraceResult
from ragpulse.store import Store, utcnow


@dataclass(frozen=True)
class ReviewDesk:
    """Labels and the review queue of one Redis."""

    store: Store
    labels: LabelStore
    settings: Settings

    @classmethod
    def open(cls, store: Store, settings: Settings) -> ReviewDesk:
        return cls(store, LabelStore(store.redis, settings.label_ttl_seconds), settings)

    @property
    def design(self) -> ReviewDesign:
        return ReviewDesign(q=self.settings.review_sample_rate)

    def window_start(self) -> float:
        """Unix time from which labels count in agreement figures (RAGPULSE_AGREEMENT_WINDOW_DAYS)."""
        return time.time() - self.settings.agreement_window_days * 86400

    def label(self, tenant: str, request: LabelRequest) -> Label:
        """Store one reviewer's label of a judged trace (404 when not the tenant's; 422 when it has no verdict)."""
        judged = lookup.find(self.store.redis, self.store, tenant, request.trace_id, request.job_id)
        view = judged.verdict()
        placement = place_judged(self.store.redis, self.design, tenant, judged, view)
        return self.labels.put(tenant, new_label(request, judged, view, placement, utcnow()))

    def of_trace(self, tenant: str, trace_id: str, job_id: str | None) -> TraceLabels:
        """A trace's labels and its reviewers' agreement over the app's traces they all labelled."""
        labels = self.labels.of_trace(tenant, job_id, trace_id)
        if not labels:
            lookup.find(self.store.redis, self.store, tenant, trace_id, job_id)  # 404 unless the tenant's
            return TraceLabels(trace_id=trace_id, job_id=job_id, labels=[], majority=None,
                               agreement=InterAnnotator(method=None, kappa=None, traces=0, reviewers=0))
        reviewers = {label.reviewer for label in labels}
        app_traces = self.labels.of_app(tenant, labels[0].app, self.window_start())
        return TraceLabels(trace_id=trace_id, job_id=job_id, labels=labels, majority=annotators.majority(labels),
                           agreement=annotators.among(app_traces, reviewers))

    def calibrate(self, tenant: str, request: CalibrationRequest, results: Sequence[TraceResult]) -> list[Label]:
        """Store a calibration's labels under reviewer `calibration` (each replaces the previous calibration's)."""
        judged = [lookup.from_result(r, request.job_id) for r in results if r.generation is not None]
        near = {app: near_threshold(self.store.redis, tenant, app) for app in {j.app for j in judged}}
        placed = [(j, place(self.design, tenant, j.app, j.ref.trace_id, j.verdict(), j.disagreement,
                            near[j.app])[1]) for j in judged]
        return self.labels.put_many(tenant, calibration_labels(request, placed, utcnow()))

    def queue(self, tenant: str, app: str, n: int, reviewer: str | None) -> ReviewQueue:
        """The next `n` traces of the app to label."""
        ask = queue.QueueRequest(tenant, app, n, reviewer, near_threshold(self.store.redis, tenant, app))
        reader = SourceReader(self.store, tenant, JudgeInputLimits.from_settings(self.settings))
        return queue.build(reader, self.labels, self.design, ask, self.uniform_labelled(tenant, app))

    def uniform_labelled(self, tenant: str, app: str) -> int:
        """Traces of the app's uniform sample labelled within the agreement window."""
        traces = self.labels.of_app(tenant, app, self.window_start())
        return sum(any(label.sample == "uniform" for label in labels) for labels in traces)
