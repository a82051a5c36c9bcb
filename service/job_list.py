"""GET /v1/jobs: the tenant's jobs, newest first, paginated and filtered; shared with the web UI's pages."""

from __future__ import annotations

import re
from typing import Annotated, get_args

import msgspec
from litestar import get
from litestar.params import Parameter

from ragpulse.config import defaults
from ragpulse.exceptions import InvalidParameter
from ragpulse.model.judging import Judging
from ragpulse.model.job_list import JobFilter, JobLinks, JobsPage, JobSummary
from ragpulse.model.results import ENDED_WITH_REPORT, JobStatus, Progress
from ragpulse.model.trace import APP_NAME_PATTERN, DatasetRef
from ragpulse.reporting.judging import comparable, judging
from ragpulse.store import JobRecord, Store
from service.context import Call

JobsCursor = Annotated[str | None, Parameter(pattern=r"^[0-9]{1,15}-[0-9a-f]{32}$", description=(
    "next_cursor of the previous page, unchanged; absent for the first page. Any other value is 400 naming "
    "query.cursor."))]
JobsLimit = Annotated[int, Parameter(ge=1, le=defaults.JOBS_PAGE_MAX, description="Jobs per page (1 to 100).")]
AppFilter = Annotated[str | None, Parameter(pattern=APP_NAME_PATTERN, description=(
    "Only jobs with a trace of this app."))]
RUN_PATTERN = r"^[A-Za-z0-9._:/+-]{1,128}$"
"""The pattern of `options.run` (ragpulse.model.trace.RunName)."""
RunFilter = Annotated[str | None, Parameter(pattern=RUN_PATTERN, description=(
    "Only jobs whose options.run is this."))]
StatusFilter = Annotated[JobStatus | None, Parameter(description="Only jobs in this status.")]


@get("/v1/jobs", sync_to_thread=True, tags=["jobs"], summary="The tenant's jobs, newest first")
def list_jobs(call: Call, cursor: JobsCursor = None, limit: JobsLimit = defaults.JOBS_PAGE_DEFAULT,
              app: AppFilter = None, run: RunFilter = None, status: StatusFilter = None) -> JobsPage:
    """Jobs of the calling tenant only, newest first; follow `next_cursor` until it is null. Jobs are listed for
    their retention (RAGPULSE_RESULT_TTL_SECONDS). With filters a page may hold fewer than `limit` jobs (even none)
    while `next_cursor` is not null: each page reads at most 10 × `limit` jobs of the index.

    400 naming `query.cursor`, `query.limit`, `query.app`, `query.run` or `query.status` for a value that cannot
    be one."""
    return jobs_page(call.store, call.tenant, JobFilter(app=app, run=run, status=status), cursor, limit)


def jobs_page(store: Store, tenant: str, where: JobFilter, cursor: str | None, limit: int) -> JobsPage:
    """One page of the tenant's jobs as the API lists them."""
    budget = limit * defaults.JOBS_SCAN_FACTOR if where != JobFilter() else limit
    records, next_cursor = store.list_jobs(tenant, where, cursor, limit, budget)
    progress = store.progress_many(records)
    return JobsPage(items=[summary(r, p) for r, p in zip(records, progress)], next_cursor=next_cursor)


def summary(record: JobRecord, progress: Progress) -> JobSummary:
    """One job of the list, with its trace counts and links."""
    return JobSummary(
        job_id=record.job_id, status=record.status, created_at=record.created_at, finished_at=record.finished_at,
        progress=progress, apps=record.apps, run=record.options.run, variant=record.options.variant,
        environment=record.options.environment, judge=record.options.judge,
        dataset=DatasetRef(name=record.dataset.name, version=record.dataset.version) if record.dataset else None,
        delivery=record.options.delivery,
        links=JobLinks(report=f"/v1/jobs/{record.job_id}/report", page=f"/jobs/{record.job_id}"))


def form_filter(app: str, run: str, status: str) -> JobFilter:
    """The filters of the job list page's form, where a field left empty means no filter; 400 naming `query.X` for
    a value GET /v1/jobs would refuse."""
    checks = {"app": re.fullmatch(APP_NAME_PATTERN.strip("^$"), app),
              "run": re.fullmatch(RUN_PATTERN.strip("^$"), run), "status": status in get_args(JobStatus)}
    bad = [name for name, value in {"app": app, "run": run, "status": status}.items() if value and not checks[name]]
    if bad:
        raise InvalidParameter(f"not a valid {', '.join(bad)}", [
            {"path": f"query.{name}", "message": "not a value GET /v1/jobs accepts"} for name in bad])
    return JobFilter(app=app or None, run=run or None, status=status or None)  # type: ignore[arg-type]




def previous_job(store: Store, tenant: str, job_id: str) -> tuple[JobSummary | None, str]:
    """The newest job created before `job_id` that ended with a report its judged metrics can be compared with
    (judged share at the floor or above, and the same judge, model and prompt version when both were judged), of the
    same run when the job has one, else of its app (never an unrelated job: it would match no trace), looking through
    at most PREVIOUS_JOB_SCAN jobs; and what they share, as a phrase (`run nightly`). JobNotFound when `job_id` is not
    the tenant's."""
    record = store.jobs.get(job_id, tenant)
    choices = []
    if record.options.run:
        choices.append((JobFilter(run=record.options.run), f"run {record.options.run}"))
    if record.apps:
        choices.append((JobFilter(app=record.apps[0]), f"app {record.apps[0]}"))
    own = job_judging(store, tenant, job_id)
    for where, alike in choices:
        found = _before(store, tenant, where, job_id, own)
        if found is not None:
            return found, alike
    return None, choices[0][1] if choices else "its run or app"


def job_judging(store: Store, tenant: str, job_id: str) -> Judging:
    """Who judged the job and how much: from its report, else (a report built before it said so) its results."""
    raw = store.report(job_id, tenant)
    stored = None if raw is None else msgspec.json.decode(raw, type=_ReportJudging).judging
    return stored if stored is not None else judging(store.results.all(job_id))


class _ReportJudging(msgspec.Struct):
    """The one field of a stored report the default baseline reads, decoded without the rest."""

    judging: Judging | None = None


def _before(store: Store, tenant: str, where: JobFilter, job_id: str, own: Judging) -> JobSummary | None:
    seen_self, scanned, cursor = False, 0, None
    while scanned < defaults.PREVIOUS_JOB_SCAN:
        page = jobs_page(store, tenant, where, cursor, defaults.JOBS_PAGE_MAX)
        for item in page.items:
            if seen_self and item.status in ENDED_WITH_REPORT and \
                    comparable(own, job_judging(store, tenant, item.job_id)):
                return item
            seen_self = seen_self or item.job_id == job_id
        scanned += len(page.items)
        if page.next_cursor is None:
            return None
        cursor = page.next_cursor
    return None
