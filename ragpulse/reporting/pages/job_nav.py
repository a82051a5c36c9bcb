"""The web UI's bar over a job's report page (/jobs/{job_id}): back to the lists, and compare this job against a
baseline, either the previous job of its run (or app) or any job id typed into the form."""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from ragpulse.model.job_list import JobSummary


def compare_href(candidate: str, baseline: str) -> str:
    """The compare page of `candidate` against `baseline`."""
    return "/compare?" + urlencode({"candidate": candidate, "baseline": baseline})


def job_nav(job_id: str, previous: JobSummary | None, alike: str) -> str:
    """The bar: links home and to the jobs, a link comparing with `previous` (the job before this one of the same
    `alike`, a phrase such as `run nightly`), and a form taking any baseline job id."""
    if previous is None:
        suggested = f"<span class=note data-previous-none>no earlier finished job of {escape(alike)}</span>"
    else:
        suggested = (f"<a data-previous href=\"{escape(compare_href(job_id, previous.job_id))}\">with the previous job "
                     f"of {escape(alike)} (<span class=id>{escape(previous.job_id[:12])}</span>…)</a>")
    form = ("<form class=compare-form method=get action=\"/compare\" data-compare-form>"
            f"<input type=hidden name=candidate value=\"{escape(job_id)}\">"
            "<label>or with job <input name=baseline maxlength=64 required placeholder=\"baseline job id\" "
            "aria-label=\"baseline job id\"></label> <button type=submit>Compare</button></form>")
    return (f"<nav class=ui-nav aria-label=\"web UI\"><a href=\"/\">Home</a> · <a href=\"/jobs\">Jobs</a> · "
            f"Compare this job {suggested} {form}</nav>")
