"""Agreement between raters: accuracy and Cohen's kappa for two (judge vs human, a judge with itself, two reviewers),
Fleiss' kappa for more."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np

from ragpulse.config import defaults


def accuracy(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Share of items on which the two raters agree."""
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def cohens_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """kappa = (p_o - p_e) / (1 - p_e), p_e from each rater's marginals; 1.0 when both always give one label."""
    n = len(a)
    observed = accuracy(a, b)
    count_a, count_b = Counter(a), Counter(b)
    expected = sum(count_a[label] * count_b[label] for label in count_a) / (n * n)
    if expected == 1.0:
        return 1.0
    return (observed - expected) / (1 - expected)


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa of N subjects each rated by the same number n >= 2 of raters into k categories; `counts[i][j]`
    is how many raters put subject i in category j.

    P_i = (sum_j n_ij^2 - n) / (n (n - 1)), P_bar = mean_i P_i, p_j = sum_i n_ij / (N n), P_e = sum_j p_j^2,
    kappa = (P_bar - P_e) / (1 - P_e); 1.0 when every rating falls in one category (P_e = 1), as cohens_kappa.
    """
    table = np.asarray(counts, dtype=float)
    n = table[0].sum()
    if n < 2 or not np.all(table.sum(axis=1) == n):
        raise ValueError("Fleiss' kappa needs the same number (at least 2) of ratings for every subject")
    agreement = ((table ** 2).sum(axis=1) - n) / (n * (n - 1))
    shares = table.sum(axis=0) / table.sum()
    expected = float((shares ** 2).sum())
    if expected == 1.0:
        return 1.0
    return (float(agreement.mean()) - expected) / (1 - expected)


def kappa_interval(
    a: Sequence[Hashable], b: Sequence[Hashable],
    resamples: int = defaults.BOOTSTRAP_RESAMPLES, seed: int = defaults.BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """95% percentile-bootstrap interval of Cohen's kappa, resampling items with a fixed seed."""
    rng = np.random.default_rng(seed)
    n = len(a)
    values = []
    for _ in range(resamples):
        idx = rng.integers(0, n, size=n)
        values.append(cohens_kappa([a[i] for i in idx], [b[i] for i in idx]))
    low, high = np.percentile(values, [2.5, 97.5])
    return (float(low), float(high))
