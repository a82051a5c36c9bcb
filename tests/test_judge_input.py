"""The judge sees each trace cut to RAGPULSE_JUDGE_MAX_*_CHARS, and the cut is recorded and counted, never silent."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from prometheus_client import CollectorRegistry

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.judges.local import LocalJudge
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.monitoring.collector import RedisMetricsCollector
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.monitoring.recorder import count_result
from ragpulse.reporting.build import build_report

FACT = "Refunds are issued within 14 days of the return. "


def trace(answer: str, *docs: str) -> Trace:
    return Trace(query="When are refunds issued?", answer=answer,
                 retrieved_docs=[RetrievedDoc(id=f"d{i}", text=text) for i, text in enumerate(docs)])


def test_a_trace_within_the_limits_is_handed_over_as_it_is() -> None:
    small = trace(FACT, FACT, FACT)
    judged, cut = for_judging(small, JudgeInputLimits())
    assert judged is small and cut == []


def test_answer_documents_and_context_are_cut_at_their_limits() -> None:
    limits = JudgeInputLimits(answer_chars=100, doc_chars=120, context_chars=300)
    big = trace(FACT * 10, FACT * 10, FACT, FACT * 10, FACT * 10, None)   # 500, 50, 500, 500 chars, no text
    judged, cut = for_judging(big, limits)
    assert cut == ["answer", "documents"]
    assert 80 <= len(judged.answer) <= 100 and big.answer.startswith(judged.answer)
    lengths = [len(doc.text or "") for doc in judged.retrieved_docs]
    assert all(n <= 120 for n in lengths) and sum(lengths) <= 300
    assert lengths[1] == len(FACT.strip()) + 1                          # a short document is kept whole
    assert lengths[3] < 120 and lengths[4] == 0                         # the context budget runs out in rank order
    assert [d.id for d in judged.retrieved_docs] == [d.id for d in big.retrieved_docs]   # every rank stays
    assert not judged.answer.endswith(" ") and judged.answer.endswith(("return.", "days", "the", "of"))  # no half word
    assert big.answer == FACT * 10                                      # the stored trace is untouched


def test_only_documents_or_only_the_answer() -> None:
    limits = JudgeInputLimits(answer_chars=1000, doc_chars=60, context_chars=1000)
    assert for_judging(trace(FACT, FACT * 3), limits)[1] == ["documents"]
    assert for_judging(trace(FACT * 30, FACT), limits)[1] == ["answer"]


def test_settings_name_the_limits_and_default_to_defaults() -> None:
    assert (Settings().judge_max_answer_chars, Settings().judge_max_doc_chars, Settings().judge_max_context_chars) == (
        defaults.JUDGE_MAX_ANSWER_CHARS, defaults.JUDGE_MAX_DOC_CHARS, defaults.JUDGE_MAX_CONTEXT_CHARS)
    settings = Settings.from_env({"RAGPULSE_JUDGE_MAX_ANSWER_CHARS": "10", "RAGPULSE_JUDGE_MAX_DOC_CHARS": "20",
                                  "RAGPULSE_JUDGE_MAX_CONTEXT_CHARS": "30"})
    assert (settings.judge_max_answer_chars, settings.judge_max_doc_chars, settings.judge_max_context_chars) == (
        10, 20, 30)


def test_a_huge_trace_is_judged_on_its_cut_and_flagged() -> None:
    """1,000 documents of 30 KB and a 1 MiB answer: the judge sees the default caps' worth, in about a second."""
    doc = (FACT * 700)[:30_000]
    huge = Trace(query="When are refunds issued?", answer=(FACT * 25_000)[:1_048_576],
                 retrieved_docs=[RetrievedDoc(id=f"d{i}", text=doc) for i in range(1000)])
    started = time.perf_counter()
    result = asyncio.run(evaluate_trace(huge, 0, BatchOptions(), LocalJudge()))
    assert time.perf_counter() - started < 30                          # uncut: minutes
    assert result.status == "ok" and result.judge_input_truncated == ["answer", "documents"]
    assert len(result.judgments[0].output.context_relevance) == 1000   # every rank judged, past-budget ones empty
    assert all(c.verdict == "supported" for c in result.claims)
    seen = defaults.JUDGE_MAX_CONTEXT_CHARS // defaults.JUDGE_MAX_DOC_CHARS + 1    # documents with text left
    assert {e.doc_id for c in result.claims for e in c.evidence} <= {f"d{i}" for i in range(seen)}


def test_truncation_is_counted_in_metrics_and_the_report(redis_client) -> None:
    limits = JudgeInputLimits(answer_chars=60, doc_chars=1000, context_chars=1000)
    results = [asyncio.run(evaluate_trace(t, i, BatchOptions(), LocalJudge(), limits))
               for i, t in enumerate([trace(FACT * 3, FACT), trace(FACT, FACT), trace(FACT * 2, FACT)])]
    assert [r.judge_input_truncated for r in results] == [["answer"], [], ["answer"]]
    assert build_report("job", BatchOptions(), results).counts.judge_input_truncated == 2
    tenant, app = f"t-{uuid.uuid4().hex[:6]}", f"a-{uuid.uuid4().hex[:6]}"
    batch = MetricsBatch({app}, {tenant})
    for result in results:
        count_result(batch, tenant, msgspec_replace_app(result, app))
    batch.flush(redis_client)
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}))
    value = registry.get_sample_value
    assert value("ragpulse_judge_input_truncated_total", {"tenant": tenant, "app": app, "environment": "production",
                                                          "part": "answer"}) == 2
    assert value("ragpulse_judge_input_truncated_total", {"tenant": tenant, "app": app, "environment": "production",
                                                          "part": "documents"}) == 0


def msgspec_replace_app(result, app: str):  # noqa: ANN001, ANN201
    import msgspec

    return msgspec.structs.replace(result, app=app)


@pytest.mark.parametrize("chars", [0, 1, 7])
def test_tiny_limits_cut_to_nothing_rather_than_fail(chars: int) -> None:
    judged, cut = for_judging(trace(FACT, FACT), JudgeInputLimits(chars, chars, chars))
    assert len(judged.answer) <= chars and len(judged.retrieved_docs[0].text) <= chars and len(cut) == 2


def test_the_report_says_when_verdicts_rest_on_cut_input() -> None:
    from ragpulse.reporting.html import render_html
    from ragpulse.reporting.render import render_report

    limits = JudgeInputLimits(answer_chars=60, doc_chars=1000, context_chars=1000)
    results = [asyncio.run(evaluate_trace(t, i, BatchOptions(), LocalJudge(), limits))
               for i, t in enumerate([trace(FACT * 3, FACT), trace(FACT, FACT)])]
    report = build_report("job", BatchOptions(), results)
    assert "judged on cut input (RAGPULSE_JUDGE_MAX_*_CHARS) 1" in render_report(report)
    assert "1 judged on cut input" in render_html(report, results)
    whole = build_report("job", BatchOptions(), results[1:])
    assert "cut input" not in render_report(whole) and "cut input" not in render_html(whole, results[1:])
