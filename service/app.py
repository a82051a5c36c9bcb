"""The application factory: `create_app(settings, redis=None)`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import redis
from litestar import Litestar
from litestar.di import Provide
from litestar.logging import LoggingConfig
from litestar.openapi import OpenAPIConfig
from prometheus_client import CollectorRegistry
from redis.asyncio import Redis as AsyncRedis

import ragpulse
from dispatch.chunks import ChunkEnqueuer
from ragpulse.config import defaults
from ragpulse.judges import kinds
from ragpulse.labels.desk import ReviewDesk
from ragpulse.store.atomic import GroupCommitter
from ragpulse.monitoring.collector import RedisMetricsCollector
from ragpulse.monitoring.policy_store import PolicyCache, PolicyStore
from ragpulse.otlp.buffer import BufferLimits, SpanBuffer
from ragpulse.otlp.handover import Handover
from ragpulse.config.settings import Settings
from ragpulse.store import Store
from ragpulse.store.connection import reconnect_once
from ragpulse.store.datasets import DatasetLimits, DatasetStore
from ragpulse.store.review_sessions import ReviewSessions
from ragpulse.monitoring.api_metrics import ApiMetrics
from service.batches import BatchController
from service.body_budget import BodyBudget, body_budget
from service.body_deadline import body_deadline
from service.calibrations import CalibrationController
from service.context import Services, call_resolver
from service.datasets import DatasetController
from service.docs import render_plugins
from service.errors import exception_handlers
from service.generation import GenerationController
from service.guard import request_guard
from service.health import healthz, metrics, readyz
from service.jobs import JobController
from service.job_list import list_jobs
from service.labels import LabelController, ReviewController
from service.monitoring import AppPolicyController, MonitorController, QueueCollector
from service.otlp import otlp_traces
from service.pages import PagesController
from service.qualification import QualificationController
from service.review import ReviewPageController
from service.review_auth import review_resolver
from service.review_login import ReviewLoginController
from service.review_metrics import AgreementCollector
from service.sessions import SessionController
from service.traces import TraceController
from service.openapi import document

log = logging.getLogger("ragpulse.api")


def redis_client(
    settings: Settings, client_class: type[redis.Redis | AsyncRedis] = redis.Redis,
    socket_timeout: float = defaults.REDIS_SOCKET_TIMEOUT,
) -> redis.Redis | AsyncRedis:
    """A pooled Redis client with short timeouts, so an outage is a quick 503 rather than a hung request, that
    reconnects once when a pooled connection was dropped (Redis restarted), so that request still succeeds.

    `client_class=AsyncRedis` gives the event loop's client, with the same settings.
    """
    return client_class.from_url(
        settings.redis_url, socket_timeout=socket_timeout,
        socket_connect_timeout=defaults.REDIS_SOCKET_TIMEOUT, health_check_interval=30,
        retry=reconnect_once(asyncio=client_class is AsyncRedis),
    )


def create_app(
    settings: Settings, redis: redis.Redis | None = None, registry: CollectorRegistry | None = None
) -> Litestar:
    """Build the API. Pass `redis` or `registry` to share a client or read metrics in tests."""
    settings.check_safe_to_serve()
    owns_client = redis is None
    client = redis if redis is not None else redis_client(settings)
    store = Store(client, settings.result_ttl_seconds)
    api_metrics = ApiMetrics(registry or CollectorRegistry())
    scrape_client = redis_client(settings, socket_timeout=defaults.SCRAPE_REDIS_TIMEOUT)  # /metrics: fail fast
    api_metrics.registry.register(RedisMetricsCollector(scrape_client, settings.apps, kinds.models(settings),
                                                              settings.tenants))
    api_metrics.registry.register(QueueCollector(scrape_client, settings))
    api_metrics.registry.register(AgreementCollector(scrape_client, settings))
    policies = PolicyStore(client, settings.default_sample_rate, settings.max_apps_per_tenant,
                           settings.review_sample_rate)
    loop_client = redis_client(settings, AsyncRedis)

    @contextlib.asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        if settings.open_access:
            log.warning("no API keys configured: serving OPEN on loopback %s, every caller is tenant 'default'",
                        settings.host)
        if problem := kinds.default_judge_problem(settings):
            log.warning("%s", problem)
        stop = asyncio.Event()
        handover = asyncio.create_task(
            Handover(settings, services.otlp_buffer, services.committer, services.online_policies).run(stop))
        try:
            yield
        finally:
            stop.set()
            handover.cancel()
            await asyncio.wait([handover], timeout=defaults.SHUTDOWN_TASK_SECONDS)  # never hold the exit up
            await loop_client.aclose()
            scrape_client.close()
            if owns_client:
                client.close()

    services = Services(settings=settings, store=store, api_metrics=api_metrics, policies=policies,
                        committer=GroupCommitter(loop_client), enqueuer=ChunkEnqueuer(client, settings),
                        online_policies=PolicyCache(loop_client, settings.default_sample_rate),
                        reviews=ReviewDesk.open(store, settings),
                        otlp_buffer=SpanBuffer(loop_client, settings.queue_prefix, BufferLimits(
                            settings.otlp_settle_seconds, settings.otlp_max_wait_seconds,
                            settings.otlp_max_spans_per_trace, settings.otlp_max_trace_bytes,
                            settings.online_result_ttl_seconds)),
                        review_sessions=ReviewSessions(client, settings.review_session_ttl_seconds,
                                                       settings.review_max_sessions),
                        datasets=DatasetStore(client, DatasetLimits.from_settings(settings)))
    app = Litestar(
        route_handlers=[BatchController, TraceController, SessionController, otlp_traces, list_jobs, JobController, CalibrationController,
                        LabelController, ReviewController, DatasetController, GenerationController, QualificationController,
                        AppPolicyController, MonitorController,
                        ReviewLoginController, ReviewPageController, PagesController, healthz, readyz, metrics],
        dependencies={
            "services": Provide(lambda: services, sync_to_thread=False, use_cache=True),
            "call": Provide(call_resolver(services), sync_to_thread=False),
            "review": Provide(review_resolver(services), sync_to_thread=True),
        },
        exception_handlers=exception_handlers(api_metrics),
        before_request=request_guard(services),
        request_max_body_size=settings.max_body_bytes,
        middleware=[body_budget(BodyBudget(settings.max_inflight_body_bytes)),
                    body_deadline(settings.body_read_timeout_seconds)],
        lifespan=[lifespan],
        openapi_config=OpenAPIConfig(title="ragpulse", version=ragpulse.__version__, path="/schema",
                                     render_plugins=render_plugins()),
        # Litestar's own default format (`WARNING - time - name - module - message`) would replace ours on the root
        # logger: `ragpulse up` printed two formats.
        logging_config=LoggingConfig(formatters={"standard": {"format": defaults.LOG_FORMAT}}),
    )
    app.state.services = services
    document(app)
    return app
