"""A mean with its sample size and 95% interval, as every report, comparison and calibration carries it; how such
intervals are computed lives in ragpulse.metrics.stats."""

from __future__ import annotations

import msgspec

from ragpulse.config import defaults

BOOTSTRAP_METHOD = f"percentile bootstrap, {defaults.BOOTSTRAP_RESAMPLES} resamples, seed {defaults.BOOTSTRAP_SEED}"
WILSON_METHOD = "wilson score interval"


class Estimate(msgspec.Struct, kw_only=True):
    """A macro-average with its sample size and 95% confidence interval."""

    mean: float
    n: int
    ci95: tuple[float, float]
    ci_method: str
