"""The one place where errors become HTTP responses: RFC 9457 problem details, never a stack trace."""

from __future__ import annotations

import logging
import math
import re
from http import HTTPStatus
from typing import Any

import msgspec
import redis
from litestar import Request, Response
from litestar.response import Redirect
from litestar.exceptions import HTTPException, ServiceUnavailableException, TooManyRequestsException

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.exceptions import (
    Backlogged, BodiesInFlight, BodyTimeout, IdempotencyKeyReused, OverBacklogShare, OverBodyBudget,
    Conflict, DatasetNotFound, Forbidden, InputError, LoginRequired, RateLimited, InvalidBody, InvalidParameter, JobNotFound,
    MalformedBody, MisdirectedRequest, StoreRefused, StoreUnavailable,
    TooLarge, TooManyQueued, TraceNotFound, SessionNotFound, Unauthorized, Unsupported, UnsupportedMediaType,
)
from ragpulse.monitoring.api_metrics import ApiMetrics

log = logging.getLogger("ragpulse.api")
PROBLEM = "application/problem+json"

_STATUS: dict[type[Exception], tuple[int, str]] = {
    MalformedBody: (400, "Malformed JSON"),
    InvalidParameter: (400, "Invalid parameter"),
    Conflict: (409, "Conflict"),
    Unsupported: (422, "Unprocessable request"),
    IdempotencyKeyReused: (422, "Idempotency key reused"),
    InvalidBody: (422, "Invalid request body"),
    TooLarge: (413, "Payload too large"),
    TooManyQueued: (429, "Too many queued jobs"),
    BodyTimeout: (408, "Request timeout"),
    UnsupportedMediaType: (415, "Unsupported media type"),
    Unauthorized: (401, "Unauthorized"),
    Forbidden: (403, "Forbidden"),
    MisdirectedRequest: (421, "Misdirected request"),
    JobNotFound: (404, "Job not found"),
    TraceNotFound: (404, "Trace not found"),
    SessionNotFound: (404, "Session not found"),
    DatasetNotFound: (404, "Dataset not found"),
    BodiesInFlight: (503, "Service unavailable"),
}

_UNREAD = (BodyTimeout, OverBodyBudget, BodiesInFlight)
"""Errors raised while a body is still to come: the rest is not waited for, the server closes the connection."""


class ProblemError(msgspec.Struct):
    """One failing input, named by its path: `$.traces[3].query` in the body, `query.limit`, `path.job_id`."""

    path: str
    message: str


class ProblemDetails(msgspec.Struct, kw_only=True, omit_defaults=True):
    """An RFC 9457 problem details body: every error this API answers (`application/problem+json`)."""

    type: str = "about:blank"
    title: str
    """The status's short name (`Invalid request body`, `Job not found`, ...)."""
    status: int
    """The HTTP status code, repeated."""
    detail: str
    """What went wrong, for a human; never a stack trace."""
    errors: list[ProblemError] = []
    """Every failing input found (400, 409, 422), at most 100; absent when there is none to name."""
    errors_truncated: bool = False
    """True when `errors` was cut at its limit and more inputs fail; absent otherwise."""


def problem(status: int, title: str, detail: str, errors: list[dict[str, Any]] | None = None,
            headers: dict[str, str] | None = None, errors_truncated: bool = False) -> Response[ProblemDetails]:
    """A problem-details response; `errors_truncated: true` when `errors` was cut at its limit."""
    listed = [ProblemError(str(e.get("path", "$")), str(e.get("message", ""))) for e in errors or ()]
    body = ProblemDetails(title=title, status=status, detail=detail, errors=listed, errors_truncated=errors_truncated)
    return Response(body, status_code=status, media_type=PROBLEM, headers=headers)


def exception_handlers(metrics: ApiMetrics) -> dict[type[Exception], Any]:
    """Handlers for every error the API can meet, each counting the rejection by status code."""

    def counted(response: Response[Any]) -> Response[Any]:
        metrics.rejected.labels(status=str(response.status_code)).inc()
        return response

    def domain(_: Request, exc: Exception) -> Response[Any]:
        if isinstance(exc, TooManyQueued):
            return counted(rejection(exc, {"Retry-After": str(defaults.GENERATION_QUEUED_RETRY_AFTER_SECONDS)}))
        if not isinstance(exc, _UNREAD):
            return counted(rejection(exc))
        headers = {"connection": "close"}
        if isinstance(exc, BodiesInFlight):
            headers["Retry-After"] = str(defaults.INFLIGHT_RETRY_AFTER_SECONDS)
        return counted(rejection(exc, headers))

    def unavailable(_: Request, exc: Exception) -> Response[Any]:
        log.warning("redis unavailable: %s", exc)
        detail = (f"the job store (Redis) refused the write ({exc}); retry later" if isinstance(exc, StoreRefused)
                  else "the job store (Redis) is unreachable; retry later")
        return counted(problem(503, "Service unavailable", detail,
                               headers={"Retry-After": str(defaults.RETRY_AFTER_SECONDS)}))

    def http(_: Request, exc: Exception) -> Response[Any]:
        assert isinstance(exc, HTTPException)
        errors = _litestar_errors(exc.extra) or _missing_parameter(exc.detail)
        headers = exc.headers
        if exc.status_code == 413:   # a body cut off at the limit while it streamed in: do not wait for the rest
            headers = {**(headers or {}), "connection": "close"}
        return counted(problem(exc.status_code, _title(exc), exc.detail, errors, headers))

    def unexpected(request: Request, exc: Exception) -> Response[Any]:
        log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
        return counted(problem(500, "Internal server error", "an unexpected error occurred; it has been logged"))

    def to_login(_: Request, exc: Exception) -> Response[Any]:
        assert isinstance(exc, LoginRequired)
        return Redirect("/review/login", query_params={"next": exc.next_path}, status_code=303,
                        headers={"Cache-Control": "no-store"})

    return {
        **dict.fromkeys(_STATUS, domain),
        LoginRequired: to_login,
        StoreUnavailable: unavailable,
        redis.ConnectionError: unavailable,
        redis.TimeoutError: unavailable,
        HTTPException: http,
        Exception: unexpected,
    }


