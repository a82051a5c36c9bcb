"""Compare two jobs trace by trace: per-metric paired deltas with intervals, the traces that got worse, slices, and
the gap a no-RAG or oracle baseline bounds."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from ragpulse.config import defaults
from ragpulse.metrics.registry import GENERATION, GENERATION_BY_NAME, RETRIEVAL_BY_NAME, retrieval_metric
from ragpulse.metrics.stats import (
    bootstrap_means, bootstrap_p_values, holm, mcnemar_exact, percentile_intervals,
)
from ragpulse.metrics.attribution import STAGES
from ragpulse.model.compare import (
    Comparison, McNemar, MetricDelta, Regression, RunInfo, SliceComparison, StageDelta,
)
from ragpulse.model.results import TraceResult
from ragpulse.reporting.baselines import baseline_gaps
from ragpulse.reporting.build import diagnostic_k
from ragpulse.reporting.pairing import pair_results

Pair = tuple[TraceResult, TraceResult]
SIGNIFICANCE = 0.05
"""McNemar's p-value below which a paired proportion's change counts as significant."""
METHOD = (f"traces matched by trace_id, else by query text; delta = candidate - baseline over pairs where both have "
          f"a value; 95% interval: paired percentile bootstrap, {defaults.BOOTSTRAP_RESAMPLES} resamples, seed "
          f"{defaults.BOOTSTRAP_SEED}; proportions: McNemar's exact test, significant at p < {SIGNIFICANCE}; "
          f"p_holm: every metric's p-value adjusted by Holm's method over the comparison's metrics")


def compare(baseline: RunInfo, candidate: RunInfo, baseline_results: Sequence[TraceResult],
            candidate_results: Sequence[TraceResult],
            threshold: float = defaults.COMPARE_REGRESSION_THRESHOLD) -> Comparison:
    """The candidate job measured against the baseline over their matched traces."""
    pairing = pair_results(baseline_results, candidate_results)
    pairs = pairing.pairs
    retrieval = retrieval_deltas(pairs)
    generation = generation_deltas(pairs)
    adjust_holm({**retrieval, **generation})
    k = diagnostic_k(sorted({int(key.split("@")[1]) for key in retrieval if "@" in key}) or [5])
    regressions = find_regressions(pairs, k, threshold)
    return Comparison(
        candidate=candidate, baseline=baseline, matched=len(pairs), only_in_baseline=pairing.only_in_baseline,
        only_in_candidate=pairing.only_in_candidate, retrieval=retrieval, generation=generation,
        significant_regressions=[key for key, d in {**retrieval, **generation}.items() if d.change == "regressed"],
        regression_threshold=threshold, regressions=regressions[: defaults.COMPARE_REGRESSIONS_MAX],
        regressions_total=len(regressions),
        by_question_type=_slices(pairs, lambda r: r.question_type, k),
        by_source=_slices(pairs, lambda r: r.source, k),
        **baseline_gaps(baseline, candidate, generation), method=METHOD, attribution=stage_deltas(pairs),
    )


def stage_deltas(pairs: Sequence[Pair]) -> dict[str, StageDelta]:
    """Per attribution stage, matched traces in it in each run (stages neither run reached are left out)."""
    before = Counter(b.attribution.stage for b, _ in pairs if b.attribution is not None)
    after = Counter(c.attribution.stage for _, c in pairs if c.attribution is not None)
    return {stage: StageDelta(baseline=before[stage], candidate=after[stage], delta=after[stage] - before[stage])
            for stage in STAGES if before[stage] or after[stage]}


def retrieval_deltas(pairs: Sequence[Pair], keys: Sequence[str] | None = None) -> dict[str, MetricDelta]:
    """Every retrieval metric both jobs report, over the pairs labelled in both (one population, so one bootstrap
    resamples the pairs once for all metrics)."""
    labelled = [(b.retrieval, c.retrieval) for b, c in pairs if b.retrieval is not None and c.retrieval is not None]
    if not labelled:
        return {}
    shared = set.intersection(*(set(b) & set(c) for b, c in labelled))
    common = [key for key in labelled[0][1] if key in shared and (keys is None or key in keys)]
    if not common:
        return {}
    base = np.asarray([[b[key] for key in common] for b, _ in labelled], dtype=float)
    cand = np.asarray([[c[key] for key in common] for _, c in labelled], dtype=float)
    means = bootstrap_means(cand - base)
    intervals, p_values = percentile_intervals(means), bootstrap_p_values(means)
    metrics = [retrieval_metric(key) for key in common]
    return {key: _delta(base[:, i], cand[:, i], intervals[i], p_values[i], m.better, m.aggregation == "proportion")
            for i, (key, m) in enumerate(zip(common, metrics, strict=True))}


def generation_deltas(pairs: Sequence[Pair], names: Sequence[str] | None = None) -> dict[str, MetricDelta]:
    """Every generation metric of the registry over the pairs where both traces are in its population."""
    deltas = {}
    for metric in GENERATION:
        if names is not None and metric.name not in names:
            continue
        values = [(metric.per_trace(b), metric.per_trace(c)) for b, c in pairs]
        both = np.asarray([(x, y) for x, y in values if x is not None and y is not None], dtype=float)
        if len(both) == 0:
            continue
        means = bootstrap_means((both[:, 1] - both[:, 0])[:, None])
        deltas[metric.name] = _delta(both[:, 0], both[:, 1], percentile_intervals(means)[0],
                                     bootstrap_p_values(means)[0], metric.better, metric.aggregation == "proportion")
    return deltas


def _delta(base: np.ndarray, cand: np.ndarray, interval: tuple[float, float], p_value: float, better: str,
           proportion: bool) -> MetricDelta:
    sign = 1 if better == "higher" else -1
    base_mean, cand_mean = math.fsum(base) / len(base), math.fsum(cand) / len(cand)
    excludes_zero = interval[0] > 0 or interval[1] < 0
    test = None
    if proportion:
        gained, lost = int(np.sum(cand > base)), int(np.sum(cand < base))
        worse, improved = (lost, gained) if sign > 0 else (gained, lost)
        test = McNemar(worse=worse, better=improved, p_value=mcnemar_exact(worse, improved))
        significant, direction, p_value = test.p_value < SIGNIFICANCE, improved - worse, test.p_value
    else:
        significant, direction = excludes_zero, sign * (cand_mean - base_mean)
    change = "unchanged" if not significant or direction == 0 else ("improved" if direction > 0 else "regressed")
    return MetricDelta(n=len(base), baseline=base_mean, candidate=cand_mean, delta=cand_mean - base_mean,
                       ci95=interval, excludes_zero=excludes_zero, better=better, change=change, mcnemar=test,
                       p_value=p_value)


def adjust_holm(deltas: dict[str, MetricDelta]) -> None:
    """Set every delta's `p_holm`: its p-value adjusted over all of them (in place)."""
    for delta, adjusted in zip(deltas.values(), holm([d.p_value for d in deltas.values()]), strict=True):
        delta.p_holm = adjusted


