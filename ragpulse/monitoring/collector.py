"""A prometheus_client collector exposing the Redis-aggregated ragpulse_* metrics on the API's /metrics."""

from __future__ import annotations

from collections.abc import Iterator

import redis
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ragpulse.monitoring.catalog import ALL, MetricDef
from ragpulse.monitoring.counters import read_samples


class RedisMetricsCollector(Collector):
    """Reads the shared counters hash at scrape time; every family is declared even before its first sample."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def describe(self) -> Iterator[Metric]:
        """Declare families without touching Redis (registration must not depend on Redis being up)."""
        for metric in ALL:
            yield _family(metric)

    def collect(self) -> Iterator[Metric]:
        """One HGETALL per scrape; a Redis outage surfaces as a failed scrape, not as zeros."""
        samples = read_samples(self.client)
        for metric in ALL:
            family = _family(metric)
            rows = samples.get(metric.name, [])
            if metric.kind == "counter":
                for _, labels, value in rows:
                    family.add_metric([labels[name] for name in metric.labels], value)
            else:
                _add_histograms(family, metric, rows)
            yield family


def _family(metric: MetricDef) -> Metric:
    if metric.kind == "counter":
        return CounterMetricFamily(metric.name, metric.help, labels=metric.labels)
    return HistogramMetricFamily(metric.name, metric.help, labels=metric.labels)


def _add_histograms(family: HistogramMetricFamily, metric: MetricDef, rows: list) -> None:
    series: dict[tuple[str, ...], dict] = {}
    for suffix, labels, value in rows:
        key = tuple(labels[name] for name in metric.labels)
        entry = series.setdefault(key, {"buckets": {}, "sum": 0.0})
        if suffix == "bucket":
            entry["buckets"][labels["le"]] = value
        elif suffix == "sum":
            entry["sum"] = value
    for key, entry in series.items():
        bounds = [repr(float(b)) for b in metric.buckets] + ["+Inf"]
        buckets = [(bound, entry["buckets"].get(bound, 0.0)) for bound in bounds]
        family.add_metric(list(key), buckets, entry["sum"])
