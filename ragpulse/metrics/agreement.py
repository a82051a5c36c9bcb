"""Agreement between two raters (judge vs human, or a judge with itself): accuracy and Cohen's kappa."""

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