def find_regressions(pairs: Sequence[Pair], k: int, threshold: float) -> list[Regression]:
    """Matched traces that got worse, worst first: hallucinated now but not before, or recall@k / nDCG@k down by at
    least `threshold`."""
    keys = [RETRIEVAL_BY_NAME[name].key(k) for name in ("recall", "ndcg")]
    found = []
    for base, cand in pairs:
        drops = {key: (base.retrieval or {}).get(key, math.nan) - (cand.retrieval or {}).get(key, math.nan)
                 for key in keys}
        reasons = {f"{key} -{drop:.2f}": drop for key, drop in drops.items() if drop >= threshold}
        if _hallucinated(base) is False and _hallucinated(cand) is True:
            reasons["hallucinated"] = 1.0
        if reasons:
            found.append(Regression(
                trace_id=cand.trace_id, baseline_index=base.index, candidate_index=cand.index,
                reasons=list(reasons), severity=max(reasons.values()),
                baseline=_values(base, keys), candidate=_values(cand, keys)))
    return sorted(found, key=lambda r: (-r.severity, r.candidate_index))


def _hallucinated(result: TraceResult) -> bool | None:
    """The per-trace hallucination call over judged answers with claims (None outside that population)."""
    value = GENERATION_BY_NAME["hallucination_rate"].per_trace(result)
    return None if value is None else bool(value)


def _values(result: TraceResult, keys: Sequence[str]) -> dict[str, float | bool | None]:
    values: dict[str, float | bool | None] = {key: (result.retrieval or {}).get(key) for key in keys}
    values["hallucinated"] = _hallucinated(result)
    return values


def _slices(pairs: Sequence[Pair], key: Callable[[TraceResult], str | None], k: int) -> dict[str, SliceComparison]:
    """The breakdown metrics (recall@k, mrr and the registry's breakdown generation metrics) per group of the
    candidate's traces."""
    groups: dict[str, list[Pair]] = defaultdict(list)
    for pair in pairs:
        groups[key(pair[1]) or "unspecified"].append(pair)
    retrieval_keys = [m.key(k) for m in RETRIEVAL_BY_NAME.values() if m.breakdown]
    generation_names = [m.name for m in GENERATION if m.breakdown]
    return {name: SliceComparison(matched=len(group), metrics={**retrieval_deltas(group, retrieval_keys),
                                                               **generation_deltas(group, generation_names)})
            for name, group in sorted(groups.items())}
