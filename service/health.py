"""Liveness, readiness and Prometheus exposition."""

from __future__ import annotations

import hmac

import msgspec
from litestar import Request, Response, get
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ragpulse.exceptions import Unauthorized
from ragpulse.judges import kinds
from service.context import Services


class DefaultJudge(msgspec.Struct, kw_only=True, frozen=True):
    """The judge the service uses when a batch names none, and for every production trace."""

    name: str
    """RAGPULSE_JUDGE (none, local, anthropic, openai)."""
    configured: bool
    """False when it lacks a setting (a key, a base URL): production traces are then accepted but never judged."""
    problem: str | None
    """What is missing, what to set on the service, and what it does to traces; null when configured."""


class Readiness(msgspec.Struct, kw_only=True, frozen=True):
    """GET /readyz's answer."""

    status: str
    """`ready`: Redis answers."""
    default_judge: DefaultJudge


@get("/healthz", tags=["ops"], summary="The process is up")
async def healthz() -> dict[str, str]:
    """Liveness: answers while the process runs, whatever Redis does."""
    return {"status": "ok"}


@get("/readyz", sync_to_thread=True, tags=["ops"], summary="Redis is reachable; the default judge's state")
def readyz(services: Services) -> Readiness:
    """Readiness: 503 (with Retry-After) when Redis does not answer a PING. A default judge without its credentials
    does not make the service unready (it still takes traces and computes their retrieval metrics): the answer says
    so in default_judge, as the landing page and the start-up log do."""
    services.store.redis.ping()
    return Readiness(status="ready", default_judge=default_judge(services))


def default_judge(services: Services) -> DefaultJudge:
    """The service's default judge and whether it can judge here."""
    settings = services.settings
    problem = kinds.default_judge_problem(settings)
    return DefaultJudge(name=settings.default_judge, configured=problem is None, problem=problem)


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
