"""The review loop's operations, as the API calls them: label a trace, list a trace's labels, store a calibration's
labels, serve the review queue. Each composes the modules that own one concern."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from dataclasses import dataclass

from ragpulse.config.settings import Settings
from ragpulse.exceptions import InvalidBody
from ragpulse.judges.judge_input import JudgeInputLimits
from ragpulse.judges.kinds import current_prompt_versions, is_heuristic
from ragpulse.labels import annotators, corrections, lookup, queue, sources
from ragpulse.labels.agreement import app_agreement
from ragpulse.labels.labelling import calibration_labels, new_label
from ragpulse.labels.placing import near_threshold, place_judged
from ragpulse.labels.reading import SourceReader
from ragpulse.labels.store import LabelStore
from ragpulse.labels.traces import LabelledTrace, by_judge
from ragpulse.model.calibration import CalibrationRequest
from ragpulse.model.labels import (
    AppAgreement, InterAnnotator, JudgeView, Label, LabelRequest, ReviewQueue, TraceLabels,
)
from ragpulse.model.compare import Comparison, CorrectedSides
from ragpulse.reporting.report import Report
from ragpulse.model.results import TraceResult
from ragpulse.monitoring.policy_store import PolicyStore
from ragpulse.store import Store, utcnow


def check_claims(request: LabelRequest, view: JudgeView) -> None:
    """InvalidBody naming `$.claims[j].index` for a claim the judge's list does not hold, or one already labelled
    earlier in the list: a verdict on no claim would be silently lost, and of two on one claim one would be."""
    first: dict[int, int] = {}
    unknown, repeated, errors = 0, 0, []
    for j, claim in enumerate(request.claims or ()):
        path = f"$.claims[{j}].index"
        if claim.index in first:
            repeated += 1
            errors.append({"path": path, "message": f"claim {claim.index} is labelled twice: already at "
                                                    f"$.claims[{first[claim.index]}]; give each claim one verdict"})
        elif claim.index >= len(view.claims):
            unknown += 1
            errors.append({"path": path, "message": f"no claim {claim.index} to label: the judge found "
                                                    f"{len(view.claims)} claims"})
        else:
            first[claim.index] = j
    if errors:
        parts = ([f"{unknown} claim verdict(s) name no claim"] if unknown else []) + (
            [f"{repeated} claim verdict(s) repeat a claim index"] if repeated else [])
        raise InvalidBody(f"{' and '.join(parts)} of trace {request.trace_id}", errors)


@dataclass(frozen=True)
class ReviewDesk:
    """Labels and the review queue of one Redis."""

    store: Store
    labels: LabelStore
    settings: Settings

    @classmethod
    def open(cls, store: Store, settings: Settings) -> ReviewDesk:
        return cls(store, LabelStore(store.redis, settings.label_ttl_seconds), settings)

    def share(self, tenant: str, app: str) -> float:
        """The app's review share now: its policy's review_sample_rate, else RAGPULSE_REVIEW_SAMPLE_RATE."""
        policies = PolicyStore(self.store.redis, self.settings.default_sample_rate, self.settings.max_apps_per_tenant)
        return policies.get(tenant, app).review_share(self.settings.review_sample_rate)

    def window_start(self) -> float:
        """Unix time from which labels count in agreement figures (RAGPULSE_AGREEMENT_WINDOW_DAYS)."""
        return time.time() - self.settings.agreement_window_days * 86400

    def label(self, tenant: str, request: LabelRequest) -> Label:
        """Store one reviewer's label of a judged trace (404 when not the tenant's; 422 when it has no verdict)."""
        judged = lookup.find(self.store.redis, self.store, tenant, request.trace_id, request.job_id)
        view = judged.verdict()
        check_claims(request, view)
        placement = place_judged(self.store.redis, self.share(tenant, judged.app), tenant, judged, view)
        return self.labels.put(tenant, new_label(request, judged, view, placement, utcnow()))

    def of_trace(self, tenant: str, trace_id: str, job_id: str | None) -> TraceLabels:
        """The labels of the content a trace holds (given on it or on any other trace of that content) and its
        reviewers' agreement over the app's contents they all labelled."""
        labels = self.labels.of_trace(tenant, job_id, trace_id)
        if not labels:
            judged = lookup.find(self.store.redis, self.store, tenant, trace_id, job_id)  # 404 unless the tenant's
            labels = self.labels.of_trace(tenant, job_id, trace_id, judged.content)
        if not labels:
            return TraceLabels(trace_id=trace_id, job_id=job_id, labels=[], majority=None,
                               agreement=InterAnnotator(method=None, kappa=None, traces=0, reviewers=0))
        reviewers = {label.reviewer for label in labels}
        app_traces = self.labels.of_app(tenant, labels[0].app, self.window_start())
        return TraceLabels(trace_id=trace_id, job_id=job_id, labels=labels, majority=annotators.majority(labels),
                           agreement=annotators.among(app_traces, reviewers))

    def calibrate(self, tenant: str, request: CalibrationRequest, results: Sequence[TraceResult]) -> list[Label]:
        """Store a calibration's labels under reviewer `calibration` (each replaces the previous calibration's)."""
        judged = [lookup.from_result(r, request.job_id) for r in results if r.generation is not None]
        apps = {j.app for j in judged}
        near = {app: near_threshold(self.store.redis, tenant, app) for app in apps}
        shares = {app: self.share(tenant, app) for app in apps}
        placed = [(j, place_judged(self.store.redis, shares[j.app], tenant, j, j.verdict(), near[j.app]))
                  for j in judged]
        return self.labels.put_many(tenant, calibration_labels(request, placed, utcnow()))

    def queue(self, tenant: str, app: str, n: int, reviewer: str | None) -> ReviewQueue:
        """The next `n` traces of the app to label."""
        ask = queue.QueueRequest(tenant, app, n, reviewer, near_threshold(self.store.redis, tenant, app),
                                 self.share(tenant, app))
        reader = SourceReader(self.store, tenant, JudgeInputLimits.from_settings(self.settings))
        return queue.build(reader, self.labels, ask, self.uniform_labelled(tenant, app))

    def labelled(self, tenant: str, app: str, judge: str, prompt_version: str) -> list[LabelledTrace]:
        """The app's labelled contents judged by this judge and prompt version, within the agreement window."""
        traces = self.labels.of_app(tenant, app, self.window_start())
        return by_judge(traces, self._appearances(tenant, traces)).get((judge, prompt_version), [])

    def _appearances(self, tenant: str, traces: Sequence[Sequence[Label]]) -> dict[str, int]:
        """Content key -> judged traces known to hold it, for the labelled contents."""
        contents = {(labels[-1].app, labels[-1].content_key) for labels in traces if labels[-1].content_key}
        return sources.appearances(self.store.redis, tenant, contents)  # type: ignore[arg-type] # None filtered

    def correct_report(self, tenant: str, job_id: str, report: Report) -> Report:
        """The report with the judge's agreement with the app's reviewers and the hallucination rates corrected for
        the judge's measured error (in place). The app is the job's traces' (a job holding several apps: one of
        them); the judge is the one that judged most of its traces, at the prompt version it uses now."""
        result = self.store.results.any(job_id)
        if result is None:
            return report
        traces = self._labelled_for(tenant, result.app, report.generation.judges)
        estimates = {rate: getattr(report.generation, rate, None) for rate in corrections.CORRECTED}
        report.judge_agreement = corrections.agreement(traces)
        report.corrected = corrections.corrected_rates(corrections.counts_of(estimates), traces)
        return report

    def correct_monitor(self, tenant: str, app: str, view: dict[str, Any], judge: str | None = None) -> dict[str, Any]:
        """The monitor's view with `corrected` (each hallucination rate corrected for the online judge's measured
        error, by the app's labels of that judge at its current prompt version) and `judge_agreement` (in place);
        `judge` is the app's online judge when its policy names one, else the service's."""
        judge = judge or self.settings.default_judge
        version = current_prompt_versions().get(judge)
        traces = self.labelled(tenant, app, judge, version) if version is not None else []
        counts = {rate: (round(view[rate]["rate"] * view[rate]["n"]), view[rate]["n"])
                  for rate in corrections.CORRECTED if view.get(rate)}
        view["judge"] = {"judge": judge, "prompt_version": version, "heuristic": is_heuristic(judge)}
        view["judge_agreement"] = msgspec.to_builtins(corrections.agreement(traces))
        view["judge_agreement_by_population"] = msgspec.to_builtins(corrections.by_population(traces))
        view["corrected"] = msgspec.to_builtins(corrections.corrected_rates(counts, traces))
        return view

    def correct_comparison(self, tenant: str, comparison: Comparison, sides: Mapping[str, Sequence[TraceResult]]
                           ) -> Comparison:
        """The comparison with each hallucination rate of the matched traces corrected on both sides (in place);
        `sides` holds each side's results (`baseline`, `candidate`): their app and most frequent judge."""
        labelled = {side: self._labelled_for(tenant, results[0].app if results else "",
                                             Counter(r.judge for r in results if r.judge and r.generation is not None))
                    for side, results in sides.items()}
        for rate in corrections.CORRECTED:
            delta = comparison.generation.get(rate)
            if delta is not None:
                comparison.corrected[rate] = CorrectedSides(**{
                    side: corrections.corrected_rates({rate: (round(getattr(delta, side) * delta.n), delta.n)},
                                                      labelled[side])[rate]
                    for side in ("baseline", "candidate")})
        return comparison

    def _labelled_for(self, tenant: str, app: str, judged: Mapping[str, int]) -> list[LabelledTrace]:
        """The app's labelled traces of the judge that judged most (`judged`: judge -> traces), at the prompt version
        it uses now; none without a judge that has one."""
        judge = max(judged.items(), key=lambda item: item[1], default=("", 0))[0]
        version = current_prompt_versions().get(judge)
        return self.labelled(tenant, app, judge, version) if version is not None and app else []

    def uniform_labelled(self, tenant: str, app: str) -> int:
        """Contents of the app's uniform sample labelled within the agreement window."""
        traces = self.labels.of_app(tenant, app, self.window_start())
        return sum(any(label.sample == "uniform" for label in labels) for labels in traces)

    def agreement(self, tenant: str, app: str) -> AppAgreement:
        """The judges' agreement with the reviewers on the app's contents labelled within the window."""
        traces = self.labels.of_app(tenant, app, self.window_start())
        return app_agreement(app, traces, current_prompt_versions(), self.settings.agreement_window_days,
                             self._appearances(tenant, traces))
