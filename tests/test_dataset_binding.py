"""Binding traces to dataset items (the agreement rule, key facts as the reference), the dataset-bound report's
subsets, and the comparison's dataset mismatch: small exact cases, no Redis."""

from __future__ import annotations

import asyncio

from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.intake.binding import fill
from ragpulse.model.dataset import DatasetBinding, DatasetItem
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.reporting.build import build_report
from ragpulse.reporting.compare import dataset_mismatch
from ragpulse.reporting.pairing import pair_results


def bare(**fields: object) -> Trace:
    return Trace(query=fields.pop("query", ""), item_id="i1", **fields)  # type: ignore[arg-type]


def test_an_item_fills_a_bare_trace() -> None:
    item = DatasetItem(item_id="i1", query="Who?", relevance={"d1": 2, "d2": 0}, key_facts=["A", "B"],
                       answerable=True, question_type="multi_hop", source="synthetic", split="test")
    trace = bare()
    assert fill(trace, item, "$.traces[0]") == []
    assert (trace.query, trace.relevance, trace.gold_doc_ids) == ("Who?", {"d1": 2, "d2": 0}, None)
    assert trace.reference_answer == "- A\n- B"
    assert (trace.answerable, trace.question_type, trace.source, trace.split) == (True, "multi_hop", "synthetic",
                                                                                   "test")


def test_agreement_is_by_relevance_and_collapsed_whitespace() -> None:
    item = DatasetItem(item_id="i1", query="Who  is it?", gold_doc_ids=["d1"])
    agreeing = bare(query=" Who is\tit? ", relevance={"d1": 1, "d9": 0})   # grade 0 is no relevant document
    assert fill(agreeing, item, "$.traces[2]") == []
    disagreeing = bare(relevance={"d1": 2}, source="production", answerable=False)
    errors = {e["path"]: e["message"] for e in fill(disagreeing, item, "$.traces[2]")}
    assert set(errors) == {"$.traces[2].relevance", "$.traces[2].source", "$.traces[2].answerable"}
    assert "['d1']" in errors["$.traces[2].relevance"]


def test_what_the_item_does_not_say_the_trace_keeps() -> None:
    item = DatasetItem(item_id="i1", query="Who?")   # no labels, no reference, no question type
    trace = bare(gold_doc_ids=["x"], reference_answer="Mine.", question_type="procedural")
    assert fill(trace, item, "$") == []
    assert (trace.gold_doc_ids, trace.reference_answer, trace.question_type) == (["x"], "Mine.", "procedural")
    assert trace.source == "human" and trace.split == "dev"   # the item's defaults are values: they are copied


def binding(version: int, content_hash: str) -> DatasetBinding:
    return DatasetBinding(name="faq", version=version, content_hash=content_hash, status="published", items=2,
                          version_items=2, splits={"dev": 2}, sources={"human": 2})


def results(item_ids: list[str]):
    options = BatchOptions(k=[1])
    return [asyncio.run(evaluate_trace(Trace(query="q", trace_id=f"t{n}-{i}", item_id=i, split="test" if n else "dev",
                                             source="human" if n else "synthetic", gold_doc_ids=["d"],
                                             retrieved_docs=[RetrievedDoc(id="d" if n else "x")]), n, options))
            for n, i in enumerate(item_ids)]


def test_mismatch_names_both_versions_and_the_items_matched() -> None:
    pairing = pair_results(results(["a", "b"]), results(["a", "c"]))   # paired by item_id, not trace_id
    assert len(pairing.pairs) == 1
    said = dataset_mismatch(binding(1, "h1"), binding(2, "h2"), pairing)
    assert "faq version 1 (sha256 h1)" in said and "faq version 2 (sha256 h2)" in said   # type: ignore[operator]
    assert "1 items matched, 1 only in the baseline, 1 only in the candidate" in said   # type: ignore[operator]
    same_items = pair_results(results(["a", "b"]), results(["a", "b"]))
    assert dataset_mismatch(binding(1, "h1"), binding(3, "h1"), same_items) is None   # same content, renumbered
    assert "not on the same items" in dataset_mismatch(binding(1, "h1"), binding(1, "h1"), pairing)  # type: ignore
    assert "no dataset" in dataset_mismatch(None, binding(1, "h1"), same_items)   # type: ignore[operator]
    assert dataset_mismatch(None, None, pairing) is None


def test_bound_report_gives_the_human_subset_and_test_split_apart() -> None:
    # t0: synthetic, dev, a miss (recall@1 0); t1, t2: human, test, hits (recall@1 1).
    found = results(["a", "b", "c"])
    report = build_report("job", BatchOptions(k=[1]), found, binding(1, "h1"))
    assert report.subsets["human"].n == 2 and report.subsets["human"].retrieval["recall@1"].mean == 1.0
    assert report.subsets["test"].n == 2 and report.by_split["dev"].retrieval["recall@1"].mean == 0.0
    assert report.retrieval["recall@1"].mean == 2 / 3
    assert build_report("job", BatchOptions(k=[1]), found).subsets == {}   # unbound: no subsets


def test_a_file_posted_as_several_jobs_adds_up_their_bindings() -> None:
    from ragpulse.model.results import JobView, Progress
    from ragpulse.ops.evaluate import merged_binding

    def view(bound: DatasetBinding | None) -> JobView:
        return JobView(job_id="j", status="finished", progress=Progress(total=2, done=2, failed=0, skipped=0),
                       created_at="", started_at=None, finished_at=None, warnings=[], error=None, dataset=bound)

    merged = merged_binding([view(binding(1, "h1")), view(binding(1, "h1"))])
    assert merged is not None and merged.items == 4 and merged.splits == {"dev": 4}
    assert merged_binding([view(binding(1, "h1")), view(None)]) is None


def test_only_a_dataset_item_sets_the_retrieval_filters_flag() -> None:
    from ragpulse.intake.decode import decode_batch
    from ragpulse.exceptions import InvalidBody

    body = b'{"traces": [{"query": "q"}, {"query": "q", "retrieval_answerable": false}]}'
    try:
        decode_batch(body)
    except InvalidBody as exc:
        assert [e["path"] for e in exc.errors] == ["$.traces[1]"] and "item_id" in exc.errors[0]["message"]
    else:
        raise AssertionError("an unbound trace set retrieval_answerable")
    item = DatasetItem(item_id="i1", query="Who?", gold_doc_ids=["d1"], retrieval_answerable=False)
    trace = bare()
    assert fill(trace, item, "$.traces[0]") == [] and trace.retrieval_answerable is False
