"""What a Prometheus metric family is (MetricDef) and the bucket sets in use; the catalog and the metric registry
declare families with it."""

from __future__ import annotations

from dataclasses import dataclass

SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""For scores between 0 and 1 (faithfulness, shares)."""
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
JOB_DURATION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)
PER_APP = ("tenant", "app")
"""The labels of every per-app family: an app is named by its tenant, so tenants never share a series."""


@dataclass(frozen=True)
class MetricDef:
    """One metric family. `kind` is "counter", "histogram" or "gauge". Counter names omit `_total`; the exposition
    adds it."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()
