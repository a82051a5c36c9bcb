"""Liveness, readiness and Prometheus exposition."""

from __future__ import annotations

from litestar import Response, get
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ragpulse.store import Store
from ragpulse.telemetry import ApiMetrics


@get("/healthz", tags=["ops"], summary="The process is up")
async def healthz() -> dict[str, str]:
    """Liveness: answers while the process runs, whatever Redis does."""
    return {"status": "ok"}


@get("/readyz", sync_to_thread=True, tags=["ops"], summary="Redis is reachable")
def readyz(store: Store) -> dict[str, str]:
    """Readiness: 503 (with Retry-After) when Redis does not answer a PING."""
    store.redis.ping()
    return {"status": "ready"}


@get("/metrics", sync_to_thread=False, tags=["ops"], summary="Prometheus metrics", media_type=CONTENT_TYPE_LATEST)
def metrics(api_metrics: ApiMetrics) -> Response[bytes]:
    """Prometheus text exposition of the API's registry."""
    return Response(generate_latest(api_metrics.registry), media_type=CONTENT_TYPE_LATEST)
