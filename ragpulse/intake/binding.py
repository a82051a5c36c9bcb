"""Bind a batch to the dataset version it names: each trace's `item_id` brings the item's labels, reference answer,
answerable flag, question type, source and split, so workers see complete traces and never read the dataset.

Rule of agreement: where the item has a value, a trace that repeats the field must give the same value (gold labels
compared as relevance grades, so `gold_doc_ids: [a]` agrees with `relevance: {a: 1}`; queries compared with
whitespace collapsed), else 422 naming the trace's field; where the item has none (no question type, no reference),
the trace's own value is kept.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ragpulse.exceptions import DatasetNotFound, InvalidBody
from ragpulse.intake.validate import MAX_ERRORS
from ragpulse.model.dataset import DatasetBinding, DatasetItem
from ragpulse.model.trace import BatchRequest, Trace
from ragpulse.store.datasets import DatasetStore

COPIED = ("answerable", "question_type", "source", "split", "retrieval_answerable")
"""Item fields a trace takes as they are (after the agreement check)."""


def bind_dataset(batch: BatchRequest, tenant: str, datasets: DatasetStore) -> DatasetBinding | None:
    """Fill the traces of a batch that names a `dataset` from its items; None for a batch that names none. 422
    naming `$.dataset` for a version the tenant does not have, `$.traces[i].item_id` for an item it does not hold,
    and `$.traces[i].<field>` for a field that disagrees with the item."""
    ref = batch.dataset
    if ref is None:
        return None
    try:
        version = datasets.get_version(tenant, ref.name, ref.version)
    except DatasetNotFound as exc:
        raise InvalidBody("the batch names a dataset version this tenant does not have",
                          [{"path": "$.dataset", "message": str(exc)}]) from None
    items = datasets.lookup_items(tenant, ref.name, ref.version,
                                  (t.item_id for t in batch.traces if t.item_id is not None))
    errors: list[dict[str, str]] = []
    bound: list[DatasetItem] = []
    for index, trace in enumerate(batch.traces):
        if trace.item_id is None:
            continue
        item = items.get(trace.item_id)
        if item is None:
            errors.append({"path": f"$.traces[{index}].item_id",
                           "message": f"no item {trace.item_id!r} in dataset {ref.name!r} version {ref.version}"})
            continue
        errors += fill(trace, item, f"$.traces[{index}]")
        bound.append(item)
    if errors:
        raise InvalidBody("traces disagree with the dataset they name", errors[:MAX_ERRORS],
                          errors_truncated=len(errors) > MAX_ERRORS)
    return DatasetBinding(name=ref.name, version=ref.version, content_hash=version.content_hash, status=version.status,
                          items=len(bound), unbound=len(batch.traces) - len(bound),
                          version_items=version.counts.items, splits=dict(Counter(i.split for i in bound)),
                          sources=dict(Counter(i.source for i in bound)),
                          retrieval_unanswerable=sum(i.retrieval_answerable is False for i in bound))


def fill(trace: Trace, item: DatasetItem, path: str) -> list[dict[str, str]]:
    """Complete `trace` from `item` in place; the disagreements found, each naming the trace's field."""
    errors = []
    if trace.query and _words(trace.query) != _words(item.query):
        errors.append(_disagree(path, "query", item.query))
    trace.query = trace.query or item.query
    errors += _fill_labels(trace, item, path)
    reference = reference_of(item)
    if reference is not None:
        if trace.reference_answer is not None and trace.reference_answer != reference:
            errors.append(_disagree(path, "reference_answer", reference))
        trace.reference_answer = reference
    for field in COPIED:
        value, given = getattr(item, field), getattr(trace, field)
        if value is None:
            continue
        if given is not None and given != value:
            errors.append(_disagree(path, field, value))
        setattr(trace, field, value)
    return errors


def _fill_labels(trace: Trace, item: DatasetItem, path: str) -> list[dict[str, str]]:
    if item.gold_doc_ids is None and item.relevance is None:
        return []
    if trace.has_labels:
        if _relevant(trace.qrels()) != _relevant(item.qrels()):
            field = "gold_doc_ids" if trace.gold_doc_ids is not None else "relevance"
            return [_disagree(path, field, item.relevance or item.gold_doc_ids)]
        return []
    trace.gold_doc_ids = list(item.gold_doc_ids) if item.gold_doc_ids is not None else None
    trace.relevance = dict(item.relevance) if item.relevance is not None else None
    return []


def reference_of(item: DatasetItem) -> str | None:
    """The item's reference answer; an item with key facts only gives them as a bulleted list (what the judge reads
    as the reference), None when it has neither."""
    if item.reference_answer is not None:
        return item.reference_answer
    if item.key_facts:
        return "\n".join(f"- {fact}" for fact in item.key_facts)
    return None


def _relevant(grades: dict[str, int]) -> dict[str, int]:
    return {doc: grade for doc, grade in grades.items() if grade > 0}


def _words(text: str) -> list[str]:
    return text.split()


def _disagree(path: str, field: str, value: Any) -> dict[str, str]:
    shown = repr(value) if len(repr(value)) <= 200 else repr(value)[:200] + "..."
    return {"path": f"{path}.{field}", "message": f"disagrees with the dataset item, which says {shown}"}
