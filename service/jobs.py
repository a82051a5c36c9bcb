"""GET /v1/jobs/...: status, paginated per-trace results, and the report."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Controller, MediaType, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Parameter

from dispatch.chunks import requeue
from ragpulse.config import defaults
from ragpulse.exceptions import Conflict, JobNotFound
from ragpulse.model.calibration import Calibration
from ragpulse.model.compare import Comparison, Correction, MismatchPolicy, RunInfo
from ragpulse.model.pairwise import PairwisePending
from ragpulse.model.trace import JudgeName
from ragpulse.reporting.report import Report
from ragpulse.model.results import TERMINAL, JobStatus, JobView, ResultsPage
from ragpulse.reporting.compare import compare
from ragpulse.reporting.judging import judged_keys
from ragpulse.reporting.significance import default_family, parse_family
from ragpulse.reporting.html import FAILING_SHOWN, failing_traces, pending_page, render_html
from ragpulse.qualification.notes import qualification_note
from ragpulse.qualification.store import Qualifications
from ragpulse.store import Store
from service.context import Call, Services
from service.pairwise import pairwise_result


class ReportPending(msgspec.Struct, kw_only=True):
    """GET /v1/jobs/{job_id}/report before the report exists."""

    job_id: str
    status: JobStatus
    detail: str = "the report is not ready yet"


JobId = Annotated[str, Parameter(max_length=64, description="Job id returned by POST /v1/batches.")]
Cursor = Annotated[str, Parameter(pattern=r"^[0-9]{0,12}$", description=(
    "next_cursor of the previous page, unchanged; absent or empty for the first page. Any other value is 400 "
    "naming query.cursor."))]


class JobController(Controller):
    """Job status and results; a job is visible to its own tenant only (others get 404)."""

    path = "/v1/jobs"
    tags = ["jobs"]

    @get("/{job_id:str}", sync_to_thread=True, summary="Job status and progress")
    def status(self, job_id: JobId, call: Call) -> JobView:
        """Poll this until `status` is finished, finished_with_errors or failed."""
        return call.store.job(job_id, call.tenant)

    @get("/{job_id:str}/results", sync_to_thread=True, summary="Per-trace results, paginated")
    def results(
        self, job_id: JobId, call: Call, cursor: Cursor = "",
        limit: Annotated[int, Parameter(ge=1, le=defaults.RESULTS_PAGE_MAX, description=(
            f"Results per page (1 to {defaults.RESULTS_PAGE_MAX})."))] = defaults.RESULTS_PAGE_DEFAULT,
    ) -> ResultsPage:
        """Results in trace order; follow `next_cursor` until it is null."""
        return call.store.results_page(job_id, call.tenant, cursor, limit)

    @post("/{job_id:str}/retry", status_code=202, sync_to_thread=True, summary="Re-run failed and skipped traces")
    def retry(self, job_id: JobId, call: Call) -> JobView:
        """Re-run only the traces that failed or were skipped; results already stored are kept.

        409 naming `path.job_id` while the job is still queued or running, or while a worker is still finishing one
        of its chunks (a cancelled job: a retry then would race the old run's end)."""
        store, tenant = call.store, call.tenant
        job = store.job(job_id, tenant)
        if job.status not in TERMINAL:
            raise Conflict(f"job {job_id} is {job.status}; retry it once it has ended",
                                   [{"path": "path.job_id", "message": "job still running"}])
        busy = store.chunks.in_flight(job_id)
        if busy:
            raise Conflict(f"job {job_id} is {job.status} but a worker is still finishing chunk(s) "
                           f"{', '.join(map(str, busy))} (a cancelled job stops after its current traces); retry in "
                           "a few seconds", [{"path": "path.job_id", "message": "chunks still finishing"}])
        chunks = store.reopen_unfinished(job_id, tenant)
        if chunks:
            requeue(store, call.services.enqueuer, job_id, chunks)
        return store.job(job_id, tenant)

    @post("/{job_id:str}/cancel", status_code=202, sync_to_thread=True, summary="Cancel a job")
    def cancel(self, job_id: JobId, call: Call) -> JobView:
        """Stop a queued or running job: it fails with the reason `cancelled by the client`, traces not yet evaluated
        are kept as failed (retry runs them), and its provider batches (delivery batch) are cancelled at the
        provider within a second or so. Results already stored, and the report, are kept.

        409 naming `path.job_id` once the job has ended."""
        try:
            return call.store.cancel(job_id, call.tenant)
        except Conflict as exc:
            raise Conflict(str(exc), [{"path": "path.job_id", "message": "job already ended"}]) from None

    @get("/{job_id:str}/compare", sync_to_thread=True, summary="Compare this job against a baseline job",
         responses={202: ResponseSpec(PairwisePending, description=(
             "pairwise=true and the pairwise run is queued or running; poll the same URL again."))})
    def compare(
        self, job_id: JobId, call: Call,
        baseline: Annotated[str, Parameter(max_length=64, description="The baseline's job id (yours, finished).")],
        threshold: Annotated[float, Parameter(gt=0, le=1, description="Per-trace drop of recall@k or nDCG@k "
                                              "listed as a regression.")] = defaults.COMPARE_REGRESSION_THRESHOLD,
        metrics: Annotated[str | None, Parameter(max_length=2000, description=(
            "Comma-separated metric keys to test for a change (one multiple-comparison family). Default: the "
            "candidate batch's options.targets, then recall@5, ndcg@5, mrr, faithfulness, hallucination_rate, "
            "unanswerable_hallucination_rate. Other metrics are described, not tested."))] = None,
        correction: Annotated[Correction, Parameter(description=(
            "How the family's p-values are adjusted: holm (family-wise error <= 0.05) or none."))] = "holm",
        # Not `dataset_mismatch`: Litestar files a parameter whose name starts with "data" under the body in its errors.
        on_mismatch: Annotated[MismatchPolicy, Parameter(description=(
            "What to do when the two jobs ran different dataset versions or different items: warn (answer, with "
            "dataset_mismatch and a warning naming both versions and the items matched) or refuse (409 naming "
            "query.baseline)."))] = "warn",
        on_judge_mismatch: Annotated[MismatchPolicy, Parameter(description=(
            "What to do when the two jobs' judged metrics cannot be read side by side: judged by different judges, "
            "models or prompt versions (every heuristic counts as one judge), or a side with fewer than "
            f"{defaults.JUDGED_SHARE_FLOOR:.0%} of the traces it sent to the judge judged. refuse: 409 naming "
            "query.baseline and both sides' judge, model and prompt version, or the side's judged count. warn: "
            "answer, saying so in judge_mismatch, judged_refused and warnings (a side below the floor keeps its "
            "judged metrics out of the tested family either way)."))] = "refuse",
        pairwise: Annotated[bool, Parameter(description=(
            "Also ask an LLM judge, for each matched item, which answer is better grounded and more correct, twice "
            "with the order swapped. This runs as a job: the answer is 202 with its progress until it has ended, "
            "then 200 with the comparison and its pairwise section (win rate, ties and position consistency with "
            "intervals). Asking again finds the same run; nothing is judged twice."))] = False,
        judge: Annotated[JudgeName | None, Parameter(description=(
            "With pairwise=true: the LLM judge that compares, anthropic or openai. Default: the candidate batch's "
            "judge, else the service's default judge. heuristic cannot compare two answers: 422 naming "
            "query.judge."))] = None,
    ) -> Response[Comparison]:
        """Paired deltas with bootstrap intervals, the traces that got worse, slices by question type and source, and
        the oracle gap or RAG lift when the baseline is such a run. Only the tested family gets a decision (McNemar's
        exact test for proportions, a paired sign-flip permutation test for means, p-values adjusted over the
        family): the same decision `ragpulse gate` makes.

        When the two ran different dataset versions (or different items of one), the answer says so in
        `dataset_mismatch` and `warnings`, naming both versions and how many items matched; with
        `on_mismatch=refuse` that is a 409 instead.

        Each side's `judging` names its judge, model and prompt version and how many of its traces were judged. Two
        jobs judged differently are refused (409) while the tested family holds a judged metric; a side that judged
        fewer than the floor of its traces has its judged metrics left out of the tested family (`refused_metrics`,
        a warning), and is refused (409) when `metrics` or the candidate's targets name one of them. With
        `on_judge_mismatch=warn` both answer 200 with the reasons in `judge_mismatch`, `judged_refused` and
        `warnings`.

        With `pairwise=true`, the judge's preference between the two runs' answers too (see the parameter); 202 with
        the pairwise run's progress until it has ended.

        404 for an unknown or foreign job; 409 naming the job while either is queued or running, or failed, or
        naming `query.baseline` for a refused dataset mismatch or judged metrics refused; 400 naming `query.metrics` for an unknown metric
        key; 422 naming `query.judge` when pairwise judging is asked of a judge that cannot compare two answers or is
        not configured here."""
        comparison = compare_jobs(call.services, call.tenant, job_id, baseline, threshold=threshold,
                                  metrics=metrics, correction=correction, on_judge_mismatch=on_judge_mismatch)
        if on_mismatch == "refuse" and comparison.dataset_mismatch:
            raise Conflict(f"the two jobs are not on the same dataset items: {comparison.dataset_mismatch}",
                           [{"path": "query.baseline", "message": comparison.dataset_mismatch}])
        if not pairwise:
            return Response(comparison)
        section = pairwise_result(call.services, call.tenant, job_id, baseline, judge)
        if isinstance(section, PairwisePending):
            return Response(section, status_code=202)  # type: ignore[arg-type]
        comparison.pairwise = section
        return Response(comparison)

    @get("/{job_id:str}/report", sync_to_thread=True, summary="Aggregate report of a job",
         responses={202: ResponseSpec(ReportPending, description="The job is still running; poll again."),
                    409: ResponseSpec(ReportPending, description="The job ended without a report.")})
    def report(self, job_id: JobId, call: Call) -> Response[Report]:
        """The report once the job is done; 202 with the job status while it runs."""
        store, tenant = call.store, call.tenant
        raw = store.report(job_id, tenant)
        if raw is None:
            pending = _pending(store, job_id, tenant)
            return Response(pending, status_code=_pending_status(pending))  # type: ignore[arg-type]
        report = call.services.reviews.correct_report(tenant, job_id, _with_calibration(store, job_id, raw))
        return Response(_qualified(call.services, tenant, report))

    @get("/{job_id:str}/report.html", sync_to_thread=True, summary="The report as one self-contained HTML page",
         media_type=MediaType.HTML)
    def report_page(self, job_id: JobId, call: Call) -> Response[str]:
        """Metrics with intervals and targets, the diagnostic matrix, breakdowns and the failing traces' claims with
        their evidence; no script and no external URL (a strict Content-Security-Policy says so too)."""
        return serve_report_page(call.services, call.tenant, job_id)


def serve_report_page(services: Services, tenant: str, job_id: str, nav: str = "") -> Response[str]:
    """The tenant's report page (also served to the web UI's session at /jobs/{job_id}, with the UI's `nav` bar over
    it); a short page with 202 or 409 while there is no report."""
    store = services.store
    raw = store.report(job_id, tenant)
    if raw is None:
        pending = _pending(store, job_id, tenant)
        return Response(pending_page(job_id, pending.status, pending.detail), status_code=_pending_status(pending),
                        media_type=MediaType.HTML, headers={"Content-Security-Policy": PAGE_CSP})
    report = _qualified(services, tenant, services.reviews.correct_report(tenant, job_id,
                                                                          _with_calibration(store, job_id, raw)))
    failing = failing_traces(report, store.results.all(job_id))
    queries = store.queries(job_id, tenant, [r.index for r in failing[:FAILING_SHOWN]])
    page = render_html(report, failing, queries, nav)
    return Response(page, media_type=MediaType.HTML, headers={"Content-Security-Policy": PAGE_CSP})


PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
"""The report page needs inline styles and nothing else: no script, no fetch, no external asset."""


def compare_jobs(services: Services, tenant: str, job_id: str, baseline: str, *,
                 threshold: float = defaults.COMPARE_REGRESSION_THRESHOLD, metrics: str | None = None,
                 correction: Correction = "holm", candidate_path: str = "path.job_id",
                 on_judge_mismatch: MismatchPolicy = "refuse") -> Comparison:
    """The tenant's candidate `job_id` compared against `baseline` (GET /v1/jobs/{job_id}/compare, and the web UI's
    compare page, where the candidate is `query.candidate`): 404 naming the missing side, 409 naming a side that
    has not finished or failed, or (under `on_judge_mismatch` refuse) whose judged metrics cannot be compared."""
    store = services.store
    sides = {candidate_path: _named_job(store, job_id, tenant, candidate_path, "candidate"),
             "query.baseline": _named_job(store, baseline, tenant, "query.baseline", "baseline")}
    for path, job in sides.items():
        if job.status not in TERMINAL or job.status == "failed":
            what = "ended without results" if job.status == "failed" else "has not finished"
            raise Conflict(f"job {job.job_id} is {job.status}; compare it once it has finished",
                           [{"path": path, "message": f"job {what}"}])
    named = parse_family(metrics) if metrics is not None else _targets(store, job_id, tenant)
    family = named if metrics is not None else default_family(named)
    results = {"baseline": store.results.all(baseline), "candidate": store.results.all(job_id)}
    comparison = compare(_run_info(sides["query.baseline"]), _run_info(sides[candidate_path]),
                         results["baseline"], results["candidate"], threshold, family=family, correction=correction)
    if on_judge_mismatch == "refuse":
        refuse_judged(comparison, named)
    return services.reviews.correct_comparison(tenant, comparison, results)


def refuse_judged(comparison: Comparison, named: list[str]) -> None:
    """409 naming `query.baseline` when the two sides were judged differently and a judged metric is in the tested
    family, or when a side below the judged-share floor had a judged metric asked for by name (`named`: the
    request's `metrics`, else the candidate's targets)."""
    if comparison.judge_mismatch and judged_keys(comparison.family):
        raise Conflict(f"judge mismatch: {comparison.judge_mismatch}; compare the same judge, model and prompt "
                       "version, or pass on_judge_mismatch=warn",
                       [{"path": "query.baseline", "message": comparison.judge_mismatch}])
    asked = [key for key in comparison.refused_metrics if key in named]
    if asked:
        raise Conflict(f"judged metrics refused ({', '.join(asked)}): {comparison.judged_refused}; the retrieval "
                       "metrics can be compared without them, or pass on_judge_mismatch=warn",
                       [{"path": "query.baseline", "message": comparison.judged_refused}])


def _named_job(store: Store, job_id: str, tenant: str, path: str, role: str) -> JobView:
    """One side's job; for the candidate of the API's path a plain 404 as before, else a 404 naming the input."""
    if path == "path.job_id":
        return store.job(job_id, tenant)
    try:
        return store.job(job_id, tenant)
    except JobNotFound:
        raise JobNotFound(job_id, path, role) from None


def _targets(store: Store, job_id: str, tenant: str) -> list[str]:
    """The metrics the candidate batch was given targets for (`options.targets`, e.g. a gate's thresholds)."""
    raw = store.report(job_id, tenant)
    if raw is None:
        return []
    report = msgspec.json.decode(raw, type=Report)
    return [key for key, target in report.targets.items() if target.source == "options"]


def _run_info(job: JobView) -> RunInfo:
    return RunInfo(job_id=job.job_id, run=job.run, variant=job.variant, dataset=job.dataset)


def _pending(store: Store, job_id: str, tenant: str) -> ReportPending:
    """What to answer for a report that is not stored: the job's status (JobNotFound for a foreign job)."""
    return ReportPending(job_id=job_id, status=store.job(job_id, tenant).status)


def _pending_status(pending: ReportPending) -> int:
    """202 while the job runs (poll again), 409 once it has ended without a report."""
    return 409 if pending.status in TERMINAL else 202


def _qualified(services: Services, tenant: str, report: Report) -> Report:
    """The report with its judge's latest qualification on the shipped suite, when a judge judged its traces."""
    judging = report.judging
    if judging is not None and judging.judge is not None:
        store = Qualifications(services.store.redis, services.settings.result_ttl_seconds)
        report.qualification = qualification_note(store, tenant, judging.judge, judging.model, judging.prompt_version)
    return report


def _with_calibration(store: Store, job_id: str, raw: bytes) -> Report:
    report = msgspec.json.decode(raw, type=Report)
    calibration = store.results.calibration(job_id)
    if calibration is not None:
        report.calibration = msgspec.json.decode(calibration, type=Calibration)
    return report
