"""The generation part of a report: registry metrics with intervals, abstention, citations and judge cost."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from ragpulse.config.prices import call_cost
from ragpulse.model.verdicts import JudgeCall
from ragpulse.model.results import TraceResult, judged_by_rule
from ragpulse.judges.kinds import is_heuristic
from ragpulse.model.scores import GenerationScores
from ragpulse.metrics.registry import GENERATION, GenerationMetric
from ragpulse.metrics.stats import estimate
from ragpulse.model.estimate import Estimate
from ragpulse.reporting.report import (
    FAILURE_REASONS, Abstention, Citations, GenerationSection, GroupGeneration, JudgeCost, JudgeFailure,
    RepeatAgreement, UnanswerableCounts,
)


def generation_section(results: Sequence[TraceResult],  # type: ignore[valid-type]
                       prices: Mapping[str, tuple[float, float]] | None = None) -> GenerationSection:
    """Aggregates over the traces a judge scored; every metric comes with n and a 95% interval. With `prices`, the
    judge cost in USD as billed and as interactive delivery would have billed it. A trace an always-judge rule picked
    from outside a sampling policy's uniform sample is counted in `n_judged_by_rule` and in the cost only: picked
    for looking bad, it would bias every rate."""
    judged = rated(results)
    scores = [r.generation for r in judged]
    return GenerationSection(
        judges=dict(Counter(r.judge for r in judged)),
        heuristic=any(is_heuristic(r.judge) for r in judged),
        n_judged=len(judged),
        n_abstained=sum(g.abstained for g in scores),
        **{m.name: aggregate(m, judged) for m in GENERATION},
        unanswerable=_unanswerable([g for g in scores if g.unanswerable]),
        abstention=_abstention(judged),
        citations=_citations(judged),
        repeat_agreement=_agreement(judged),
        cost=judge_cost(results, prices),
        n_judged_by_rule=sum(r.generation is not None for r in results) - len(judged),
        judge_failures=judge_failures(results),
    )


def judge_failures(results: Sequence[TraceResult]) -> list[JudgeFailure]:
    """Each judge that ended at least one trace judge_error, with its model, counts and most frequent errors."""
    handed: dict[str, list[TraceResult]] = {}
    for r in results:
        if r.judge is not None:
            handed.setdefault(r.judge, []).append(r)
    return [_failure(name, traces) for name, traces in handed.items()
            if any(r.status == "judge_error" for r in traces)]


def _failure(judge: str, traces: Sequence[TraceResult]) -> JudgeFailure:
    failed = [r for r in traces if r.status == "judge_error"]
    calls = [c for r in traces for c in r.failed_calls] + [c for r in traces for j in r.judgments for c in j.calls]
    reasons = Counter(r.error or "no reason recorded" for r in failed)
    return JudgeFailure(judge=judge, model=calls[0].model if calls else None, traces=len(traces), failed=len(failed),
                        repair_calls=sum(_failed_repairs(r) for r in failed),
                        reasons=dict(reasons.most_common(FAILURE_REASONS)))


def _failed_repairs(result: TraceResult) -> int:
    """Repair turns of a trace that ended judge_error. Its kept calls (evaluation.trace) are those of the one
    structured call that failed, a first call and at most one repair; only when the judge answered and a metric
    then refused the output are they its judgments' calls, one judgment with the default single repeat."""
    return max(0, len(result.failed_calls) - 1)


def rated(results: Sequence[TraceResult]) -> list[TraceResult]:
    """The judged traces the quality figures count: all of them but those judged by an always-judge rule."""
    return [r for r in results if r.generation is not None and judged_by_rule(r.sample_reason) is None]


def group_generation(results: Sequence[TraceResult]) -> GroupGeneration:  # type: ignore[valid-type]
    """The breakdown metrics for one question type or source."""
    judged = rated(results)
    return GroupGeneration(n_judged=len(judged), **{m.name: aggregate(m, judged) for m in GENERATION if m.breakdown})


def aggregate(metric: GenerationMetric, results: Sequence[TraceResult]) -> Estimate | None:
    """The metric over the traces in its population; None when none is."""
    values = [v for v in (metric.per_trace(r) for r in results) if v is not None]
    return estimate(values, metric.aggregation, metric.scale) if values else None


