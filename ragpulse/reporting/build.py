"""Build a job's report: macro-averages with intervals, breakdowns, and the worst traces."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence

from ragpulse.config import defaults
from ragpulse.model.results import TraceResult
from ragpulse.metrics.registry import (
    GENERATION, RETRIEVAL_BY_NAME, RetrievalMetric, default_target, metric_for_key, retrieval_metric,
)
from ragpulse.metrics.stats import estimate_columns
from ragpulse.model.estimate import BOOTSTRAP_METHOD, WILSON_METHOD, Estimate
from ragpulse.reporting.diagnostics import diagnostic_matrix
from ragpulse.metrics.operational import operations
from ragpulse.reporting.generation_section import generation_section, group_generation
from ragpulse.reporting.security_section import attribution_section, security_section
from ragpulse.reporting.sessions_section import sessions_section
from ragpulse.model.turns import turn_bucket
from ragpulse.reporting.judging import judging
from ragpulse.reporting.report import CiMethods, Counts, Failure, Group, Method, Report, Target, WorstTrace
from ragpulse.model.dataset import DatasetBinding
from ragpulse.model.trace import BatchOptions
from ragpulse.judges import kinds

GAIN_FORMULAS = {"linear": "gain = grade", "exponential": "gain = 2^grade - 1"}
WORST_BY: RetrievalMetric = RETRIEVAL_BY_NAME["recall"]
"""The worst traces are the labelled ones short of this metric's best value (at the largest k), worst first."""


SUBSETS: dict[str, Callable[[TraceResult], bool]] = {
    "human": lambda r: r.source == "human",
    "test": lambda r: r.split == "test",
}
"""The subsets a dataset-bound report gives apart (the seeds' headline): human-written items, the frozen test split."""


def build_report(job_id: str, options: BatchOptions, results: Sequence[TraceResult],
                 dataset: DatasetBinding | None = None,
                 prices: Mapping[str, tuple[float, float]] | None = None) -> Report:
    """The aggregate view of a job (of the dataset version it was bound to, if any); with the judge `prices`, its
    judge cost in USD and the batch saving."""
    labelled = [r for r in results if r.retrieval is not None]
    report = Report(
        job_id=job_id,
        method=_method(options),
        counts=_counts(results),
        retrieval=_aggregate(labelled),
        generation=generation_section(results, prices),
        diagnostic_matrix=diagnostic_matrix(results, diagnostic_k(options.k)),
        by_question_type=_breakdown(results, lambda r: r.question_type),
        by_source=_breakdown(results, lambda r: r.source),
        worst=_worst(labelled, max(options.k)),
        failures=[Failure(trace_id=r.trace_id, index=r.index, error=r.error)
                  for r in results if r.status != "ok"][: defaults.WORST_TRACES],
        run=options.run,
        variant=options.variant,
        environment=options.environment,
        security=security_section(results),
        attribution=attribution_section(results),
        operations=operations(results),
        dataset=dataset,
        by_split=_breakdown(results, lambda r: r.split) if any(r.split for r in results) else {},
        subsets={name: _group([r for r in results if keep(r)]) for name, keep in SUBSETS.items()} if dataset else {},
        by_turn=_breakdown([r for r in results if r.session_id is not None], lambda r: turn_bucket(r.turn)),
        sessions=sessions_section(results),
        judging=judging(results),
    )
    if options.judge is not None and not kinds.judges_traces(options.judge) and not report.generation.cost.traces:
        report.generation.not_judged = kinds.NOT_JUDGED
    report.targets = report_targets(report, options.targets or {})
    return report


def report_targets(report: Report, chosen: Mapping[str, float]) -> dict[str, Target]:
    """Every reported metric's target: the batch's own (`options.targets`) else the documented default."""
    values = {**report.retrieval, **{m.name: getattr(report.generation, m.name) for m in GENERATION}}
    targets = {}
    for key, est in values.items():
        target, source = (chosen[key], "options") if key in chosen else (default_target(key), "default")
        if target is None:
            continue
        better = metric_for_key(key).better  # type: ignore[union-attr] - every reported key is registered
        met = None if est is None else (est.mean >= target if better == "higher" else est.mean <= target)
        targets[key] = Target(target=target, better=better, source=source, met=met)
    return targets


def diagnostic_k(ks: Sequence[int]) -> int:
    """The k of the diagnostic matrix and the breakdown tables: 5 when requested (the usual generator context),
    else the largest k."""
    return 5 if 5 in ks else max(ks)


def _method(options: BatchOptions) -> Method:
    return Method(
        k=list(options.k),
        gain=options.gain,
        ndcg=f"DCG = sum gain / log2(rank + 1), {GAIN_FORMULAS[options.gain]}",
        relevant_grade_at_least=1,
        duplicates="a document retrieved again at a later rank counts once, at its first rank",
        no_relevant="traces whose labels hold no relevant document are excluded from retrieval means",
        ci95=CiMethods(means=BOOTSTRAP_METHOD, proportions=WILSON_METHOD),
    )


def _counts(results: Sequence[TraceResult]) -> Counts:
    labels = Counter(r.labels for r in results if r.status != "failed")
    ok = sum(1 for r in results if r.status == "ok")
    return Counts(total=len(results), ok=ok, failed=len(results) - ok, labelled=labels["labelled"],
                  no_relevant=labels["no_relevant"], unlabelled=labels["unlabelled"],
                  judge_input_truncated=sum(1 for r in results if r.judge_input_truncated))


def _aggregate(labelled: Sequence[TraceResult]) -> dict[str, Estimate]:
    columns: dict[str, list[float]] = defaultdict(list)
    for result in labelled:
        for name, value in (result.retrieval or {}).items():
            columns[name].append(value)
    return estimate_columns(columns, {name: retrieval_metric(name).aggregation for name in columns},
                            {name: retrieval_metric(name).scale for name in columns})


def _breakdown(results: Sequence[TraceResult], key: Callable[[TraceResult], str | None]) -> dict[str, Group]:
    groups: dict[str, list[TraceResult]] = defaultdict(list)
    for result in results:
        groups[key(result) or "unspecified"].append(result)
    return {name: _group(group) for name, group in sorted(groups.items())}


def _group(group: list[TraceResult]) -> Group:
    labelled = [r for r in group if r.retrieval is not None]
    return Group(n=len(group), n_labelled=len(labelled), retrieval=_aggregate(labelled),
                 generation=group_generation(group))


def _worst(labelled: Sequence[TraceResult], k: int) -> list[WorstTrace]:
    """Only failing traces (short of the metric's best value), worst first; empty when none fails."""
    metric = WORST_BY.key(k)
    failing = [(r, (r.retrieval or {})[metric]) for r in labelled]
    failing = [(r, value) for r, value in failing if WORST_BY.falls_short(value)]
    ranked = sorted(failing, key=lambda pair: pair[1], reverse=WORST_BY.better == "lower")
    return [{"trace_id": r.trace_id, "index": r.index, "metric": metric, "value": value, metric: value,
             "missed_doc_ids": r.missed_doc_ids}
            for r, value in ranked[: defaults.WORST_TRACES]]
