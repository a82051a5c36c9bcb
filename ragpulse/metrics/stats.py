"""Aggregation with uncertainty: means with bootstrap intervals, proportions with Wilson intervals."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np

from ragpulse.config import defaults
from ragpulse.model.estimate import (BOOTSTRAP_METHOD, DEGENERATE_METHOD, UNBOUNDED_POINT_METHOD, WILSON_METHOD,
                                     Estimate)

Z95 = 1.959963984540054
"""Two-sided 95% normal quantile."""

Scale = tuple[float, float]
"""The bounds a metric's per-trace values lie in (0-1 rates, 1-3 relevance grades)."""
Aggregation = Literal["mean", "proportion"]
"""How a metric aggregates, as the metric registry declares it: the interval method follows from it alone."""


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (well-behaved near 0 and 1, unlike the normal one)."""
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at 0 or n successes a bound is exactly 0 or 1; subtraction would leave float noise like 5.6e-17 there
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= n else min(1.0, centre + half)
    return (low, high)


def is_binary(values: Sequence[float]) -> bool:
    """True when every value is 0 or 1."""
    return all(v in (0.0, 1.0) for v in values)


def estimate(values: Sequence[float], aggregation: Aggregation, scale: Scale | None = None) -> Estimate:
    """The mean with the interval its declared aggregation calls for, whatever the values happen to be.

    `proportion`: a Wilson interval (ValueError unless every value is 0 or 1: a share is never bootstrapped).
    `mean`: a fixed-seed percentile bootstrap, also when the values happen to be 0/1; when every value is the same
    (one trace, or all 0) the bootstrap has nothing to resample and would claim certainty, so a metric bounded by
    `scale` then gets the bounded-variance interval instead (see `degenerate_interval`).
    """
    n = len(values)
    mean = math.fsum(values) / n
    if aggregation == "proportion":
        if not is_binary(values):
            raise ValueError("a proportion needs 0/1 values")
        return Estimate(mean=mean, n=n, ci95=wilson_interval(round(mean * n), n), ci_method=WILSON_METHOD)
    low, high = bootstrap_intervals(np.asarray(values, dtype=float)[:, None])[0]
    return _honest(Estimate(mean=mean, n=n, ci95=(low, high), ci_method=BOOTSTRAP_METHOD), values, scale)


def degenerate_interval(mean: float, n: int, scale: Scale) -> tuple[float, float]:
    """The Wilson score interval of `mean` rescaled to [0, 1] by `scale`, mapped back. A value bounded by [lo, hi]
    with mean m has variance at most (m - lo)(hi - m), the variance of a 0/1 value at the same mean, so this interval
    is never narrower than a proportion's with that mean and n: one trace at 0 gets [0, 0.79], as a share would."""
    low, high = scale
    share = min(1.0, max(0.0, (mean - low) / (high - low)))
    lo, hi = wilson_interval(share * n, n)
    return (low + lo * (high - low), low + hi * (high - low))


def _honest(est: Estimate, values: Sequence[float], scale: Scale | None) -> Estimate:
    """When every value is equal the bootstrap has nothing to resample: its interval (zero wide, or float noise
    around the mean, as 0.2 = 1/5 sums to) is replaced by `degenerate_interval` for a bounded metric, and said to be
    no interval for an unbounded one (a cost). Decided from the values, never the interval's width."""
    if max(values) > min(values):
        return est
    if scale is None:
        return Estimate(mean=est.mean, n=est.n, ci95=(est.mean, est.mean), ci_method=UNBOUNDED_POINT_METHOD)
    if scale[1] <= scale[0]:   # the only value the metric can take: certain
        return Estimate(mean=est.mean, n=est.n, ci95=(est.mean, est.mean), ci_method=DEGENERATE_METHOD)
    return Estimate(mean=est.mean, n=est.n, ci95=degenerate_interval(est.mean, est.n, scale),
                    ci_method=DEGENERATE_METHOD)


def estimate_columns(columns: Mapping[str, Sequence[float]], aggregations: Mapping[str, Aggregation],
                     scales: Mapping[str, Scale] | None = None) -> dict[str, Estimate]:
    """Estimate several metrics measured on the same queries, each by its declared aggregation; the means'
    bootstrap resamples queries once for all of them (a zero-width one widened as in `estimate`)."""
    scales = scales or {}
    names = [name for name, values in columns.items() if len(values) > 0]
    means = [name for name in names if aggregations[name] == "mean"]
    result = {name: estimate(columns[name], "proportion") for name in names if aggregations[name] == "proportion"}
    if len({len(columns[name]) for name in means}) > 1:
        result.update({name: estimate(columns[name], "mean", scales.get(name)) for name in means})
    elif means:
        matrix = np.asarray([columns[name] for name in means], dtype=float).T
        for name, interval in zip(means, bootstrap_intervals(matrix), strict=True):
            values = columns[name]
            result[name] = _honest(Estimate(mean=math.fsum(values) / len(values), n=len(values), ci95=interval,
                                            ci_method=BOOTSTRAP_METHOD), values, scales.get(name))
    return {name: result[name] for name in names}


