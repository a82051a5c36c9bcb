"""Prometheus metrics of the API. Built on a registry that is passed in, so each test gets a fresh one."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class ApiMetrics:
    """Counters the API updates; label values come from small fixed sets only."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.batches = Counter(
            "ragpulse_api_batches_total", "Batches accepted by the API.", registry=registry)
        self.online_posts = Counter(
            "ragpulse_api_online_posts_total", "POST /v1/traces requests accepted by the API.", registry=registry)
        self.rejected = Counter(
            "ragpulse_api_requests_rejected_total", "Requests answered with an error, by status code.",
            ["status"], registry=registry)
        self.data_warnings = Counter(
            "ragpulse_api_data_quality_warnings_total", "Data-quality warnings attached to accepted batches.",
            ["code"], registry=registry)
