"""What a Prometheus metric family is (MetricDef) and the bucket sets in use; the catalog and the metric registry
declare families with it."""

from __future__ import annotations

from dataclasses import dataclass

SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""For scores between 0 and 1 (faithfulness, shares)."""
LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
JOB_DURATION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 14400.0)
PIPELINE_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
"""For an app's own stage latencies (retrieval, rerank, generation, total), in seconds."""
COST_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5)
"""For an app's own cost per query, in US dollars."""
TOKEN_BUCKETS = (250.0, 500.0, 1000.0, 2000.0, 4000.0, 8000.0, 16000.0, 32000.0, 64000.0, 128000.0)
"""For context length per query, in tokens."""
TENANT_APP = ("tenant", "app")
"""An app is named by its tenant, so tenants never share a series."""
PER_APP = (*TENANT_APP, "environment")
"""The labels of every per-app family counted from traces: the app, and the environment the traces came from
(ragpulse.model.environment), so evaluation runs have series of their own that the alert rules do not read."""


@dataclass(frozen=True)
class MetricDef:
    """One metric family. `kind` is "counter", "histogram" or "gauge". Counter names omit `_total`; the exposition
    adds it."""

    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    buckets: tuple[float, ...] = ()
