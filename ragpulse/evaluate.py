"""Evaluate one trace: the per-trace step every worker runs."""

from __future__ import annotations

from ragpulse.jobs import TraceResult
from ragpulse.metrics.retrieval import RELEVANT, retrieval_metrics
from ragpulse.schema import BatchOptions, Trace


def evaluate_trace(trace: Trace, index: int, options: BatchOptions) -> TraceResult:
    """Retrieval metrics for every k, plus the relevant documents missed at the largest k."""
    base = {"trace_id": trace.trace_id or str(index), "index": index, "app": trace.app,
            "question_type": trace.question_type, "source": trace.source}
    if not trace.has_labels:
        return TraceResult(**base, status="ok", labels="unlabelled", retrieval=None)
    qrels = trace.qrels()
    ranked = [doc.id for doc in trace.retrieved_docs]
    scores = retrieval_metrics(ranked, qrels, options.k, options.gain)
    if scores is None:
        return TraceResult(**base, status="ok", labels="no_relevant", retrieval=None)
    top = set(ranked[:max(options.k)])
    missed = sorted(doc for doc, grade in qrels.items() if grade >= RELEVANT and doc not in top)
    return TraceResult(**base, status="ok", labels="labelled", retrieval=scores, missed_doc_ids=missed)


def failed_result(trace: Trace, index: int, error: str) -> TraceResult:
    """A trace whose evaluation raised: kept, with its error, never scored."""
    return TraceResult(trace_id=trace.trace_id or str(index), index=index, app=trace.app,
                       question_type=trace.question_type, source=trace.source, status="failed",
                       labels="labelled" if trace.has_labels else "unlabelled", retrieval=None, error=error)
