"""Compare two jobs trace by trace: per-metric paired deltas with intervals, the traces that got worse, slices, and
the gap a no-RAG or oracle baseline bounds."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Sequence

import msgspec
import numpy as np

from ragpulse.config import defaults
from ragpulse.metrics.registry import GENERATION, GENERATION_BY_NAME, RETRIEVAL_BY_NAME, retrieval_metric
from ragpulse.metrics.stats import (
    bootstrap_means, bootstrap_p_values, mcnemar_exact, percentile_intervals, sign_flip_p_values,
)
from ragpulse.model.scores import STAGES
from ragpulse.model.compare import (
    Comparison, Correction, McNemar, MetricDelta, Regression, RunInfo, SliceComparison, StageDelta,
)
from ragpulse.model.dataset import DatasetBinding
from ragpulse.model.results import TraceResult
from ragpulse.reporting.baselines import baseline_gaps
from ragpulse.reporting.build import diagnostic_k
from ragpulse.reporting.judging import judge_mismatch, judged_keys, judging, refusals
from ragpulse.reporting.pairing import Pairing, pair_results
from ragpulse.reporting.significance import decide, default_family

Pair = tuple[TraceResult, TraceResult]
SIGNIFICANCE = defaults.COMPARE_ALPHA
"""The adjusted p-value below which a tested metric's change counts as significant."""
METHOD = (f"traces matched by trace_id, else by query text; delta = candidate - baseline over pairs where both have "
          f"a value; 95% interval: paired percentile bootstrap, {defaults.BOOTSTRAP_RESAMPLES} resamples, seed "
          f"{defaults.BOOTSTRAP_SEED}; only the `family` is tested: proportions by McNemar's exact test, means by a "
          f"paired sign-flip permutation test (exact up to {defaults.PERMUTATION_EXACT_MAX_N} pairs, else "
          f"{defaults.PERMUTATION_DRAWS} draws); p-values adjusted over the family (`correction`), significant when "
          f"the adjusted p < {SIGNIFICANCE}; other metrics are described, not tested")


def compare(baseline: RunInfo, candidate: RunInfo, baseline_results: Sequence[TraceResult],
            candidate_results: Sequence[TraceResult],
            threshold: float = defaults.COMPARE_REGRESSION_THRESHOLD, family: Sequence[str] | None = None,
            correction: Correction = "holm") -> Comparison:
    """The candidate job measured against the baseline over their matched traces; the metrics of `family` (the
    default family when None) are tested, with p-values adjusted by `correction`, the others described. Each side's
    judging is read off its results: a judge mismatch is named (the caller decides whether to refuse), and when a
    side judged too few of its traces the family's judged metrics are described, not tested."""
    pairing = pair_results(baseline_results, candidate_results)
    pairs = pairing.pairs
    baseline = msgspec.structs.replace(baseline, judging=judging(baseline_results))
    candidate = msgspec.structs.replace(candidate, judging=judging(candidate_results))
    requested = default_family() if family is None else list(family)
    below = refusals(baseline, candidate)
    refused = judged_keys(requested) if below else []
    tested = set(requested) - set(refused)
    retrieval = retrieval_deltas(pairs, tested=tested)
    generation = generation_deltas(pairs, tested=tested)
    family_keys = decide({**retrieval, **generation}, correction)
    for key in refused:
        if key in generation:
            generation[key].note = f"not tested, judged share below the floor: {'; '.join(below)}"
    judges = judge_mismatch(baseline, candidate)
    k = diagnostic_k(sorted({int(key.split("@")[1]) for key in retrieval if "@" in key}) or [5])
    regressions = find_regressions(pairs, k, threshold)
    mismatch = dataset_mismatch(baseline.dataset, candidate.dataset, pairing)
    return Comparison(
        candidate=candidate, baseline=baseline, matched=len(pairs), only_in_baseline=pairing.only_in_baseline,
        only_in_candidate=pairing.only_in_candidate, retrieval=retrieval, generation=generation,
        significant_regressions=[key for key, d in {**retrieval, **generation}.items() if d.change == "regressed"],
        regression_threshold=threshold, regressions=regressions[: defaults.COMPARE_REGRESSIONS_MAX],
        regressions_total=len(regressions),
        by_question_type=_slices(pairs, lambda r: r.question_type, k),
        by_source=_slices(pairs, lambda r: r.source, k),
        **baseline_gaps(baseline, candidate, generation), method=METHOD, attribution=stage_deltas(pairs),
        family=family_keys, correction=correction, alpha=SIGNIFICANCE,
        warnings=[*([f"DATASET MISMATCH: {mismatch}"] if mismatch else []),
                  *([f"JUDGE MISMATCH: {judges}"] if judges else []),
                  *([f"JUDGED METRICS REFUSED: {'; '.join(below)}; "
                     f"{', '.join(refused) or 'no judged metric'} left out of the tested family"] if below else []),
                  *pairing_warnings(len(pairs), len(baseline_results), len(candidate_results))],
        dataset_mismatch=mismatch, judge_mismatch=judges, judged_refused="; ".join(below) or None,
        refused_metrics=refused,
    )


