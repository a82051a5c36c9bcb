"""The landing page at `/`: the service's status, where the API is described, recent jobs and apps."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

import msgspec

from ragpulse.model.job_list import JobSummary
from ragpulse.reporting.pages.frame import ui_page
from ragpulse.reporting.pages.job_list import jobs_table


class ServiceStatus(msgspec.Struct, kw_only=True, frozen=True):
    """What the landing page says about the service."""

    version: str
    redis: str
    """`reachable`, or why not."""
    auth: str
    """`API keys` or `open (loopback, no keys)`."""
    retention_days: float
    judge: str
    """The default judge (RAGPULSE_JUDGE), which judges every production trace."""
    judge_problem: str | None = None
    """Why the default judge cannot judge here and what to set (kinds.default_judge_problem); None when it can."""


def landing_page(status: ServiceStatus, recent: list[JobSummary], apps: list[str], top: str) -> str:
    """The whole landing page."""
    facts = "".join(f"<dt>{name}</dt><dd data-fact=\"{key}\">{escape(value)}</dd>" for key, name, value in (
        ("version", "Version", status.version), ("redis", "Job store (Redis)", status.redis),
        ("auth", "Authentication", status.auth),
        ("retention", "Jobs kept for", f"{status.retention_days:g} days"),
        ("judge", "Default judge", status.judge + (" (not configured)" if status.judge_problem else ""))))
    return ui_page("ragpulse", (
        f"<h2>Service</h2><dl class=facts>{facts}</dl>{_judge_problem(status.judge_problem)}"
        "<p>The HTTP API is described by its <a href=\"/schema\">OpenAPI schema</a>"
        " (<a href=\"/schema/openapi.json\">JSON</a>).</p>"
        f"<h2>Recent jobs</h2>{jobs_table(recent)}<p><a href=\"/jobs\">All jobs →</a></p>"
        f"<h2>Apps</h2>{_apps(apps)}"), top)


def _judge_problem(problem: str | None) -> str:
    if problem is None:
        return ""
    return f"<p class=problem role=alert data-judge-problem><strong>Not judging:</strong> {escape(problem)}.</p>"


def _apps(apps: list[str]) -> str:
    if not apps:
        return "<p class=note>No app has a job or a sampling policy yet.</p>"
    rows = "".join(
        f"<tr data-app=\"{escape(app)}\"><td>{escape(app)}</td>"
        f"<td><a href=\"/apps/{quote(app, safe='')}\">monitor</a></td>"
        f"<td><a href=\"/jobs?app={quote(app, safe='')}\">jobs</a></td>"
        f"<td><a href=\"/review/{quote(app, safe='')}\">review</a></td></tr>" for app in apps)
    return (f"<table class=apps><thead><tr><th>App</th><th colspan=3>Pages</th></tr></thead><tbody>{rows}</tbody>"
            "</table>")
