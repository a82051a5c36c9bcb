"""Per-trace generation metrics, computed from a judge's verdicts. Aggregation lives in ragpulse.report."""

from __future__ import annotations

import msgspec

from ragpulse.judges.verdicts import JudgeOutput
from ragpulse.schema import Trace


class GenerationScores(msgspec.Struct, kw_only=True):
    """Generation metrics of one trace. A pure refusal has no claims: faithfulness null, abstained true."""

    faithfulness: float | None
    hallucinated: bool
    abstained: bool
    answer_relevance: int
    context_relevance: float | None
    correctness: float | None
    answerable_from_context: bool
    unanswerable: bool
    unanswerable_hallucination: bool | None
    claims: int
    supported: int
    unsupported: int
    contradicted: int
    cited: int
    cited_not_retrieved: list[str]
    cited_without_support: list[str]


def faithfulness(output: JudgeOutput) -> float | None:
    """supported claims / claims; None (never NaN, never 1.0) when the answer makes no claim."""
    if not output.claims:
        return None
    return sum(c.verdict == "supported" for c in output.claims) / len(output.claims)


def context_relevance(output: JudgeOutput, trace: Trace) -> float | None:
    """Mean judged relevance over ALL retrieved documents (each distinct id once), not just the first."""
    scores = {r.doc_id: r.score for r in output.context_relevance}
    ids = list(dict.fromkeys(doc.id for doc in trace.retrieved_docs))
    judged = [scores[i] for i in ids if i in scores]
    return sum(judged) / len(judged) if judged else None


def correctness(output: JudgeOutput) -> float | None:
    """Share of the reference answer's key facts that the answer covers; None without a reference."""
    if not output.key_facts:
        return None
    return sum(f.covered for f in output.key_facts) / len(output.key_facts)


def is_unanswerable(output: JudgeOutput, trace: Trace) -> bool:
    """Labelled unanswerable, or judged not answerable from the retrieved context."""
    return trace.answerable is False or not output.answerable_from_context


def citation_problems(output: JudgeOutput, trace: Trace) -> tuple[list[str], list[str]]:
    """(cited ids never retrieved — a programmatic check; cited ids in which the judge found no support)."""
    cited = list(dict.fromkeys(trace.citations or ()))
    retrieved = {doc.id for doc in trace.retrieved_docs}
    supporting = {c.doc_id for c in output.claims if c.verdict == "supported"}
    not_retrieved = [d for d in cited if d not in retrieved]
    without_support = [d for d in cited if d in retrieved and d not in supporting]
    return not_retrieved, without_support


def generation_scores(output: JudgeOutput, trace: Trace) -> GenerationScores:
    """Every generation metric of one trace from its (quote-checked) verdicts."""
    verdicts = [c.verdict for c in output.claims]
    hallucinated = any(v != "supported" for v in verdicts)
    abstained = output.abstained or not verdicts
    unanswerable = is_unanswerable(output, trace)
    not_retrieved, without_support = citation_problems(output, trace)
    return GenerationScores(
        faithfulness=faithfulness(output), hallucinated=hallucinated, abstained=abstained,
        answer_relevance=output.answer_relevance, context_relevance=context_relevance(output, trace),
        correctness=correctness(output), answerable_from_context=output.answerable_from_context,
        unanswerable=unanswerable, unanswerable_hallucination=(not abstained) if unanswerable else None,
        claims=len(verdicts), supported=verdicts.count("supported"), unsupported=verdicts.count("unsupported"),
        contradicted=verdicts.count("contradicted"), cited=len(set(trace.citations or ())),
        cited_not_retrieved=not_retrieved,
        cited_without_support=without_support,
    )