def dataset_mismatch(baseline: DatasetBinding | None, candidate: DatasetBinding | None,
                     pairing: Pairing) -> str | None:
    """Why the two runs are not on the same dataset items, naming both versions and the items matched; None when
    they are (same content hash, every item in both), or when neither ran a dataset. Versions with the same content
    hash hold the same items, so their numbers may differ."""
    if baseline is None and candidate is None:
        return None
    matched = (f"{len(pairing.pairs)} items matched, {pairing.only_in_baseline} only in the baseline, "
               f"{pairing.only_in_candidate} only in the candidate")
    if baseline is None or candidate is None or baseline.content_hash != candidate.content_hash:
        return (f"the baseline ran {_version(baseline)}, the candidate {_version(candidate)}; {matched}: the "
                "difference measures the dataset change as much as the system's")
    if pairing.only_in_baseline or pairing.only_in_candidate:
        return (f"both ran {_version(candidate)}, but not on the same items: {matched}; the figures compare the "
                "matched items only")
    return None


def _version(bound: DatasetBinding | None) -> str:
    if bound is None:
        return "no dataset"
    return f"dataset {bound.name} version {bound.version} (sha256 {bound.content_hash[:12]})"


def pairing_warnings(matched: int, baseline: int, candidate: int) -> list[str]:
    """Why a comparison says little: no trace of one job matched the other's (two unrelated datasets, most likely),
    or some traces of either matched none (they are in no delta)."""
    if not (baseline or candidate):
        return []
    if not matched:
        return [f"no trace matched: the baseline's {baseline} and the candidate's {candidate} traces share no "
                "trace_id and no query text, so there is nothing to compare; compare two runs of the same dataset"]
    if matched == baseline == candidate:
        return []
    return [f"only {matched} traces matched (of the baseline's {baseline} and the candidate's {candidate}): the "
            f"{candidate - matched} only in the candidate and the {baseline - matched} only in the baseline are in no "
            "delta, so a trace whose id changed is compared with nothing"]


def stage_deltas(pairs: Sequence[Pair]) -> dict[str, StageDelta]:
    """Per attribution stage, matched traces in it in each run (stages neither run reached are left out)."""
    before = Counter(b.attribution.stage for b, _ in pairs if b.attribution is not None)
    after = Counter(c.attribution.stage for _, c in pairs if c.attribution is not None)
    return {stage: StageDelta(baseline=before[stage], candidate=after[stage], delta=after[stage] - before[stage])
            for stage in STAGES if before[stage] or after[stage]}


def retrieval_deltas(pairs: Sequence[Pair], keys: Sequence[str] | None = None,
                     tested: Collection[str] = ()) -> dict[str, MetricDelta]:
    """Every retrieval metric both jobs report, over the pairs labelled in both (one population, so one bootstrap
    resamples the pairs once for all metrics, and one set of sign patterns serves every tested mean)."""
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
    test = [i for i, (key, m) in enumerate(zip(common, metrics, strict=True))
            if key in tested and m.aggregation == "mean"]   # proportions get McNemar's exact test
    if test:
        for i, p in zip(test, sign_flip_p_values(cand[:, test] - base[:, test]), strict=True):
            p_values[i] = p
    return {key: _delta(base[:, i], cand[:, i], intervals[i], p_values[i], m.better, m.aggregation == "proportion",
                        key in tested)
            for i, (key, m) in enumerate(zip(common, metrics, strict=True))}


def generation_deltas(pairs: Sequence[Pair], names: Sequence[str] | None = None,
                      tested: Collection[str] = ()) -> dict[str, MetricDelta]:
    """Every generation metric of the registry over the pairs where both traces are in its population."""
    deltas = {}
    for metric in GENERATION:
        if names is not None and metric.name not in names:
            continue
        values = [(metric.per_trace(b), metric.per_trace(c)) for b, c in pairs]
        both = np.asarray([(x, y) for x, y in values if x is not None and y is not None], dtype=float)
        if len(both) == 0:
            continue
        differences = (both[:, 1] - both[:, 0])[:, None]
        means = bootstrap_means(differences)
        test = metric.name in tested
        permute = test and metric.aggregation == "mean"   # proportions get McNemar's exact test
        p_value = (sign_flip_p_values(differences) if permute else bootstrap_p_values(means))[0]
        deltas[metric.name] = _delta(both[:, 0], both[:, 1], percentile_intervals(means)[0], p_value, metric.better,
                                     metric.aggregation == "proportion", test)
    return deltas


def _delta(base: np.ndarray, cand: np.ndarray, interval: tuple[float, float], p_value: float, better: str,
           proportion: bool, tested: bool) -> MetricDelta:
    """One metric's paired change, `untested` until decide() rules on the tested family."""
    base_mean, cand_mean = math.fsum(base) / len(base), math.fsum(cand) / len(cand)
    test = None
    if proportion:
        gained, lost = int(np.sum(cand > base)), int(np.sum(cand < base))
        worse, improved = (lost, gained) if better == "higher" else (gained, lost)
        test = McNemar(worse=worse, better=improved, p_value=mcnemar_exact(worse, improved))
        p_value = test.p_value
    return MetricDelta(n=len(base), baseline=base_mean, candidate=cand_mean, delta=cand_mean - base_mean,
                       ci95=interval, excludes_zero=interval[0] > 0 or interval[1] < 0, better=better,
                       change="untested", mcnemar=test, p_value=p_value, tested=tested)


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