def bootstrap_intervals(
    matrix: np.ndarray, resamples: int = defaults.BOOTSTRAP_RESAMPLES, seed: int = defaults.BOOTSTRAP_SEED
) -> list[tuple[float, float]]:
    """2.5/97.5 percentiles of column means over `resamples` resamplings of the rows (block-wise, bounded memory)."""
    return percentile_intervals(bootstrap_means(matrix, resamples, seed))


def bootstrap_means(
    matrix: np.ndarray, resamples: int = defaults.BOOTSTRAP_RESAMPLES, seed: int = defaults.BOOTSTRAP_SEED
) -> np.ndarray:
    """The column means of `resamples` resamplings of the rows (resamples x columns), fixed seed, block-wise."""
    n, m = matrix.shape
    rng = np.random.default_rng(seed)
    block = max(1, min(resamples, 2_000_000 // max(n, 1)))
    means = np.empty((resamples, m))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        # how often each row was drawn in each resample, then one matrix product: the column means of every
        # resample without gathering resamples x rows x columns values
        offsets = np.arange(stop - start)[:, None] * n
        counts = np.bincount((idx + offsets).ravel(), minlength=(stop - start) * n).reshape(stop - start, n)
        means[start:stop] = counts @ matrix / n
    return means


def percentile_intervals(means: np.ndarray) -> list[tuple[float, float]]:
    """The 95% percentile interval of each column of resampled means."""
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high)]


def bootstrap_p_values(means: np.ndarray) -> list[float]:
    """Two-sided bootstrap p-value that each column's mean is 0, from resampled means of paired differences:
    2 x the smaller share of resamples on either side of 0, counted as (k + 1) / (B + 1) so it is never 0; 1 when
    every resample sits at 0."""
    b = means.shape[0]
    below, above = np.sum(means <= 0, axis=0), np.sum(means >= 0, axis=0)
    return [min(1.0, 2 * (min(int(lo), int(hi)) + 1) / (b + 1)) for lo, hi in zip(below, above)]


def sign_flip_p_values(differences: np.ndarray, draws: int | None = None,
                       seed: int = defaults.BOOTSTRAP_SEED) -> list[float]:
    """Two-sided paired sign-flip permutation test that each column's mean paired difference is 0.

    Under no change a pair's difference is as likely to carry either sign, so |sum of differences| is ranked among
    the |sum| of the same differences under sign patterns: all 2^n of them up to PERMUTATION_EXACT_MAX_N pairs (p is
    the exact share at least as extreme), else `draws` random patterns (default: permutation_draws(n)) counted as
    (k + 1) / (draws + 1), never 0; its floor, 1 / (draws + 1) <= 1/5,001, is far under alpha / m for any family the
    gate tests. A column of zeros gives 1."""
    n, m = differences.shape
    observed = np.abs(differences.sum(axis=0))
    slack = 1e-9 * np.maximum(1.0, np.abs(differences).sum(axis=0))  # float noise must not hide a tie
    if n <= defaults.PERMUTATION_EXACT_MAX_N:
        patterns = ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1) * 2.0 - 1.0
        extreme = np.sum(np.abs(patterns @ differences) >= observed - slack, axis=0)
        return [float(k) / 2 ** n for k in extreme]
    draws = permutation_draws(n) if draws is None else draws
    rng = np.random.default_rng(seed)
    block = max(8, min(draws, 4_000_000 // n) // 8 * 8)
    extreme = np.zeros(m, dtype=np.int64)
    for start in range(0, draws, block):
        rows = min(block, draws - start)
        bits = np.unpackbits(np.frombuffer(rng.bytes(rows * n // 8 + 1), dtype=np.uint8))[: rows * n]
        signs = bits.reshape(rows, n).astype(np.float64) * 2.0 - 1.0   # one random bit a sign: 64x less to draw
        extreme += np.sum(np.abs(signs @ differences) >= observed - slack, axis=0)
    return [(int(k) + 1) / (draws + 1) for k in extreme]


def permutation_draws(n: int) -> int:
    """Monte Carlo draws of the sign-flip test for n pairs: PERMUTATION_DRAWS, fewer for very large n so one test
    touches at most PERMUTATION_BUDGET signs, never fewer than PERMUTATION_MIN_DRAWS."""
    return max(defaults.PERMUTATION_MIN_DRAWS, min(defaults.PERMUTATION_DRAWS, defaults.PERMUTATION_BUDGET // max(n, 1)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment for testing several hypotheses at once (in the input's order): the i-th smallest
    p is multiplied by (m - i), and adjusted values never decrease along that order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def paired_delta_interval(baseline: Sequence[float], candidate: Sequence[float]) -> tuple[float, float]:
    """95% interval of the mean paired difference (candidate - baseline): a fixed-seed percentile bootstrap that
    resamples pairs, so query difficulty, shared by both runs, cancels out."""
    differences = np.asarray(candidate, dtype=float) - np.asarray(baseline, dtype=float)
    return bootstrap_intervals(differences[:, None])[0]


def mcnemar_exact(worse: int, better: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs: `worse` pairs that flipped one way, `better` the
    other. Under no change each discordant pair is a fair coin, so p = min(1, 2 * P[Binomial(b + c, 1/2) <=
    min(b, c)]); 1.0 when no pair is discordant."""
    n = worse + better
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(worse, better) + 1)) / 2 ** n  # exact ints, one rounding
    return min(1.0, 2 * tail)
