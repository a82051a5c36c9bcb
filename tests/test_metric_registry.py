"""The metric registry: every declared metric reaches the JSON report, its OpenAPI schema, `ragpulse eval`'s text
and /metrics with no edit beyond its declaration (and its name in model/metric_keys, which the wire schema below the
registry checks targets against); context precision is the worked example."""

from __future__ import annotations

import httpx
import msgspec
import pytest

from ragpulse.model.verdicts import DocRelevance, JudgeOutput
from ragpulse.metrics.generation import context_precision
from ragpulse.metrics.registry import GENERATION, RETRIEVAL, metric_for_key
from ragpulse.model import metric_keys
from ragpulse.monitoring import catalog
from ragpulse.reporting.report import Report
from ragpulse.reporting.render import render_report
from tests.support import wait_for_job


def test_the_wire_schemas_metric_keys_are_exactly_the_registrys() -> None:
    # model/ sits below the registry, so BatchOptions checks `targets` against these names, not the declarations.
    assert metric_keys.AT_K == tuple(m.name for m in RETRIEVAL if m.at_k)
    assert metric_keys.WHOLE_RANKING == tuple(m.name for m in RETRIEVAL if not m.at_k)
    assert metric_keys.GENERATION == tuple(m.name for m in GENERATION)
    names = [m.name for m in (*RETRIEVAL, *GENERATION)] + ["recal", "mrr5", ""]
    for key in [*names, *(f"{name}@5" for name in names), *(f"{name}@" for name in names)]:
        assert metric_keys.is_metric_key(key) == (metric_for_key(key) is not None), key


def scored(*scores: int) -> JudgeOutput:
    relevance = [DocRelevance(doc_id=f"d{rank}", score=s, rank=rank) for rank, s in enumerate(scores, start=1)]
    return JudgeOutput(claims=[], answer_relevance=3, context_relevance=relevance, answerable_from_context=True,
                       abstained=False)


@pytest.mark.parametrize(("scores", "expected"), [
    ((3, 1, 2), (1 / 1 + 2 / 3) / 2),     # useful at ranks 1 and 3
    ((1, 3), (1 / 2) / 1),                # the only useful document sits at rank 2
    ((2, 3, 1, 1), 1.0),                  # every useful document ahead of the useless ones
    ((1, 1), 0.0),                        # nothing useful
])
def test_context_precision_rewards_useful_documents_ranked_first(scores: tuple[int, ...], expected: float) -> None:
    assert context_precision(scored(*scores)) == pytest.approx(expected)


def test_context_precision_orders_by_rank_not_by_list_order() -> None:
    out = scored(1, 3)
    out.context_relevance.reverse()                                     # the judge listed rank 2 first
    assert context_precision(out) == pytest.approx(0.5)
    assert context_precision(scored()) is None                          # nothing scored: no value, not 0


def test_names_are_unique_and_every_prometheus_family_is_in_the_catalog() -> None:
    names = [m.name for m in GENERATION] + [m.name for m in RETRIEVAL]
    assert len(names) == len(set(names))
    for metric in GENERATION:
        for family in (metric.prometheus, metric.population):
            if family is not None:
                assert catalog.BY_NAME[family.name] is family


GROUNDED = {"id": "w1", "text": "The warranty lasts two years from the date of purchase."}
OTHER = {"id": "o1", "text": "Shipping takes three to five working days."}


@pytest.mark.integration
def test_every_registered_metric_reaches_report_schema_text_and_metrics(client: httpx.Client) -> None:
    traces = [
        {"trace_id": "m0", "query": "How long is the warranty?", "answer": "The warranty lasts two years.",
         "retrieved_docs": [OTHER, GROUNDED], "gold_doc_ids": ["w1"], "question_type": "single_fact",
         "reference_answer": "Two years from purchase."},
        {"trace_id": "m1", "query": "Is there a lifetime guarantee?", "answer": "Yes, there is a lifetime guarantee.",
         "retrieved_docs": [OTHER], "answerable": False},
    ]
    accepted = client.post("/v1/batches", json={"traces": traces, "options": {"judge": "local"}})
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]
    assert wait_for_job(client, job_id)["status"] == "finished"
    report = client.get(f"/v1/jobs/{job_id}/report").json()
    typed = msgspec.convert(report, Report)
    text = render_report(typed)
    schema = client.get("/schema/openapi.json").json()["components"]["schemas"]
    exposition = client.get("/metrics").text
    for metric in GENERATION:
        assert metric.name in report["generation"], metric.name
        assert metric.name in schema["GenerationSection"]["properties"], metric.name
        assert f"  {metric.name} " in text, metric.name
        if metric.breakdown:
            assert metric.name in report["by_question_type"]["single_fact"]["generation"], metric.name
        if metric.prometheus is not None:
            suffix = "_total" if metric.prometheus.kind == "counter" else ""
            assert f"# TYPE {metric.prometheus.name}{suffix} {metric.prometheus.kind}" in exposition, metric.name
    precision = report["generation"]["context_precision"]
    assert precision["n"] == 2 and 0.0 <= precision["mean"] <= 1.0
    for metric in RETRIEVAL:
        assert metric.key(5) in report["retrieval"] or metric.name in report["retrieval"], metric.name
