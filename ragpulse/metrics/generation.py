"""Per-trace generation metrics, computed from a judge's verdicts. Aggregation lives in ragpulse.reporting."""

from __future__ import annotations

from ragpulse.exceptions import JudgeOutputInvalid
from ragpulse.model.scores import GenerationScores
from ragpulse.model.verdicts import JudgeOutput, UnanswerableSource
from ragpulse.model.trace import Trace


def faithfulness(output: JudgeOutput) -> float | None:
    """supported claims / claims; None (never NaN, never 1.0) when the answer makes no claim."""
    if not output.claims:
        return None
    return sum(c.verdict == "supported" for c in output.claims) / len(output.claims)


def context_relevance(output: JudgeOutput, trace: Trace) -> float | None:
    """Mean judged relevance over ALL retrieved positions (1-3 each), not just the first, nor just those scored.

    Entries carry the retrieved rank; records without ranks are matched by document id. None when nothing was
    retrieved. Raises JudgeOutputInvalid when a retrieved position has no score: averaging the scored subset would
    turn an omission into a better number.
    """
    if not trace.retrieved_docs:
        return None
    ranked = [doc.id for doc in trace.retrieved_docs]
    if any(r.rank is not None for r in output.context_relevance):
        by_rank = {r.rank: r.score for r in output.context_relevance}
        scores = [by_rank.get(rank) for rank in range(1, len(ranked) + 1)]
    else:
        by_id = {r.doc_id: r.score for r in output.context_relevance}
        scores = [by_id.get(doc_id) for doc_id in ranked]
    missing = [rank for rank, score in enumerate(scores, start=1) if score is None]
    if missing:
        raise JudgeOutputInvalid(f"no context relevance for retrieved rank(s) {missing}", [])
    return sum(s for s in scores if s is not None) / len(scores)


USEFUL_RELEVANCE = 2
"""Judged relevance (1-3) from which a retrieved document counts as useful for context precision."""


def context_precision(output: JudgeOutput) -> float | None:
    """Whether the useful documents sit at the top: mean of precision@i over the ranks i holding a useful document
    (judged relevance >= 2), the same rank-aware form as average precision; 0 when none is useful, None when nothing
    was scored. Reference-free: it needs the judge's per-document relevance, not gold labels."""
    if not output.context_relevance:
        return None
    ordered = sorted(output.context_relevance, key=lambda r: r.rank if r.rank is not None else 0)
    useful, total = 0, 0.0
    for rank, relevance in enumerate(ordered, start=1):
        if relevance.score >= USEFUL_RELEVANCE:
            useful += 1
            total += useful / rank
    return total / useful if useful else 0.0


def correctness(output: JudgeOutput) -> float | None:
    """Share of the reference answer's key facts that the answer covers; None without a reference."""
    if not output.key_facts:
        return None
    return sum(f.covered for f in output.key_facts) / len(output.key_facts)


def unanswerable(output: JudgeOutput, trace: Trace) -> tuple[bool, UnanswerableSource]:
    """Whether the question has no answer in the context, and who said so: a label always wins over the judge."""
    if trace.answerable is not None:
        return not trace.answerable, "labelled"
    return not output.answerable_from_context, "judged"


def abstained(output: JudgeOutput) -> bool:
    """The answer declines and asserts nothing else: a refusal followed by a guess is a guess, not an abstention."""
    return output.abstained and not output.claims


def hallucinated(output: JudgeOutput) -> bool:
    """At least one claim is unsupported or contradicted; an answer whose claims are all supported never is."""
    return any(c.verdict != "supported" for c in output.claims)


def citation_problems(output: JudgeOutput, trace: Trace) -> tuple[list[str], list[str]]:
    """(cited ids or marker labels naming nothing retrieved; cited ids in which the judge found no support).

    Two kinds of citation are checked. The trace's `citations` (document level): an id never retrieved is a
    programmatic failure, a retrieved one must support some claim. Inline markers attached to claims
    (ragpulse.judges.citations): each document a claim's marker names must be among that claim's supporting
    evidence, so `[2]` after a sentence that only document 1 supports counts as without support; a marker label
    naming no retrieved document counts as not retrieved.
    """
    cited = list(dict.fromkeys(trace.citations or ()))
    retrieved = {doc.id for doc in trace.retrieved_docs}
    supporting = {e.doc_id for c in output.claims if c.verdict == "supported" for e in c.evidence}
    not_retrieved = [d for d in cited if d not in retrieved]
    without_support = [d for d in cited if d in retrieved and d not in supporting]
    for claim in output.claims:
        backing = {e.doc_id for e in claim.evidence} if claim.verdict == "supported" else set()
        not_retrieved += claim.cited_unknown
        without_support += [d for d in claim.cited if d not in backing]
    return not_retrieved, without_support


def citation_count(output: JudgeOutput, trace: Trace) -> int:
    """Citations checked: distinct ids of the trace's `citations`, plus each claim's marker citations."""
    return len(set(trace.citations or ())) + sum(len(c.cited) + len(c.cited_unknown) for c in output.claims)


def generation_scores(output: JudgeOutput, trace: Trace) -> GenerationScores:
    """Every generation metric of one trace from its (quote-checked) verdicts.

    unanswerable_hallucination is None on answerable traces; on unanswerable ones it is true when the answer did
    not abstain and asserted something unsupported (all-supported claims are never a hallucination of any kind).
    """
    verdicts = [c.verdict for c in output.claims]
    is_hallucinated, did_abstain = hallucinated(output), abstained(output)
    is_unanswerable, source = unanswerable(output, trace)
    not_retrieved, without_support = citation_problems(output, trace)
    return GenerationScores(
        faithfulness=faithfulness(output), hallucinated=is_hallucinated, abstained=did_abstain,
        answer_relevance=output.answer_relevance, context_relevance=context_relevance(output, trace),
        correctness=correctness(output), answerable_from_context=output.answerable_from_context,
        unanswerable=is_unanswerable, unanswerable_source=source,
        unanswerable_hallucination=(is_hallucinated and not did_abstain) if is_unanswerable else None,
        claims=len(verdicts), supported=verdicts.count("supported"), unsupported=verdicts.count("unsupported"),
        contradicted=verdicts.count("contradicted"), cited=citation_count(output, trace),
        cited_not_retrieved=not_retrieved,
        cited_without_support=without_support,
        session_supported=sum(1 for c in output.claims if c.verdict == "supported" and c.support == "session"),
        rewrite_faithful=output.rewrite_faithful if trace.rewritten_query is not None else None,
    )
