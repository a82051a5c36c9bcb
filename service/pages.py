"""The web UI's pages: `/` (landing), `/jobs` (job list), `/jobs/{job_id}` (a job's report page), `/compare`
(two jobs compared, as GET /v1/jobs/{candidate}/compare?baseline= does) and `/apps/{app}` (the monitor's windows).

They act for the tenant of the review pages' session cookie (service.review_auth: login form, HttpOnly cookie; open
access opens a `default` session on first visit), and are served with the review pages' strict CSP. Rendering lives
in ragpulse.reporting.pages; the list is GET /v1/jobs's (service.job_list).
"""

from __future__ import annotations

from typing import Annotated

import redis
from litestar import Controller, Response, get
from litestar.params import Parameter

import ragpulse
from ragpulse.config import defaults
from ragpulse.judges import kinds
from ragpulse.exceptions import InvalidParameter
from ragpulse.monitoring.rolling import WINDOWS
from ragpulse.model.job_list import JobFilter
from ragpulse.reporting.pages.app import app_page
from ragpulse.reporting.pages.compare import compare_page
from ragpulse.reporting.pages.frame import top_bar
from ragpulse.reporting.pages.job_list import job_list_page
from ragpulse.reporting.pages.job_nav import job_nav
from ragpulse.reporting.pages.landing import ServiceStatus, landing_page
from service.job_list import JobsCursor, form_filter, jobs_page, previous_job
from service.jobs import JobId, compare_jobs, serve_report_page
from service.monitoring import AppName, monitor_window
from service.review_auth import Review
from service.review_login import REVIEW_CSP, html

FormText = Annotated[str, Parameter(max_length=200)]
"""A filter field of the job list's form, as typed."""
PageJobId = Annotated[str, Parameter(max_length=64)]
"""A job id in the compare page's query; left out or empty is a 400 naming every such parameter."""
RECENT_JOBS = 10
"""Jobs listed on the landing page."""


class PagesController(Controller):
    """The landing page, the job list, the job pages, the compare page and the app pages
    of the session's tenant."""

    path = "/"
    include_in_schema = False

    @get("/", sync_to_thread=True)
    def landing(self, review: Review) -> Response[str]:
        """Service status, the API schema, recent jobs and the apps (from recent jobs and stored policies)."""
        services, tenant = review.services, review.tenant
        recent = jobs_page(services.store, tenant, JobFilter(), None, RECENT_JOBS).items
        apps = sorted({app for job in recent for app in job.apps} | set(services.policies.apps(tenant)))
        return html(landing_page(_status(review), recent, apps, _top(review)), cookies=review.cookies)

    @get("/jobs", sync_to_thread=True)
    def jobs(self, review: Review, cursor: JobsCursor = None, app: FormText = "", run: FormText = "",
             status: FormText = "") -> Response[str]:
        """The tenant's jobs, newest first, filtered as GET /v1/jobs is (a field left empty: no filter); each links to
        its report page."""
        where = form_filter(app, run, status)
        page = jobs_page(review.services.store, review.tenant, where, cursor, defaults.JOBS_PAGE_DEFAULT)
        return html(job_list_page(page, where, _top(review)), cookies=review.cookies)

    @get("/jobs/{job_id:str}", sync_to_thread=True)
    def job(self, job_id: JobId, review: Review) -> Response[str]:
        """The job's report page, as GET /v1/jobs/{job_id}/report.html serves it to an API key, under a bar linking to
        the compare page (with the previous job of its run or app, or any baseline typed in); but 200 for the page
        of a job without a report yet (queued or running: it reloads itself; failed: it says why), where the API
        answers 202 or 409: to a browser that page is the resource, and every link of the UI answers 200."""
        previous, alike = previous_job(review.services.store, review.tenant, job_id)
        response = serve_report_page(review.services, review.tenant, job_id, job_nav(job_id, previous, alike))
        response.status_code = 200
        response.headers["Cache-Control"] = "no-store"
        response.headers["Content-Security-Policy"] = REVIEW_CSP   # its compare form gets here, as the UI's do
        response.cookies.extend(review.cookies)
        return response

    @get("/compare", sync_to_thread=True)
    def compare(self, review: Review, candidate: PageJobId = "", baseline: PageJobId = "") -> Response[str]:
        """The candidate job against the baseline, from the same comparison as
        GET /v1/jobs/{candidate}/compare?baseline= with its defaults; 400 naming `query.candidate` or
        `query.baseline` when left out, 404 naming the one that is not the tenant's, 409 while one has not finished."""
        _require(candidate=candidate, baseline=baseline)
        comparison = compare_jobs(review.services, review.tenant, candidate, baseline, candidate_path="query.candidate")
        return html(compare_page(comparison, _top(review)), cookies=review.cookies)

    @get("/apps/{app:str}", sync_to_thread=True)
    def app(self, app: AppName, review: Review) -> Response[str]:
        """The app's monitor over each window (5m, 1h, 24h), as GET /v1/monitor/{app}?window= answers it."""
        views = [monitor_window(review.services, review.tenant, app, window) for window in WINDOWS]
        return html(app_page(app, views, _top(review)), cookies=review.cookies)


def _require(**fields: str) -> None:
    """400 naming every query parameter left out or empty (all of them, where Litestar names only the first)."""
    missing = [name for name, value in fields.items() if not value]
    if missing:
        raise InvalidParameter(f"required: {', '.join(missing)}",
                               [{"path": f"query.{name}", "message": "required: a job id"} for name in missing])


def _status(review: Review) -> ServiceStatus:
    settings = review.services.settings
    try:
        review.services.store.redis.ping()
        reachable = "reachable"
    except redis.RedisError as exc:
        reachable = f"unreachable ({type(exc).__name__})"
    return ServiceStatus(version=ragpulse.__version__, redis=reachable,
                         auth="open (loopback, no API keys)" if settings.open_access else "API keys",
                         retention_days=round(settings.result_ttl_seconds / 86400, 2),
                         judge=settings.default_judge, judge_problem=kinds.default_judge_problem(settings))


def _top(review: Review) -> str:
    return top_bar(review.tenant, review.session.csrf, not review.services.settings.open_access)
