"""The generation part of a report: judged metrics with intervals, abstention, citations and judge cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import msgspec

from ragpulse.jobs import TraceResult
from ragpulse.metrics.generation import GenerationScores
from ragpulse.metrics.stats import estimate


def generation_section(results: Sequence[TraceResult]) -> dict[str, Any]:
    """Aggregates over the traces a judge scored; every mean comes with n and a 95% interval."""
    judged = [r for r in results if r.generation is not None]
    scores = [r.generation for r in judged]
    with_claims = [g for g in scores if g.claims]
    unanswerable = [g for g in scores if g.unanswerable]
    return {
        "judges": dict(Counter(r.judge for r in judged)),
        "heuristic": any(r.judge == "local" for r in judged),
        "n_judged": len(judged),
        "n_abstained": sum(g.abstained for g in scores),
        "faithfulness": _est([g.faithfulness for g in with_claims]),
        "hallucination_rate": _est([float(g.hallucinated) for g in with_claims]),
        "answer_relevance": _est([float(g.answer_relevance) for g in scores]),
        "context_relevance": _est([g.context_relevance for g in scores if g.context_relevance is not None]),
        "correctness": _est([g.correctness for g in scores if g.correctness is not None]),
        "unanswerable_hallucination_rate": _est([float(bool(g.unanswerable_hallucination)) for g in unanswerable]),
        "unanswerable": _unanswerable(unanswerable),
        "abstention": _abstention(judged),
        "citations": _citations(judged),
        "repeat_agreement": _agreement(judged),
        "cost": judge_cost(results),
    }


def judge_cost(results: Sequence[TraceResult]) -> dict[str, Any]:
    """Judge calls and tokens, in total and per judged trace (the target is exactly one call per trace)."""
    attempted = [r for r in results if r.judge is not None]
    calls = [c for r in attempted for j in r.judgments for c in j.calls] + [c for r in attempted for c in r.failed_calls]
    repairs = sum(max(0, len(j.calls) - 1) for r in attempted for j in r.judgments)
    n = len(attempted)
    return {
        "traces": n,
        "calls": len(calls),
        "repair_calls": repairs,
        "judge_errors": sum(r.status == "judge_error" for r in attempted),
        "calls_per_trace": len(calls) / n if n else None,
        "input_tokens": sum(c.input_tokens for c in calls),
        "output_tokens": sum(c.output_tokens for c in calls),
        "input_tokens_per_trace": sum(c.input_tokens for c in calls) / n if n else None,
        "output_tokens_per_trace": sum(c.output_tokens for c in calls) / n if n else None,
    }


def _unanswerable(unanswerable: Sequence[GenerationScores]) -> dict[str, int]:
    """Where the unanswerable rate's n and numerator come from: labels or the judge, and what the answers did."""
    return {
        "n": len(unanswerable),
        "labelled": sum(g.unanswerable_source == "labelled" for g in unanswerable),
        "judged": sum(g.unanswerable_source != "labelled" for g in unanswerable),
        "abstained": sum(g.abstained for g in unanswerable),
        "hallucinated": sum(bool(g.unanswerable_hallucination) for g in unanswerable),
        "answered_supported": sum(not g.abstained and not g.unanswerable_hallucination for g in unanswerable),
    }


def _abstention(judged: Sequence[TraceResult]) -> dict[str, Any]:
    """Precision and recall of abstaining, against the `answerable` flag (should abstain = answerable false)."""
    flagged = [(r.generation.abstained, r.answerable is False) for r in judged if r.answerable is not None]
    abstained = [should for did, should in flagged if did]
    should = [did for did, must in flagged if must]
    return {"n": len(flagged), "precision": _est([float(x) for x in abstained]),
            "recall": _est([float(x) for x in should])}


def _citations(judged: Sequence[TraceResult]) -> dict[str, Any]:
    citing = [r.generation for r in judged if r.generation.cited]
    cited = sum(g.cited for g in citing)
    return {
        "traces_with_citations": len(citing),
        "cited": cited,
        "cited_not_retrieved": sum(len(g.cited_not_retrieved) for g in citing),
        "traces_citing_unretrieved": sum(bool(g.cited_not_retrieved) for g in citing),
        "cited_without_support": sum(len(g.cited_without_support) for g in citing),
        "citation_accuracy": (cited - sum(len(g.cited_not_retrieved) + len(g.cited_without_support) for g in citing))
                             / cited if cited else None,
    }


def _agreement(judged: Sequence[TraceResult]) -> dict[str, Any]:
    repeated = [r for r in judged if len(r.judgments) > 1]
    return {"n": len(repeated), "agreement_rate": _est([float(not r.needs_review) for r in repeated]),
            "flagged_for_review": [r.trace_id for r in repeated if r.needs_review][:100]}


def _est(values: list[float | None]) -> dict[str, Any] | None:
    present = [v for v in values if v is not None]
    return msgspec.to_builtins(estimate(present)) if present else None
