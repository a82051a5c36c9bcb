"""A mean with its sample size and 95% interval, as the report, label corrections and the gate read it, and the names
of the interval methods (calibrations name theirs too); ragpulse.metrics.stats computes the intervals."""

from __future__ import annotations

import msgspec

from ragpulse.config import defaults

BOOTSTRAP_METHOD = f"percentile bootstrap, {defaults.BOOTSTRAP_RESAMPLES} resamples, seed {defaults.BOOTSTRAP_SEED}"
WILSON_METHOD = "wilson score interval"
DEGENERATE_METHOD = "bounded-variance wilson interval (every value equal: nothing to bootstrap)"
UNBOUNDED_POINT_METHOD = ("none: every value equal and the metric has no bound, so no interval can be given (the "
                          "bounds are the point, not a certainty)")


class Estimate(msgspec.Struct, kw_only=True):
    """A macro-average with its sample size and 95% confidence interval."""

    mean: float
    n: int
    ci95: tuple[float, float]
    ci_method: str
