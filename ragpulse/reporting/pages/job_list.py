"""The job list: a table of jobs (shared with the landing page), its filter form and its pager."""

from __future__ import annotations

from html import escape
from typing import get_args
from urllib.parse import urlencode

from ragpulse.model.job_list import JobFilter, JobsPage, JobSummary
from ragpulse.model.results import JobStatus
from ragpulse.reporting.pages.frame import job_href, status_badge, ui_page


def jobs_table(items: list[JobSummary]) -> str:
    """One row per job; the job id links to its report page. `data-*` attributes carry the figures as the API
    gives them."""
    if not items:
        return "<p class=note>No jobs yet.</p>"
    rows = "".join(_row(item) for item in items)
    return ("<table class=jobs><thead><tr><th>Job</th><th>Status</th><th>Created</th><th class=wide>Finished</th>"
            "<th class=num>Traces</th><th class=num>Failed</th><th>Apps</th><th>Run</th><th class=wide>Variant</th>"
            f"<th class=wide>Judge</th></tr></thead><tbody>{rows}</tbody></table>")


def _row(item: JobSummary) -> str:
    p = item.progress
    return (f"<tr data-job=\"{escape(item.job_id)}\"><td class=id><a href=\"{job_href(item.job_id)}\">"
            f"{escape(item.job_id)}</a></td><td data-status=\"{escape(item.status)}\">{status_badge(item.status)}</td>"
            f"<td>{_time(item.created_at)}</td><td class=wide>{_time(item.finished_at)}</td>"
            f"<td class=num data-total={p.total}>{p.done + p.failed + p.skipped} / {p.total}</td>"
            f"<td class=num data-failed={p.failed}>{p.failed}</td><td>{escape(', '.join(item.apps)) or '—'}</td>"
            f"<td>{escape(item.run or '—')}</td><td class=wide>{escape(item.variant)}</td>"
            f"<td class=wide>{escape(item.judge or 'default')}</td></tr>")


def _time(stamp: str | None) -> str:
    """An RFC 3339 time, shortened to the minute for reading; the full value in `datetime`."""
    if stamp is None:
        return "—"
    return f"<time datetime=\"{escape(stamp)}\">{escape(stamp[:16].replace('T', ' '))}</time>"


def filter_form(where: JobFilter) -> str:
    """GET form of the list's filters (the same query parameters as GET /v1/jobs)."""
    options = "".join(f"<option value=\"{s}\"{' selected' if s == where.status else ''}>{s.replace('_', ' ')}"
                      "</option>" for s in get_args(JobStatus))
    return ("<form class=filters method=get action=\"/jobs\">"
            f"{_text('app', where.app)}{_text('run', where.run)}"
            "<label class=field for=status><span>Status</span><select id=status name=status><option value=\"\">any"
            f"</option>{options}</select></label><button type=submit>Filter</button></form>")


def _text(name: str, value: str | None) -> str:
    return (f"<label class=field for={name}><span>{name.capitalize()}</span><input type=text id={name} "
            f"name={name} value=\"{escape(value or '')}\"></label>")


def job_list_page(page: JobsPage, where: JobFilter, top: str) -> str:
    """The whole job list page, with a link to the next page when there is one."""
    pager = ""
    if page.next_cursor is not None:
        query = {k: v for k, v in {"app": where.app, "run": where.run, "status": where.status,
                                   "cursor": page.next_cursor}.items() if v}
        pager = f"<p class=pager><a rel=next href=\"/jobs?{escape(urlencode(query))}\">Older jobs →</a></p>"
    return ui_page("ragpulse: jobs", f"<h2>Jobs</h2>{filter_form(where)}{jobs_table(page.items)}{pager}", top)
