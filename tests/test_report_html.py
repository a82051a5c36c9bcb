"""The report page's parts without a browser: where the failing list stops, and that it says so."""

from __future__ import annotations

import asyncio
import re

import pytest

from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.model.trace import BatchOptions
from ragpulse.reporting import trace_html
from ragpulse.reporting.build import build_report
from ragpulse.reporting.html import failing_traces, pending_page, render_html
from tests.test_report import retrieval_only


def _missing_all(n: int):  # noqa: ANN202 - (report, results)
    options = BatchOptions(k=[1])
    traces = [retrieval_only(f"t{i}", ["zzz"]) for i in range(n)]      # every trace misses its gold document
    results = [asyncio.run(evaluate_trace(t, i, options)) for i, t in enumerate(traces)]
    return build_report("job", options, results), results


def test_the_page_says_where_the_failing_list_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    report, results = _missing_all(5)
    monkeypatch.setattr(trace_html, "FAILING_SHOWN", 3)
    failing = failing_traces(report, results)
    assert len(failing) == 5                                        # chosen in full; the page cuts
    page = render_html(report, failing)
    assert len(re.findall(r"class=trace data-trace-id", page)) == 3
    assert "3 of 5 failing traces shown" in page and "The page stops at 3" in page


def test_every_failing_trace_below_the_bound_is_shown_without_a_stop_sentence() -> None:
    report, results = _missing_all(4)
    page = render_html(report, failing_traces(report, results), {0: "What is <b>this</b>?"})
    assert "4 of 4 failing traces shown" in page and "The page stops" not in page
    assert "trace 1 of 4 in the batch" in page and "What is &lt;b&gt;this&lt;/b&gt;?" in page


@pytest.mark.parametrize("status, refreshes", [("queued", True), ("running", True), ("failed", False)])
def test_a_pending_page_names_its_status_and_refreshes_only_while_it_can_change(status: str, refreshes: bool) -> None:
    page = pending_page("j1", status, "the report is not ready yet")
    assert f"data-status='{status}'" in page
    assert ("http-equiv=refresh" in page) is refreshes
