"""The report built from per-trace results, and its text rendering, on small exact cases."""

from __future__ import annotations

import asyncio
import json
from html import escape

import msgspec
import pytest

from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.exceptions import JudgeOutputInvalid
from ragpulse.metrics.registry import GENERATION, RETRIEVAL, retrieval_metric
from ragpulse.metrics.stats import estimate, estimate_columns
from ragpulse.model.estimate import DEGENERATE_METHOD, BOOTSTRAP_METHOD, WILSON_METHOD
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.reporting.build import build_report
from ragpulse.model.verdicts import JudgeCall, Judgment
from ragpulse.reporting.html import render_html
from ragpulse.reporting.render import render_report
from tests.test_generation_metrics import Scripted

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


METHOD = {"mean": BOOTSTRAP_METHOD, "proportion": WILSON_METHOD}


class Catalogued(Scripted):
    """A scripted judge under a catalogued judge name, as the report's judge breakdown expects."""

    name = "anthropic"


def test_the_interval_method_follows_the_declared_aggregation_not_the_data() -> None:
    assert estimate([0.0, 1.0, 1.0, 0.0], "mean").ci_method == BOOTSTRAP_METHOD       # 0/1 values, still a mean
    assert estimate([0.0, 1.0, 1.0, 0.0], "proportion").ci_method == WILSON_METHOD
    with pytest.raises(ValueError, match="0/1"):
        estimate([0.5, 1.0], "proportion")
    columns = {"m": [0.0, 1.0, 1.0], "p": [0.0, 1.0, 1.0], "x": [0.2, 0.4, 1.0]}
    methods = {n: e.ci_method for n, e in estimate_columns(columns, {"m": "mean", "p": "proportion",
                                                                     "x": "mean"}).items()}
    assert methods == {"m": BOOTSTRAP_METHOD, "p": WILSON_METHOD, "x": BOOTSTRAP_METHOD}


def test_report_intervals_follow_the_registry_for_retrieval_and_generation() -> None:
    # k = 1 and one gold document: recall@1, precision@1, ndcg@1, mrr and map are all 0 or 1 here.
    options = BatchOptions(k=[1])
    traces = [retrieval_only(f"t{i}", ["a" if i % 2 else "zzz"]) for i in range(6)]
    judges = [Catalogued(["supported"]), Catalogued(["unsupported"])]
    results = [asyncio.run(evaluate_trace(t, i, options, judges[i % 2])) for i, t in enumerate(traces)]
    report = build_report("job", options, results)
    assert {report.retrieval[key].mean for key in ("recall@1", "precision@1", "mrr", "map")} == {0.5}
    for key, est in report.retrieval.items():
        assert est.ci_method == METHOD[retrieval_metric(key).aggregation], key
    assert report.retrieval["recall@1"].ci_method == BOOTSTRAP_METHOD
    assert report.retrieval["hit_rate@1"].ci_method == WILSON_METHOD
    for metric in GENERATION:
        est = getattr(report.generation, metric.name)
        if est is not None:
            # a mean whose values are all equal (answer_relevance here) has nothing to bootstrap: bounded instead
            degenerate = metric.aggregation == "mean" and est.ci_method == DEGENERATE_METHOD and est.ci95[1] > est.ci95[0]
            assert degenerate or est.ci_method == METHOD[metric.aggregation], metric.name
    assert report.generation.faithfulness.ci_method == BOOTSTRAP_METHOD          # values 1, 0, 1, 0, ...
    assert report.generation.hallucination_rate.ci_method == WILSON_METHOD
    assert {m.name for m in RETRIEVAL} == {retrieval_metric(key).name for key in report.retrieval}


class Unrepaired:
    """A judge whose output stays invalid after its repair turn on every trace: two calls, then JudgeOutputInvalid,
    as the structured judge raises it."""

    name, model = "anthropic", "claude-sonnet-4-6"
    problem = "judge output invalid after one repair: Expected `array`, got `int` - at `$.claims`"

    async def ajudge(self, trace: Trace) -> Judgment:
        calls = [JudgeCall(judge=self.name, model=self.model, prompt_version="p", raw_output={"claims": n})
                 for n in (3, 4)]
        raise JudgeOutputInvalid(self.problem, calls)


def test_a_judge_failing_every_trace_after_its_repair_is_named_and_counted() -> None:
    options = BatchOptions(k=[1, 3])
    results = [asyncio.run(evaluate_trace(retrieval_only(f"t{i}", ["a"]), i, options, Unrepaired()))
               for i in range(65)]
    assert {r.status for r in results} == {"judge_error"}
    report = build_report("job", options, results)
    cost = report.generation.cost
    # 65 traces x (first call + repair turn) = 130 calls; every repair turn counts, though none fixed the output
    assert (cost.calls, cost.repair_calls, cost.judge_errors) == (130, 65, 65)
    [failure] = report.generation.judge_failures
    assert (failure.judge, failure.model, failure.traces, failure.failed, failure.repair_calls) == (
        "anthropic", "claude-sonnet-4-6", 65, 65, 65)
    assert failure.reasons == {Unrepaired.problem: 65}
    named = (f"judge: anthropic (claude-sonnet-4-6) - 65 of 65 traces failed (65 after a repair turn): "
             f"{Unrepaired.problem} (65)")
    text = render_report(report)
    assert named in text and "judge: none" not in text
    assert "judge cost: 130 calls (2.00 per trace, 65 repairs, 65 errors)" in text
    page = render_html(report)
    assert escape(named) in page and "judge: none" not in page
    body = json.loads(msgspec.json.encode(report))["generation"]
    assert body["cost"]["repair_calls"] == 65 and body["cost"]["judge_errors"] == 65
    assert body["judge_failures"] == [{"judge": "anthropic", "model": "claude-sonnet-4-6", "traces": 65, "failed": 65,
                                       "repair_calls": 65, "reasons": {Unrepaired.problem: 65}}]


def test_judge_none_is_kept_for_judging_off() -> None:
    report = report_of([retrieval_only("p1", ["a"])])
    assert report.generation.judge_failures == [] and report.generation.cost.traces == 0
    assert "GENERATION (judge: none; 0 judged" in render_report(report)
    assert "judge: none" in render_html(report)
