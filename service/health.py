"""Liveness, readiness and Prometheus exposition."""

from __future__ import annotations

import hmac

from litestar import Request, Response, get
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ragpulse.exceptions import Unauthorized
from service.context import Services


@get("/healthz", tags=["ops"], summary="The process is up")
async def healthz() -> dict[str, str]:
    """Liveness: answers while the process runs, whatever Redis does."""
    return {"status": "ok"}


@get("/readyz", sync_to_thread=True, tags=["ops"], summary="Redis is reachable")
def readyz(services: Services) -> dict[str, str]:
    """Readiness: 503 (with Retry-After) when Redis does not answer a PING."""
    services.store.redis.ping()
    return {"status": "ready"}


@get("/metrics", sync_to_thread=True, tags=["ops"], summary="Prometheus metrics", media_type=CONTENT_TYPE_LATEST)
def metrics(request: Request, services: Services) -> Response[bytes]:
    """Prometheus text exposition: the API's own counters and every worker's, aggregated in Redis.

    With RAGPULSE_METRICS_TOKEN set, 401 unless the request sends `Authorization: Bearer <that token>` (a token of
    its own: an API key opens no metrics, whose series cover every tenant). In a thread: its Redis reads must not
    stall the event loop (and /healthz with it) when Redis hangs."""
    token = services.settings.metrics_token
    if token is not None:
        scheme, _, sent = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(sent.strip().encode(), token.encode()):
            raise Unauthorized("send `Authorization: Bearer <metrics token>` (RAGPULSE_METRICS_TOKEN)")
    # The header is set whole: given only a text/* media type, Litestar appends a second `; charset=utf-8` to
    # CONTENT_TYPE_LATEST, which already carries one, and Prometheus 3 rejects the unparseable value.
    return Response(generate_latest(services.api_metrics.registry), media_type=CONTENT_TYPE_LATEST,
                    headers={"content-type": CONTENT_TYPE_LATEST})
