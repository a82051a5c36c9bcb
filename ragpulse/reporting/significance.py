"""The one decision compare and gate share: which metrics are tested for a change (one multiple-comparison family),
how their p-values are adjusted, and whether each regressed, improved or stayed put.

Only the family is tested: the metrics a gate holds (thresholds, `[baseline] metrics`) or a compare request names.
Every other metric is described by its delta and interval and called `untested`, so adding metrics to a report never
dilutes the test of the ones that matter: Holm over 6 metrics needs p < 0.0083 for the first, over 27 it needed
p < 0.0019, below what 1,000 bootstrap resamples can even show.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ragpulse.config import defaults
from ragpulse.metrics.stats import holm
from ragpulse.exceptions import InvalidParameter
from ragpulse.model.compare import Correction, MetricDelta
from ragpulse.model.metric_keys import did_you_mean, is_metric_key


def default_family(targets: Iterable[str] = ()) -> list[str]:
    """The family when nobody names one: the metrics with targets, then DEFAULT_REGRESSION_FAMILY, in that order."""
    return list(dict.fromkeys([*targets, *defaults.DEFAULT_REGRESSION_FAMILY]))


def decide(deltas: Mapping[str, MetricDelta], correction: Correction,
           alpha: float = defaults.COMPARE_ALPHA) -> list[str]:
    """Adjust the tested deltas' p-values over their family and set each one's `change` (in place); the family's
    keys. Untested deltas are left `untested`."""
    family = [key for key, delta in deltas.items() if delta.tested]
    adjusted = holm([deltas[key].p_value for key in family])
    for key, p_holm in zip(family, adjusted, strict=True):
        delta = deltas[key]
        delta.p_holm = p_holm
        delta.p_adjusted = p_holm if correction == "holm" else delta.p_value
        delta.change = _change(delta, delta.p_adjusted < alpha)
        delta.note = _note(delta, len(family), correction, alpha)
    return family


def worse(delta: MetricDelta) -> bool:
    """The candidate is worse than the baseline in this metric's own direction (whatever the significance)."""
    if delta.mcnemar is not None:
        return delta.mcnemar.worse > delta.mcnemar.better
    return delta.delta < 0 if delta.better == "higher" else delta.delta > 0


def _change(delta: MetricDelta, significant: bool) -> str:
    if not significant:
        return "unchanged"
    if delta.mcnemar is not None and delta.mcnemar.worse == delta.mcnemar.better:
        return "unchanged"
    return "regressed" if worse(delta) else "improved"


def _note(delta: MetricDelta, size: int, correction: Correction, alpha: float) -> str | None:
    """Why a change that looks real on its own is not called significant; None when nothing needs saying."""
    if delta.change != "unchanged" or delta.p_adjusted is None:
        return None
    alone = delta.p_value < alpha
    if not (delta.excludes_zero or alone):
        return None
    seen = "its interval excludes 0" if delta.excludes_zero else f"p={delta.p_value:.3g} alone"
    if correction == "holm" and alone:
        return (f"{seen}, but after Holm's adjustment over the {size} tested metrics p={delta.p_adjusted:.3g} is "
                f"not below {alpha:g}")
    return (f"{seen} (bootstrap), but the {_test(delta)} gives p={delta.p_value:.3g}, not below {alpha:g}"
            + ("" if correction == "none" else f" (Holm-adjusted {delta.p_adjusted:.3g})"))


def _test(delta: MetricDelta) -> str:
    return "McNemar test" if delta.mcnemar is not None else "sign-flip permutation test"


def parse_family(text: str, path: str = "query.metrics") -> list[str]:
    """Comma-separated metric keys as a family; InvalidParameter naming `path` for an unknown key or none."""
    keys = [key.strip() for key in text.split(",") if key.strip()]
    unknown = [key for key in keys if not is_metric_key(key)]
    if unknown or not keys:
        what = (f"unknown metric key(s) {', '.join(key + did_you_mean(key) for key in unknown[:10])}" if unknown
                else "no metric key")
        raise InvalidParameter(f"`metrics` names {what}: give metric keys such as recall@5, mrr, "
                               "hallucination_rate", [{"path": path, "message": what}])
    return list(dict.fromkeys(keys))
