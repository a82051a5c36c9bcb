"""The judge-agreement gauges of /metrics (monitoring.catalog.AGREEMENT_GAUGES), read from the label store at scrape
time, as QueueCollector reads RQ."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import redis
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ragpulse.config import defaults
from ragpulse.config.settings import Settings
from ragpulse.judges.kinds import current_prompt_versions
from ragpulse.labels import gauges
from ragpulse.labels.store import LabelStore
from ragpulse.monitoring.catalog import AGREEMENT_GAUGES, JUDGE_AGREEMENT_LABELS, JUDGE_CURRENT, JUDGE_LABELS_LAST
from ragpulse.model.prometheus import MetricDef

log = logging.getLogger("ragpulse.metrics")


class AgreementCollector(Collector):
    """The 2x2 label counts and newest label time per (tenant, app, judge, prompt version) within
    RAGPULSE_AGREEMENT_WINDOW_DAYS, and the prompt version each judge uses now."""

    def __init__(self, client: redis.Redis, settings: Settings) -> None:
        self.store = LabelStore(client, settings.label_ttl_seconds)
        self.window_seconds = settings.agreement_window_days * 86400
        self.current = current_prompt_versions()
        self.bounds = gauges.Bounds(frozenset(settings.tenants), frozenset(settings.apps), self.current)
        self._read: tuple[float, float, gauges.AgreementSamples] | None = None

    def describe(self) -> Iterator[Metric]:
        """Declare the gauges without touching Redis."""
        for metric in AGREEMENT_GAUGES:
            yield _gauge(metric)

    def collect(self) -> Iterator[Metric]:
        """The current prompts always; the label gauges unless Redis cannot be read (then they are left out)."""
        current = _gauge(JUDGE_CURRENT)
        for judge, version in self.current.items():
            current.add_metric([judge, version], 1.0)
        yield current
        try:
            samples = self._samples()
        except redis.RedisError as exc:
            log.warning("label store unreachable: %s", exc)
            return
        counts, last = _gauge(JUDGE_AGREEMENT_LABELS), _gauge(JUDGE_LABELS_LAST)
        for series, value in sorted(samples.counts.items()):
            counts.add_metric(list(series), float(value))
        for series, value in sorted(samples.last.items()):
            last.add_metric(list(series), value)
        yield counts
        yield last

    def _samples(self) -> gauges.AgreementSamples:
        """The gauges' samples, read again when a label arrived since (one cheap read tells) or
        defaults.AGREEMENT_SCRAPE_SECONDS have passed (labels age out of the window)."""
        now, newest = time.monotonic(), self.store.newest()
        if self._read is None or newest != self._read[1] or now - self._read[0] >= defaults.AGREEMENT_SCRAPE_SECONDS:
            self._read = (now, newest, gauges.read(self.store, self.bounds, time.time() - self.window_seconds))
        return self._read[2]

def _gauge(metric: MetricDef) -> GaugeMetricFamily:
    return GaugeMetricFamily(metric.name, metric.help, labels=metric.labels)
