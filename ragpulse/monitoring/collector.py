"""A prometheus_client collector exposing the Redis-aggregated ragpulse_* metrics on the API's /metrics."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Iterator, Mapping

import redis
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from ragpulse.config.defaults import MONITORED_ENVIRONMENT
from ragpulse.judges.kinds import judging_names
from ragpulse.model.results import TRUNCATED_PARTS
from ragpulse.monitoring.catalog import ALL, MetricDef
from ragpulse.monitoring.counters import OTHER, read_samples
from ragpulse.security.credentials import KINDS as CREDENTIAL_KINDS
from ragpulse.security.pii import KINDS as PII_KINDS

log = logging.getLogger("ragpulse.metrics")

KNOWN_LABEL_VALUES: dict[str, tuple[str, ...]] = {
    "judge": judging_names(),
    "verdict": ("supported", "unsupported", "contradicted"),
    "direction": ("input", "output", "cache_read", "cache_write"),
    "queue": ("online", "batch"),
    "status": ("ok",),
    "part": TRUNCATED_PARTS,
    "kind": PII_KINDS,
    "credential": CREDENTIAL_KINDS,
    "environment": (MONITORED_ENVIRONMENT,),
}
"""Label values whose series are exposed at 0 before their first increment, so `increase()` sees the first one.
(`kind` is PII's and `credential` the credential kinds: without them the first answer with a new kind would create
its series at 1, and PIIInAnswers or CredentialsInAnswers would not see it. Only the production `environment` starts
at 0: the alerts read no other, and the others would triple every per-app family's exposition for series nobody pages on. `check` and `stage` are not here: two families each use them, with other values.)"""


class RedisMetricsCollector(Collector):
    """Reads the shared counters hash at scrape time; known series start at 0 instead of appearing later."""

    def __init__(self, client: redis.Redis, apps: Iterable[str] = (), models: Iterable[str] = (),
                 tenants: Iterable[str] = ()) -> None:
        self.client = client
        self.tenants = frozenset(tenants)
        """The configured tenants (settings.tenants): their series start at 0 before anything of theirs is stored, so
        a new tenant's first leak, counted in the same scrape interval as its first trace, is an increase too."""
        self.label_values: Mapping[str, tuple[str, ...]] = {
            **KNOWN_LABEL_VALUES, "app": (*sorted(apps), OTHER), "model": tuple(models)}

    def describe(self) -> Iterator[Metric]:
        """Declare families without touching Redis (registration must not depend on Redis being up)."""
        for metric in ALL:
            yield _family(metric)

    def collect(self) -> Iterator[Metric]:
        """One HGETALL per scrape. With Redis down these families are left out (the API's 503 on /readyz and the
        missing ragpulse_workers say why), rather than reported as zeros."""
        try:
            samples = read_samples(self.client)
        except redis.RedisError as exc:
            log.warning("metrics store unreachable: %s", exc)
            return
        values = {**self.label_values, "tenant": tuple(sorted(self.tenants.union(_tenants(samples))))}
        for metric in ALL:
            family = _family(metric)
            rows = _declared(metric, samples.get(metric.name, []))
            if metric.kind == "counter":
                _add_counters(family, metric, rows, _zeros(metric, values))
            else:
                _add_histograms(family, metric, rows, _zeros(metric, values))
            yield family


def _tenants(samples: Mapping[str, list[tuple[str, dict[str, str], float]]]) -> tuple[str, ...]:
    """The `tenant` values stored so far: writers bound them (configured tenants, else `other`), and a tenant's
    traces are counted as received before anything else of theirs, so its other series start at 0 from then on."""
    return tuple(sorted({labels["tenant"] for rows in samples.values() for _, labels, _ in rows if "tenant" in labels}))


def _declared(metric: MetricDef, rows: list) -> list:
    """The stored rows labelled as the family is declared now. A family that gained a label (issue 22 gave the
    unanswerable counters `judge`) keeps the fields written before under the old label set: those are left out
    rather than given a guessed value, and the new series start at 0."""
    names = set(metric.labels)
    return [row for row in rows if set(row[1]) - {"le"} == names]


def _zeros(metric: MetricDef, values: Mapping[str, tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Label combinations to expose at 0: every known value of every label, when all of them are known."""
    if not all(values.get(name) for name in metric.labels):
        return []
    return list(itertools.product(*(values[name] for name in metric.labels)))


def _family(metric: MetricDef) -> Metric:
    if metric.kind == "counter":
        return CounterMetricFamily(metric.name, metric.help, labels=metric.labels)
    return HistogramMetricFamily(metric.name, metric.help, labels=metric.labels)


def _add_counters(family: CounterMetricFamily, metric: MetricDef, rows: list, zeros: list) -> None:
    values = {tuple(labels[name] for name in metric.labels): value for _, labels, value in rows}
    for key in zeros:
        values.setdefault(key, 0.0)
    for key, value in values.items():
        family.add_metric(list(key), value)


def _add_histograms(family: HistogramMetricFamily, metric: MetricDef, rows: list, zeros: list) -> None:
    series: dict[tuple[str, ...], dict] = {key: {"buckets": {}, "sum": 0.0} for key in zeros}
    for suffix, labels, value in rows:
        key = tuple(labels[name] for name in metric.labels)
        entry = series.setdefault(key, {"buckets": {}, "sum": 0.0})
        if suffix == "bucket":
            entry["buckets"][labels["le"]] = value
        elif suffix == "sum":
            entry["sum"] = value
    for key, entry in series.items():
        bounds = [repr(float(b)) for b in metric.buckets] + ["+Inf"]
        family.add_metric(list(key), [(bound, entry["buckets"].get(bound, 0.0)) for bound in bounds], entry["sum"])
