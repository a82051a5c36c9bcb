"""Aggregation with uncertainty: means with bootstrap intervals, proportions with Wilson intervals."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import msgspec
import numpy as np

from ragpulse.config import defaults

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""

BOOTSTRAP_METHOD = f"percentile bootstrap, {defaults.BOOTSTRAP_RESAMPLES} resamples, seed {defaults.BOOTSTRAP_SEED}"
WILSON_METHOD = "wilson score interval"


class Estimate(msgspec.Struct, kw_only=True):
    """A macro-average with its sample size and 95% confidence interval."""

    mean: float
    n: int
    ci95: tuple[float, float]
    ci_method: str


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (well-behaved near 0 and 1, unlike the normal one)."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def is_binary(values: Sequence[float]) -> bool:
    """True when every value is 0 or 1, so the mean is a proportion."""
    return all(v in (0.0, 1.0) for v in values)


def estimate(values: Sequence[float], aggregation: str = "mean") -> Estimate:
    """Mean with a Wilson interval for 0/1 data, else a fixed-seed percentile bootstrap.

    `aggregation="proportion"` insists on 0/1 data (ValueError otherwise): a share is never bootstrapped.
    """
    n = len(values)
    mean = math.fsum(values) / n
    binary = is_binary(values)
    if aggregation == "proportion" and not binary:
        raise ValueError("a proportion needs 0/1 values")
    if binary:
        return Estimate(mean=mean, n=n, ci95=wilson_interval(round(mean * n), n), ci_method=WILSON_METHOD)
    low, high = bootstrap_intervals(np.asarray(values, dtype=float)[:, None])[0]
    return Estimate(mean=mean, n=n, ci95=(low, high), ci_method=BOOTSTRAP_METHOD)


def estimate_columns(columns: Mapping[str, Sequence[float]]) -> dict[str, Estimate]:
    """Estimate several metrics measured on the same queries, resampling queries once for all of them."""
    names = [name for name, values in columns.items() if len(values) > 0]
    if not names:
        return {}
    lengths = {len(columns[name]) for name in names}
    if len(lengths) != 1:
        return {name: estimate(columns[name]) for name in names}
    matrix = np.asarray([columns[name] for name in names], dtype=float).T
    intervals = bootstrap_intervals(matrix)
    result = {}
    for j, name in enumerate(names):
        values = columns[name]
        if is_binary(values):
            result[name] = estimate(values)
        else:
            result[name] = Estimate(mean=math.fsum(values) / len(values), n=len(values),
                                    ci95=intervals[j], ci_method=BOOTSTRAP_METHOD)
    return result


def bootstrap_intervals(
    matrix: np.ndarray, resamples: int = defaults.BOOTSTRAP_RESAMPLES, seed: int = defaults.BOOTSTRAP_SEED
) -> list[tuple[float, float]]:
    """2.5/97.5 percentiles of column means over `resamples` resamplings of the rows (block-wise, bounded memory)."""
    n, m = matrix.shape
    rng = np.random.default_rng(seed)
    block = max(1, min(resamples, 2_000_000 // max(n, 1)))
    means = np.empty((resamples, m))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = matrix[idx].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high)]