def over_ingest_rate(exc: RateLimited, tenant: str, settings: Settings, traces: int) -> TooManyRequestsException:
    """The 429 of a post refused by the tenant's ingest token bucket (batches and online posts alike)."""
    return TooManyRequestsException(
        f"tenant {tenant!r} is over its ingest rate of {settings.tenant_traces_per_second} traces/s "
        f"(bursts of {settings.tenant_traces_burst}); these {traces} traces fit in {exc.retry_after:.1f} s",
        headers={"Retry-After": str(max(1, math.ceil(exc.retry_after)))})


def backlogged(exc: Backlogged, tenant: str, settings: Settings) -> ServiceUnavailableException:
    """The 503 of an online post refused because the online stream is full, or the tenant holds its share of it."""
    cap = f"RAGPULSE_ONLINE_MAX_BACKLOG={settings.online_max_backlog}"
    if isinstance(exc, OverBacklogShare):
        detail = (f"tenant {tenant!r} holds {exc.held} unprocessed online posts, its share of the backlog ({exc.share} "
                  f"of {cap}, divided among the tenants with posts waiting); retry once the workers have caught up")
    else:
        detail = f"{exc}: the workers are behind ({cap}); retry later"
    return ServiceUnavailableException(detail, headers={"Retry-After": str(defaults.RETRY_AFTER_SECONDS)})


def rejection(exc: Exception, headers: dict[str, str] | None = None) -> Response[Any]:
    """The problem response of one of ragpulse's own errors (a key of _STATUS); `headers` are added to it."""
    status, title = next(v for k, v in _STATUS.items() if isinstance(exc, k))
    detail = exc.detail if isinstance(exc, InputError) else _detail(exc, title)
    errors = exc.errors if isinstance(exc, InputError) else _not_found_errors(exc)
    truncated = isinstance(exc, InputError) and exc.errors_truncated
    if isinstance(exc, Unauthorized):
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return problem(status, title, detail, errors, headers, truncated)


def _detail(exc: Exception, title: str) -> str:
    if not isinstance(exc, JobNotFound):
        return str(exc)
    which = f" (the {exc.role}, {exc.path})" if exc.role and exc.path else ""
    return f"no job {exc}{which} for this tenant"


def _not_found_errors(exc: Exception) -> list[dict[str, Any]] | None:
    """The input that named a missing job, when the request named more than one (`query.baseline`), or a missing
    dataset, when the error says which input named it."""
    if isinstance(exc, JobNotFound) and exc.path:
        return [{"path": exc.path, "message": f"no such job: the {exc.role or 'job'}"}]
    if isinstance(exc, DatasetNotFound) and exc.path:
        return [{"path": exc.path, "message": f"the tenant has no dataset {exc.name!r} and no generation job for one"}]
    return None


def _title(exc: HTTPException) -> str:
    try:
        return HTTPStatus(exc.status_code).phrase
    except ValueError:
        return "Error"


_MISSING = re.compile(r"^Missing required (?P<source>\w+) parameter '(?P<key>[^']+)'")


def _missing_parameter(detail: str) -> list[dict[str, Any]] | None:
    """The path of a required parameter left out (`query.baseline`): Litestar names it only in its detail."""
    match = _MISSING.match(detail)
    if match is None:
        return None
    source, key = match["source"], match["key"]
    return [{"path": f"{source}.{key.lower() if source == 'header' else key}", "message": "required"}]


def _litestar_errors(extra: Any) -> list[dict[str, Any]] | None:
    """Litestar's parameter validation errors, with a path naming the parameter (`query.limit`)."""
    if not isinstance(extra, list):
        return None
    errors = []
    for item in extra:
        if isinstance(item, dict) and "key" in item:
            source = getattr(item.get("source"), "value", item.get("source")) or "request"
            key = item["key"] if source != "header" else str(item["key"]).replace("_", "-").lower()  # its HTTP name
            errors.append({"path": f"{source}.{key}", "message": item.get("message", "")})
    return errors or None
