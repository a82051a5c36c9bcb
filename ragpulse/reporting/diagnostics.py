"""The diagnostic matrix: retrieval (good or poor) crossed with generation (faithful or hallucinating)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from ragpulse.model.results import TraceResult, judged_by_rule
from ragpulse.reporting.report import Cell, DiagnosticMatrix

RECALL_GOOD = 0.5
"""recall@k at or above which retrieval counts as good, where gold labels exist."""
CONTEXT_RELEVANCE_GOOD = 2.0
"""Mean judged context relevance (1-3) at or above which retrieval counts as good, without gold labels."""

NEXT_STEPS = {
    "retrieval": "Fix retrieval first (indexing, chunking, embeddings, k, reranking): answers cannot be grounded "
                 "in evidence that was never retrieved, and lucky or parametric answers will not last.",
    "generation": "Retrieval surfaces the evidence but answers stray from it: tighten the prompt (answer only from "
                  "the context, say 'I don't know'), or change the generator model.",
    "none": "No problem cell dominates: retrieval is good and answers are faithful on the judged traces.",
    "insufficient_data": "No trace was judged: judge the answers (judge: anthropic or openai) to cross retrieval "
                         "with generation.",
}
NOT_CROSSABLE = ("No judged trace could be crossed (see `excluded`: answers that made no claim, or traces with "
                 "neither gold labels nor judged context relevance): nothing to conclude yet.")
"""The next step when traces were judged but none made claims with a retrieval signal."""


def retrieval_good(result: TraceResult, k: int) -> bool | None:
    """recall@k >= 0.5 with gold labels; else mean context relevance >= 2; None when neither is known."""
    if result.retrieval is not None:
        return result.retrieval[f"recall@{k}"] >= RECALL_GOOD
    if result.generation is not None and result.generation.context_relevance is not None:
        return result.generation.context_relevance >= CONTEXT_RELEVANCE_GOOD
    return None


def diagnostic_matrix(results: Sequence[TraceResult], k: int) -> DiagnosticMatrix:
    """Counts and shares of the four cells over judged traces that made claims, and the primary issue."""
    cells: Counter[str] = Counter()
    excluded: Counter[str] = Counter()
    for r in results:
        if r.generation is None:
            continue
        if judged_by_rule(r.sample_reason) is not None:   # picked for looking bad, not sampled
            excluded["judged_by_rule"] += 1
            continue
        if r.generation.claims == 0:
            excluded["abstained"] += 1
            continue
        if r.labels == "no_relevant" or r.answerable is False:   # nothing to retrieve: a hallucination there is a
            excluded["unanswerable"] += 1                        # failure to abstain (unanswerable_hallucination_rate)
            continue
        good = retrieval_good(r, k)
        if good is None:
            excluded["no_retrieval_signal"] += 1
            continue
        cells[f"retrieval_{'good' if good else 'poor'}_{'hallucinating' if r.generation.hallucinated else 'faithful'}"] += 1
    total = sum(cells.values())
    names = ["retrieval_good_faithful", "retrieval_good_hallucinating", "retrieval_poor_faithful",
             "retrieval_poor_hallucinating"]
    primary = primary_issue(cells)
    judged = any(r.generation is not None for r in results)
    next_step = NOT_CROSSABLE if primary == "insufficient_data" and judged else NEXT_STEPS[primary]
    return DiagnosticMatrix(
        retrieval_good_means=f"recall@{k} >= {RECALL_GOOD} with gold labels, else mean context relevance >= "
                             f"{CONTEXT_RELEVANCE_GOOD}",
        cells={n: Cell(count=cells[n], share=cells[n] / total if total else None) for n in names},
        n=total,
        excluded=dict(excluded),
        primary_issue=primary,
        next_step=next_step,
    )


def primary_issue(cells: Counter[str]) -> str:
    """Retrieval when poor-retrieval cells hold at least as many traces as the generator-problem cell (both broken,
    a tie included: retrieval first, as an answer cannot be grounded in evidence never retrieved);
    `insufficient_data` when no trace reached a cell, so an empty matrix never reads as a clean bill of health."""
    if sum(cells.values()) == 0:
        return "insufficient_data"
    generator = cells["retrieval_good_hallucinating"]
    retrieval = cells["retrieval_poor_faithful"] + cells["retrieval_poor_hallucinating"]
    if generator == 0 and retrieval == 0:
        return "none"
    return "retrieval" if retrieval >= generator else "generation"
