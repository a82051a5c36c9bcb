"""The frame of the web UI's pages: the shared stylesheet, the navigation bar, status badges."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from ragpulse.reporting.review_html import CSS, csrf_field

UI_CSS = CSS + """
nav { display: flex; flex-wrap: wrap; gap: 4px 16px; } nav a { color: #1a73e8; font-weight: 600; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; white-space: nowrap;
          background: #f1f3f4; }
.status.finished { background: #e6f4ea; color: var(--ok); } .status.failed { background: #fce8e6; color: var(--bad); }
.status.finished_with_errors { background: #fef7e0; color: var(--warn); }
.id { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 13px; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 2px 16px; margin: 0; }
.facts dt { color: var(--muted); } .facts dd { margin: 0; overflow-wrap: anywhere; }
.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: end; margin: 8px 0 16px; }
.filters .field { margin: 0; } .filters input, .filters select { font: inherit; padding: 6px 8px; max-width: 14em; }
.pager { margin-top: 12px; }
.scroll { overflow-x: auto; max-width: 100%; } .scroll table { min-width: 640px; }
.change.regressed { color: var(--bad); font-weight: 600; } .change.improved { color: var(--ok); font-weight: 600; }
.change.untested { color: var(--muted); } .key { white-space: nowrap; }
.sides { margin: 0; padding-left: 1.2em; font-size: 13px; }
.problem { border-left: 4px solid var(--bad); background: #fce8e6; padding: 8px 12px; overflow-wrap: anywhere; }
.caution { border-left: 4px solid var(--warn); background: #fef7e0; padding: 8px 12px; overflow-wrap: anywhere; }
@media (max-width: 900px) { .wide { display: none; } }
"""
"""The review pages' stylesheet plus the list, landing and compare rules; `.wide` columns are hidden below 900 px;
`.scroll` boxes scroll their wide table sideways, never the page."""


def ui_page(title: str, body: str, top: str) -> str:
    """A whole page of the UI: `title` is plain text, `body` and `top` are markup built by this package."""
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape(title)}</title><style>{UI_CSS}</style></head><body>{top}<main>{body}</main></body></html>")


def top_bar(tenant: str, csrf: str, can_log_out: bool) -> str:
    """The bar over every page: where to go, for which tenant, and the logout button."""
    logout = (f"<form method=post action=\"/review/logout\">{csrf_field(csrf)}"
              "<button class=quiet type=submit>Log out</button></form>") if can_log_out else ""
    return ("<header><h1>ragpulse</h1><nav><a href=\"/\">Home</a><a href=\"/jobs\">Jobs</a>"
            "<a href=\"/review\">Review</a><a href=\"/schema\">API schema</a></nav>"
            f"<span class=meta>tenant <b>{escape(tenant)}</b></span>{logout}</header>")


def status_badge(status: str) -> str:
    return f"<span class=\"status {escape(status)}\">{escape(status.replace('_', ' '))}</span>"


def job_href(job_id: str) -> str:
    """The job's page in the UI (its report)."""
    return f"/jobs/{quote(job_id, safe='')}"
