"""The report built from per-trace results, and its text rendering, on small exact cases."""

from __future__ import annotations

import asyncio

from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.reporting.build import build_report
from ragpulse.reporting.render import render_report

DOCS = [RetrievedDoc(id=d, text=d) for d in ("a", "b", "c")]


def retrieval_only(trace_id: str, gold: list[str], **extra: object) -> Trace:
    return Trace(trace_id=trace_id, query="q", answer="x", gold_doc_ids=gold, retrieved_docs=DOCS, **extra)


def report_of(traces: list[Trace], options: BatchOptions = BatchOptions(k=[1, 3])):
    results = [asyncio.run(evaluate_trace(t, i, options)) for i, t in enumerate(traces)]
    return build_report("job", options, results)


def test_worst_traces_lists_only_failing_traces_worst_first() -> None:
    traces = [retrieval_only("perfect", ["a"]), retrieval_only("half", ["a", "zzz"]),
              retrieval_only("miss", ["zzz"]), retrieval_only("also-perfect", ["b", "c"])]
    report = report_of(traces)
    assert [(w["trace_id"], w["value"]) for w in report.worst] == [("miss", 0.0), ("half", 0.5)]
    assert report.worst[0]["metric"] == "recall@3" and report.worst[0]["missed_doc_ids"] == ["zzz"]
    text = render_report(report)
    assert "WORST TRACES by recall@3 (below 1.000, worst first)" in text
    assert "perfect" not in text.split("WORST TRACES")[1]


def test_worst_traces_is_empty_when_nothing_fails() -> None:
    report = report_of([retrieval_only("p1", ["a"]), retrieval_only("p2", ["a", "b", "c"])])
    assert report.worst == []
    assert "WORST TRACES by recall@3: none below 1.000" in render_report(report)


def test_a_report_without_judged_traces_renders_insufficient_data() -> None:
    text = render_report(report_of([retrieval_only("half", ["a", "zzz"])]))
    matrix = text.split("DIAGNOSTIC MATRIX")[1].split("\n\n")[0]
    assert "primary issue: insufficient_data. No trace was judged: judge the answers" in matrix
    assert "retrieval is good" not in matrix and "faithful" not in matrix