def judge_cost(results: Sequence[TraceResult], prices: Mapping[str, tuple[float, float]] | None = None) -> JudgeCost:
    """Judge calls and tokens, in total and per judged trace (the target is exactly one call per trace); with
    `prices`, their USD cost as billed (each call at its delivery's price) and at the interactive price."""
    attempted = [r for r in results if r.judge is not None]
    calls = [c for r in attempted for j in r.judgments for c in j.calls] + [c for r in attempted for c in r.failed_calls]
    n = len(attempted)
    input_tokens, output_tokens = sum(c.input_tokens for c in calls), sum(c.output_tokens for c in calls)
    return JudgeCost(
        traces=n,
        calls=len(calls),
        repair_calls=sum(max(0, len(j.calls) - 1) for r in attempted for j in r.judgments)
        + sum(_failed_repairs(r) for r in attempted if r.status == "judge_error"),
        judge_errors=sum(r.status == "judge_error" for r in attempted),
        calls_per_trace=len(calls) / n if n else None,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        input_tokens_per_trace=input_tokens / n if n else None,
        output_tokens_per_trace=output_tokens / n if n else None,
        cache_read_input_tokens=sum(c.cache_read_input_tokens for c in calls),
        cache_creation_input_tokens=sum(c.cache_creation_input_tokens for c in calls),
        batch_calls=sum(c.delivery == "batch" for c in calls),
        **(_usd(calls, prices) if prices is not None else {}),
    )


def _usd(calls: Sequence[JudgeCall], prices: Mapping[str, tuple[float, float]]) -> dict[str, float]:
    def cost(call: JudgeCall, delivery: str) -> float:
        return call_cost(prices, call.model, call.input_tokens, call.output_tokens, call.cache_read_input_tokens,
                         call.cache_creation_input_tokens, delivery)
    billed = sum(cost(c, c.delivery) for c in calls)
    interactive = sum(cost(c, "interactive") for c in calls)
    return {"cost_usd": round(billed, 6), "interactive_cost_usd": round(interactive, 6),
            "saving_usd": round(interactive - billed, 6)}


def _unanswerable(unanswerable: Sequence[GenerationScores]) -> UnanswerableCounts:
    return UnanswerableCounts(
        n=len(unanswerable),
        labelled=sum(g.unanswerable_source == "labelled" for g in unanswerable),
        judged=sum(g.unanswerable_source != "labelled" for g in unanswerable),
        abstained=sum(g.abstained for g in unanswerable),
        hallucinated=sum(bool(g.unanswerable_hallucination) for g in unanswerable),
        answered_supported=sum(not g.abstained and not g.unanswerable_hallucination for g in unanswerable),
    )


def _abstention(judged: Sequence[TraceResult]) -> Abstention:
    """Precision and recall of abstaining, against the `answerable` flag (should abstain = answerable false)."""
    flagged = [(r.generation.abstained, r.answerable is False) for r in judged if r.answerable is not None]
    abstained = [float(should) for did, should in flagged if did]
    should = [float(did) for did, must in flagged if must]
    return Abstention(n=len(flagged), precision=_share(abstained), recall=_share(should))


def _citations(judged: Sequence[TraceResult]) -> Citations:
    citing = [r.generation for r in judged if r.generation.cited]
    cited = sum(g.cited for g in citing)
    wrong = sum(len(g.cited_not_retrieved) + len(g.cited_without_support) for g in citing)
    return Citations(
        traces_with_citations=len(citing),
        cited=cited,
        cited_not_retrieved=sum(len(g.cited_not_retrieved) for g in citing),
        traces_citing_unretrieved=sum(bool(g.cited_not_retrieved) for g in citing),
        cited_without_support=sum(len(g.cited_without_support) for g in citing),
        citation_accuracy=(cited - wrong) / cited if cited else None,
        citation_accuracy_by_trace=estimate([(g.cited - len(g.cited_not_retrieved) - len(g.cited_without_support))
                                             / g.cited for g in citing], "mean", (0.0, 1.0)) if citing else None,
    )


def _agreement(judged: Sequence[TraceResult]) -> RepeatAgreement:
    repeated = [r for r in judged if len(r.judgments) > 1]
    return RepeatAgreement(n=len(repeated), agreement_rate=_share([float(not r.needs_review) for r in repeated]),
                           flagged_for_review=[r.trace_id for r in repeated if r.needs_review][:100])


def _share(values: list[float]) -> Estimate | None:
    return estimate(values, "proportion") if values else None
