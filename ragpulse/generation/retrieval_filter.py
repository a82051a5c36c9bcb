"""The retrieval filter: set aside generated items whose source chunks the user's retriever does not find in its
top k (the seed's rule: else they measure retrieval failure, not generation).

An item is found when every one of its gold chunks is among the top k results of its run (a multi-hop item needs
both hops); a run that names no chunk ids at all (a retriever of whole documents) is matched by document ids. Items
without gold (unanswerable ones) are not checked; items no run covers keep their flag as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from ragpulse.model.dataset import DatasetItem
from ragpulse.model.generation import RetrievalFilterOutcome, RetrievedRef, RetrieverRun
from ragpulse.model.trace import Trace


def found_in_top_k(item: DatasetItem, run: RetrieverRun, k: int) -> bool:
    """True when every gold chunk of `item` is in the top `k` of `run`; for a run that names no chunk ids at all (a
    retriever of whole documents), when every gold document is."""
    top = run.retrieved[:k]
    if any(ref.chunk_id is not None for ref in run.retrieved):
        return set(item.gold_chunk_ids or ()) <= {ref.chunk_id for ref in top}
    return set(item.gold_doc_ids or ()) <= {ref.doc_id for ref in top}


def retrieval_filter(items: Sequence[DatasetItem], runs: Sequence[RetrieverRun],
                     k: int) -> tuple[list[DatasetItem], RetrievalFilterOutcome]:
    """The items with `retrieval_answerable` set from the runs, and what changed."""
    by_item = {run.item_id: run for run in runs}
    known = {item.item_id for item in items}
    flagged, set_aside, not_run, found = [], [], [], 0
    for item in items:
        if not item.answerable or not item.gold_chunk_ids:
            flagged.append(item)
            continue
        run = by_item.get(item.item_id)
        if run is None:
            not_run.append(item.item_id)
            flagged.append(item)
            continue
        hit = found_in_top_k(item, run, k)
        found += hit
        if not hit:
            set_aside.append(item.item_id)
        flagged.append(msgspec.structs.replace(item, retrieval_answerable=hit))
    outcome = RetrievalFilterOutcome(k=k, checked=found + len(set_aside), found=found, set_aside=set_aside,
                                     not_run=not_run, unknown_items=[i for i in by_item if i not in known])
    return flagged, outcome


def runs_from_traces(traces: Sequence[Trace]) -> list[RetrieverRun]:
    """The retriever runs a bound batch's traces hold: per item id (its first trace), the retrieved documents and
    chunks in rank order. Traces that name no item are not runs over the dataset."""
    runs: dict[str, RetrieverRun] = {}
    for trace in traces:
        if trace.item_id is not None and trace.item_id not in runs:
            runs[trace.item_id] = RetrieverRun(item_id=trace.item_id, retrieved=[
                RetrievedRef(doc_id=doc.id, chunk_id=doc.chunk_id) for doc in trace.retrieved_docs])
    return list(runs.values())
