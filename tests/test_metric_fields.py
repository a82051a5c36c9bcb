"""Metric hash fields (ragpulse.monitoring.counters): remembered per name, suffix and labels, always the field the
labels spell, sorted, in whatever order the labels come; histograms count cumulative buckets; the memo is bounded."""

from __future__ import annotations

import random

from ragpulse.monitoring import catalog, counters
from ragpulse.monitoring.counters import SEP, MetricsBatch, field, parse_field


def spelled(name: str, suffix: str, labels: dict[str, str]) -> str:
    return SEP.join([name, suffix, *(f"{k}={labels[k]}" for k in sorted(labels))])


def test_a_field_is_the_sorted_labels_in_any_order() -> None:
    rng = random.Random(7)
    for _ in range(2_000):
        keys = rng.sample(["tenant", "app", "environment", "judge", "stage", "le", "check"], rng.randint(0, 5))
        labels = {k: rng.choice(["a", "b", "other", "0.5"]) for k in keys}
        reordered = dict(reversed(list(labels.items())))
        assert field("m", "total", labels) == field("m", "total", reordered) == spelled("m", "total", labels)
        assert parse_field(field("m", "total", labels)) == ("m", "total", labels)


def test_a_histogram_observation_counts_cumulative_buckets() -> None:
    metric = next(m for m in catalog.BY_NAME.values() if m.buckets)
    labels = {"tenant": "default", "app": "other", "environment": "production"}
    batch = MetricsBatch(())
    value = metric.buckets[len(metric.buckets) // 2]
    batch.observe(metric, labels, value)
    batch.observe(metric, dict(reversed(list(labels.items()))), value)  # the same series, labels in another order
    for bound in metric.buckets:
        expected = 2 if value <= bound else 0
        assert batch.pending.get(spelled(metric.name, "bucket", {**labels, "le": repr(float(bound))}), 0) == expected
    assert batch.pending[spelled(metric.name, "bucket", {**labels, "le": "+Inf"})] == 2
    assert batch.pending[spelled(metric.name, "sum", labels)] == 2 * value
    assert batch.pending[spelled(metric.name, "count", labels)] == 2


def test_the_memo_is_bounded() -> None:
    for i in range(counters.FIELD_CACHE_SIZE + 10):
        field("m", "total", {"app": f"app-{i}"})
    assert len(counters._fields) <= counters.FIELD_CACHE_SIZE
    assert field("m", "total", {"app": "app-1"}) == spelled("m", "total", {"app": "app-1"})
