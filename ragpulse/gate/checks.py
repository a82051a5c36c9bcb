"""The gate's verdicts: each threshold against the report, the share of traces that did not evaluate, and each
metric's paired change against a baseline."""

from __future__ import annotations

from typing import Literal

import msgspec

from ragpulse.gate.config import SECURITY_PREFIX, GateConfig, Threshold
from ragpulse.model.estimate import Estimate
from ragpulse.model.agreement import CorrectedRate
from ragpulse.model.compare import Comparison, MetricDelta
from ragpulse.reporting.report import Report

Verdict = Literal["pass", "fail", "no_data", "info"]


class Row(msgspec.Struct, kw_only=True):
    """One line of the gate's table."""

    metric: str
    value: float | None
    interval: tuple[float, float] | None
    threshold: str
    verdict: Verdict
    detail: str = ""
    p_value: float | None = None
    """A baseline row's own p-value (McNemar or sign-flip permutation)."""
    p_adjusted: float | None = None
    """A baseline row's p-value adjusted over the tested family: what the verdict reads."""

    @property
    def failed(self) -> bool:
        return self.verdict == "fail"


def check_report(report: Report, config: GateConfig) -> list[Row]:
    """One row per threshold, then the failed-traces row."""
    judged = set(config.judged_keys(compared=False))
    not_judged = report.generation.not_judged
    rows = [_corrected_row(key, report.corrected.get(key), threshold) if threshold.on.startswith("corrected")
            else _threshold_row(key, _estimate(report, key), threshold,
                                not_judged if key in judged else None)
            for key, threshold in config.active_thresholds.items()]
    counts = report.counts
    share = counts.failed / counts.total if counts.total else 0.0
    rows.append(Row(metric="failed_traces", value=share, interval=None,
                    threshold=f"<= {config.max_failed_share:g}", verdict=_verdict(share <= config.max_failed_share),
                    detail=f"{counts.failed} of {counts.total} traces did not evaluate (failed, judge_error, skipped)"))
    return rows


def check_comparison(comparison: Comparison, config: GateConfig) -> list[Row]:
    """A row per metric of the comparison's tested family, decided as the comparison decided it (one function,
    ragpulse.reporting.significance.decide, for compare and gate alike): a regression fails unless
    `fail_on_regression` is off. A baseline no trace matched fails (nothing was compared, so nothing may pass); traces
    only one side holds, and metrics the gate asked to test that could not be, are rows of their own. The oracle gap
    or RAG lift, when there is one, as information."""
    rows = [Row(metric="regression family", value=None, interval=None, threshold="-", verdict="info",
                detail=f"tested against the baseline ({comparison.correction} correction over "
                       f"{len(comparison.family)}, alpha {comparison.alpha:g}): {', '.join(comparison.family)}; "
                       "every other metric is described in the comparison, not tested")]
    pairing = _pairing_row(comparison)
    if pairing is not None:
        rows.append(pairing)
    if comparison.dataset_mismatch:
        rows.append(Row(metric="dataset", value=None, interval=None, threshold="same dataset items", verdict="info",
                        detail=f"MISMATCH (warned, not refused): {comparison.dataset_mismatch}"))
    rows.append(_judges_row(comparison))
    deltas = {**comparison.retrieval, **comparison.generation}
    rows += [_family_row(key, delta, comparison, config.baseline.fail_on_regression)
             for key, delta in deltas.items() if delta.tested]
    rows += [_untested_row(key, deltas.get(key), comparison) for key in config.regression_family
             if key not in comparison.family and comparison.matched]
    for name, gap in (("oracle_gap", comparison.oracle_gap), ("rag_lift", comparison.rag_lift)):
        if gap is not None:
            rows.append(Row(metric=f"{name} ({gap.metric})", value=gap.value, interval=gap.ci95, threshold="-",
                            verdict="info", detail=gap.meaning))
    return rows


def _pairing_row(comparison: Comparison) -> Row | None:
    """Fails when no trace matched (the two runs share no trace_id and no query: the baseline checked nothing);
    shows how many traces only one side holds, which no baseline row covers; None when every trace matched."""
    matched, only_base, only_cand = comparison.matched, comparison.only_in_baseline, comparison.only_in_candidate
    if matched == 0:
        return Row(metric="matched traces", value=0.0, interval=None, threshold=">= 1", verdict="fail",
                   detail=f"no trace matched: the baseline's {only_base} and the candidate's {only_cand} traces share "
                          "no trace_id and no query text, so nothing was compared against the baseline")
    if not (only_base or only_cand):
        return None
    return Row(metric="matched traces", value=float(matched), interval=None, threshold="-", verdict="info",
               detail=f"{matched} matched; {only_cand} only in the candidate and {only_base} only in the baseline are "
                      "in no baseline row (a trace whose id changed is compared with nothing)")


