"""What handlers receive: one `Call` per request (the tenant plus the app's services).

One dependency per handler, on purpose: Litestar resolves two or more dependencies concurrently in a task group
per request, and on the single-trace ingest path that overhead alone cost about a tenth of the API's CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from litestar import Request

from dispatch.chunks import ChunkEnqueuer
from ragpulse.labels.desk import ReviewDesk
from ragpulse.store.atomic import GroupCommitter
from ragpulse.otlp.buffer import SpanBuffer
from ragpulse.monitoring.policy_store import PolicyCache, PolicyStore
from ragpulse.store.datasets import DatasetStore
from ragpulse.store.review_sessions import ReviewSessions
from ragpulse.config.settings import Settings
from ragpulse.store import Store
from ragpulse.monitoring.api_metrics import ApiMetrics
from service.auth import resolve_tenant


@dataclass(frozen=True)
class Services:
    """Built once by create_app and shared by every request."""

    settings: Settings
    store: Store
    api_metrics: ApiMetrics
    policies: PolicyStore
    committer: GroupCommitter
    """Applies the ingest path's writes, group-committed on the event loop."""
    enqueuer: ChunkEnqueuer
    """Builds the RQ writes that enqueue chunk jobs."""
    online_policies: PolicyCache
    """Sampling policies as POST /v1/traces reads them: on the event loop, cached a few seconds."""
    otlp_buffer: SpanBuffer
    """OpenTelemetry spans waiting, by trace, to be assembled (POST /v1/otlp/v1/traces)."""
    reviews: ReviewDesk
    """Human labels and the review queue."""
    review_sessions: ReviewSessions
    """The review pages' logins (service.review_auth)."""
    datasets: DatasetStore
    """Versioned eval datasets (service.datasets) and the batches bound to them."""


@dataclass(frozen=True)
class Call:
    """One authenticated request: the calling tenant and the services it may use."""

    tenant: str
    services: Services

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def settings(self) -> Settings:
        return self.services.settings


TENANT_SCOPE_KEY = "ragpulse.tenant"
"""Where the app's before_request guard (service.guard) leaves the tenant it authenticated, before the body is read."""


def call_resolver(services: Services) -> Callable[[Request], Call]:
    """The `call` dependency: the tenant the guard authenticated (401 otherwise) and the services."""

    def resolve_call(request: Request) -> Call:
        tenant = request.scope.get(TENANT_SCOPE_KEY)
        if tenant is None:   # the guard did not run (a layer's own before_request hook replaces the app's)
            tenant = resolve_tenant(request, services.settings)
        return Call(tenant, services)

    return resolve_call
