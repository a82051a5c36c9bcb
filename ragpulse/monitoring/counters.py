"""Write metric samples into one Redis hash (HINCRBYFLOAT), read them back for exposition."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

import redis

from ragpulse.config import keys
from ragpulse.store.atomic import WriteQueue
from ragpulse.monitoring.catalog import BY_NAME, MetricDef

SEP = "\x1f"
"""Separates a field's metric name, sample suffix and label pairs (never valid in a label value we emit)."""
METRICS_TTL_SECONDS = 30 * 86400
"""The counters hash is refreshed on every write; untouched for 30 days, it expires (a counter reset)."""


def field(name: str, suffix: str, labels: Mapping[str, str]) -> str:
    """Hash field for one sample: name, suffix (`total`, `bucket`, `sum`, `count`) and sorted labels."""
    return SEP.join([name, suffix, *(f"{k}={labels[k]}" for k in sorted(labels))])


def parse_field(raw: str) -> tuple[str, str, dict[str, str]]:
    """Inverse of `field`."""
    name, suffix, *pairs = raw.split(SEP)
    return name, suffix, dict(pair.split("=", 1) for pair in pairs)


OTHER = "other"
"""The label value of every app, and every tenant, that is not configured."""


class MetricsBatch:
    """Increments collected in memory and written in one round trip by `flush`."""

    def __init__(self, apps: Iterable[str], tenants: Iterable[str] = ()) -> None:
        self.apps = frozenset(apps)
        self.tenants = frozenset(tenants)
        self.pending: dict[str, float] = defaultdict(float)

    def app(self, app: str) -> str:
        """The bounded `app` label: a configured app, else `other`."""
        return app if app in self.apps else OTHER

    def tenant(self, tenant: str) -> str:
        """The bounded `tenant` label: a tenant of the configured API keys, else `other`."""
        return tenant if tenant in self.tenants else OTHER

    def per_app(self, tenant: str, app: str, environment: str) -> dict[str, str]:
        """The `tenant`, `app` and `environment` labels of a per-app series, all bounded (`environment` is one of the
        wire schema's few values)."""
        return {"tenant": self.tenant(tenant), "app": self.app(app), "environment": environment}

    def inc(self, metric: MetricDef, labels: Mapping[str, str], value: float = 1.0) -> None:
        """Add to a counter."""
        self.pending[field(metric.name, "total", labels)] += value

    def observe(self, metric: MetricDef, labels: Mapping[str, str], value: float) -> None:
        """Record one histogram observation (cumulative buckets, as Prometheus expects)."""
        for bound in metric.buckets:
            if value <= bound:
                self.pending[field(metric.name, "bucket", {**labels, "le": repr(float(bound))})] += 1
        self.pending[field(metric.name, "bucket", {**labels, "le": "+Inf"})] += 1
        self.pending[field(metric.name, "sum", labels)] += value
        self.pending[field(metric.name, "count", labels)] += 1

    def queue_onto(self, pipe: WriteQueue) -> None:
        """Add the pending increments to a pipeline the caller executes."""
        for name, value in self.pending.items():
            pipe.hincrbyfloat(keys.metrics(), name, value)
        if self.pending:
            pipe.expire(keys.metrics(), METRICS_TTL_SECONDS)
        self.pending.clear()

    def flush(self, client: redis.Redis) -> None:
        """Write the pending increments in one round trip."""
        if not self.pending:
            return
        with client.pipeline(transaction=False) as pipe:
            self.queue_onto(pipe)
            pipe.execute()


def read_samples(client: redis.Redis) -> dict[str, list[tuple[str, dict[str, str], float]]]:
    """Every stored sample, grouped by metric name: (suffix, labels, value)."""
    grouped: dict[str, list[tuple[str, dict[str, str], float]]] = defaultdict(list)
    for raw, value in client.hgetall(keys.metrics()).items():
        name, suffix, labels = parse_field(raw.decode())
        if name in BY_NAME:
            grouped[name].append((suffix, labels, float(value)))
    return grouped