def _judges_row(comparison: Comparison) -> Row:
    """Each side's judge, model, prompt version and judged share; says when they differ (warned: a refusal never
    reaches the table) or when a side is below the judged-share floor."""
    sides = "; ".join(f"{role} {side.judging.describe()}, {side.judging.judged} of {side.judging.sent} judged"
                      for role, side in (("candidate", comparison.candidate), ("baseline", comparison.baseline))
                      if side.judging is not None)
    problems = [*([f"MISMATCH (warned, not refused): {comparison.judge_mismatch}"] if comparison.judge_mismatch
                  else []),
                *([f"BELOW THE FLOOR, judged metrics not tested: {comparison.judged_refused}"]
                  if comparison.judged_refused else [])]
    return Row(metric="judges", value=None, interval=None, threshold="same judge, model, prompt", verdict="info",
               detail="; ".join([sides or "not known", *problems]))


def _untested_row(key: str, delta: MetricDelta | None, comparison: Comparison) -> Row:
    """A metric the gate asked to test against the baseline that could not be: refused for a side's judged share,
    missing on a side, or too few matched traces to test."""
    refused = f"judged share below the floor: {comparison.judged_refused}" \
        if key in comparison.refused_metrics else None
    why = refused or (delta.note if delta is not None and delta.note else (
        "missing from the baseline or the candidate (not judged, no labels, or another k)" if delta is None
        else f"not tested over {delta.n} matched traces"))
    return Row(metric=f"{key} vs baseline", value=None if delta is None else delta.delta,
               interval=None if delta is None else delta.ci95, threshold="no significant regression",
               verdict="no_data", detail=f"not tested: {why}")


def _family_row(key: str, delta: MetricDelta, comparison: Comparison, fail_on_regression: bool) -> Row:
    fails = delta.change == "regressed" and fail_on_regression
    test = "McNemar" if delta.mcnemar else "sign-flip permutation"
    adjusted = "" if delta.p_adjusted is None else f", adjusted ({comparison.correction} over " \
        f"{len(comparison.family)} tested metrics) {delta.p_adjusted:.3g}"
    why = f"; {delta.note}" if delta.note else ""
    return Row(metric=f"{key} vs baseline", value=delta.delta, interval=delta.ci95,
               threshold="no significant regression", verdict="fail" if fails else "pass",
               detail=f"{delta.change}: {delta.baseline:.3f} -> {delta.candidate:.3f} over {delta.n} matched traces; "
                      f"{test} p={delta.p_value:.3g}{adjusted}{why}",
               p_value=delta.p_value, p_adjusted=delta.p_adjusted)


def _estimate(report: Report, key: str) -> Estimate | None:
    if key.startswith(SECURITY_PREFIX):
        return report.security.rates.get(key[len(SECURITY_PREFIX):]) if report.security else None
    if key in report.retrieval:
        return report.retrieval[key]
    return getattr(report.generation, key, None)


def _corrected_row(key: str, rate: CorrectedRate | None, threshold: Threshold) -> Row:
    """A ceiling held on the judge-corrected rate (or its interval's upper bound); without a corrected number (too
    few labels, an uninformative judge) it fails when required, and says why."""
    shown = f"<= {threshold.limit:g} ({threshold.on})"
    if rate is None or rate.corrected is None or rate.ci95 is None:
        detail = rate.detail if rate is not None else "no judge-corrected rate: no human labels for this judge"
        return Row(metric=key, value=None, interval=None, threshold=shown,
                   verdict="fail" if threshold.required else "no_data",
                   detail=detail + ("" if threshold.required else " (not required)"))
    held = rate.corrected if threshold.on == "corrected" else rate.ci95[1]
    return Row(metric=key, value=rate.corrected, interval=rate.ci95, threshold=shown,
               verdict=_verdict(held <= threshold.limit),
               detail=f"judge-corrected ({rate.estimation_labels} labels in the estimation sample); raw "
                      f"{rate.raw:.3f} over n={rate.n}")


def _threshold_row(key: str, est: Estimate | None, threshold: Threshold, not_judged: str | None = None) -> Row:
    """The threshold held against the metric; `not_judged`, why a judged metric has no value (no judge configured)."""
    sign = ">=" if threshold.min is not None else "<="
    shown = f"{sign} {threshold.limit:g}" + ("" if threshold.on == "mean" else f" ({threshold.on})")
    if est is None:
        why = not_judged or "no trace in this metric's population"
        return Row(metric=key, value=None, interval=None, threshold=shown,
                   verdict="fail" if threshold.required else "no_data",
                   detail=why + ("" if threshold.required else " (not required)"))
    held = {"mean": est.mean, "ci_low": est.ci95[0], "ci_high": est.ci95[1]}[threshold.on]
    ok = held >= threshold.limit if threshold.min is not None else held <= threshold.limit
    return Row(metric=key, value=est.mean, interval=est.ci95, threshold=shown, verdict=_verdict(ok),
               detail=f"n={est.n}" + ("" if threshold.on == "mean" else f", {threshold.on}={held:.3f}"))


def _verdict(ok: bool) -> Verdict:
    return "pass" if ok else "fail"
