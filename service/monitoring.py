"""Online monitoring endpoints: sampling policy per app, rolling monitor, and the RQ gauges of /metrics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

import msgspec
import redis
from litestar import Controller, Response, delete, get, put, route
from litestar.enums import HttpMethod
from litestar.params import Parameter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from rq import Worker

from dispatch.queues import queue_named
from ragpulse.config.defaults import MONITORED_ENVIRONMENT
from ragpulse.exceptions import InvalidParameter
from ragpulse.intake.decode import decode_body
from ragpulse.monitoring.catalog import (
    GAUGES, JUDGE_CONFIGURED, ONLINE_BACKLOG, ONLINE_LAG, OTLP_HANDOVER_LAG, QUEUE_DEPTH, WORKERS,
)
from ragpulse.judges import kinds
from ragpulse.qualification.notes import qualification_note
from ragpulse.qualification.store import Qualifications
from ragpulse.online.post import stream_key
from ragpulse.online.stream import backlog
from ragpulse.otlp.buffer import handover_lag
from ragpulse.model.prometheus import MetricDef
from ragpulse.model.environment import ENVIRONMENTS
from ragpulse.model.trace import APP_NAME_PATTERN
from ragpulse.monitoring.sampling import PolicyInForce, PolicyUpdate
from ragpulse.monitoring.rolling import WINDOWS, monitor_view, window_totals
from ragpulse.config.settings import Settings
from service.context import Call, Services

AppName = Annotated[str, Parameter(pattern=APP_NAME_PATTERN, description="RAG application name.")]


class AppPolicyController(Controller):
    """Sampling policy of one app: the judge sample rate and the always-judge rules."""

    path = "/v1/apps/{app:str}/policy"
    tags = ["monitoring"]

    @get("/", sync_to_thread=True, summary="The app's sampling policy in force")
    def read(self, app: AppName, call: Call) -> PolicyInForce:
        """The policy in force: the stored one, or the configured default rate (RAGPULSE_SAMPLE_RATE) with the
        built-in rules. Every always-judge rule is listed, the ones on by default included, and `sources` says where
        each value comes from (`stored`, `RAGPULSE_SAMPLE_RATE` or `default`)."""
        return call.services.policies.in_force(call.tenant, app)

    @put("/", sync_to_thread=True, summary="Set the app's sampling policy")
    def write(self, app: AppName, body: bytes, call: Call) -> PolicyInForce:
        """Replace the policy (`{sample_rate, always_judge}`; rules left out keep their built-in default) and answer
        the policy now in force, as GET does. A GET answer can be PUT back as it is: its `app`, `stored` and `sources`
        describe the policy and are ignored. Sampling is by a hash of trace_id, so a retried post is sampled the
        same way."""
        call.services.policies.put(call.tenant, app, decode_body(body, PolicyUpdate).policy())
        return call.services.policies.in_force(call.tenant, app)

    @delete("/", status_code=200, sync_to_thread=True, summary="Drop the app's stored sampling policy")
    def remove(self, app: AppName, call: Call) -> PolicyInForce:
        """Drop the stored policy, freeing its place under RAGPULSE_MAX_APPS_PER_TENANT, and answer the policy now in
        force (the default), as GET does. An app with no stored policy is answered the same way."""
        call.services.policies.delete(call.tenant, app)
        return call.services.policies.in_force(call.tenant, app)

    @route("/", http_method=HttpMethod.OPTIONS, include_in_schema=False, sync_to_thread=False)
    def options(self) -> Response[None]:
        """Litestar's automatic OPTIONS answer for a path served by two handlers of one controller lists only the
        first handler's methods (`GET, OPTIONS`); this one lists them all."""
        return Response(None, status_code=204, headers={"Allow": "DELETE, GET, OPTIONS, PUT"})


class MonitorController(Controller):
    """Rolling quality of an app's judged production traces."""

    path = "/v1/monitor"
    tags = ["monitoring"]

    @get("/{app:str}", sync_to_thread=True, summary="Rolling hallucination rate and friends")
    def monitor(self, app: AppName, call: Call, window: Annotated[str, Parameter(
            max_length=8, description=f"The window: {', '.join(WINDOWS)}.",
            schema_extra={"enum": list(WINDOWS)})] = "1h",   # checked below, to name the allowed values
            environment: Annotated[str, Parameter(
                max_length=16, description=(
                    "Whose traces to count: production (the default, what the alerts read), staging or evaluation "
                    "(batches unless their options say otherwise). Each environment has windows of its own."),
                schema_extra={"enum": list(ENVIRONMENTS)})] = MONITORED_ENVIRONMENT) -> dict:
        """Judged traces, hallucination rate (Wilson 95%), unanswerable hallucination rate, mean faithfulness,
        abstention rate, judge error rate, and the sample rate in force, over the window; `corrected`: each
        hallucination rate corrected for the online judge's measured error (from the app's human labels; a status
        instead of a number below 30 labels of the estimation sample), `judge_agreement`, and which `judge` it is.

        hallucination_rate is the report's definition: hallucinated among judged traces that made claims (`answered`,
        its n); abstentions and claim-less answers are out. Prometheus computes the same rate as
        ragpulse_traces_hallucinated_total / ragpulse_traces_answered_total.

        Production traces only, unless `environment` names another: evaluation runs (batches, by default) never move
        this view, as they never move the production series or the alerts."""
        if window not in WINDOWS:
            allowed = ", ".join(WINDOWS)
            raise InvalidParameter(f"window {window!r} is not one of {allowed}",
                                   [{"path": "query.window", "message": f"use one of {allowed}"}])
        if environment not in ENVIRONMENTS:
            allowed = ", ".join(ENVIRONMENTS)
            raise InvalidParameter(f"environment {environment!r} is not one of {allowed}",
                                   [{"path": "query.environment", "message": f"use one of {allowed}"}])
        return monitor_window(call.services, call.tenant, app, window, environment)


def monitor_window(services: Services, tenant: str, app: str, window: str,
                   environment: str = MONITORED_ENVIRONMENT) -> dict:
    """GET /v1/monitor/{app}?window=&environment= for one of WINDOWS: the rolling view of one environment,
    judge-corrected (also the web UI's app page, production, one per window)."""
    totals = window_totals(services.store.redis, tenant, app, WINDOWS[window], environment=environment)
    policy = services.policies.get(tenant, app)
    view = monitor_view(totals, app, window, policy.sample_rate, environment)
    settings = services.settings
    judge = policy.judge or settings.default_judge
    view["not_judged"] = None if kinds.judges_traces(judge) else kinds.NOT_JUDGED
    view["qualification"] = None if not kinds.judges_traces(judge) else msgspec.to_builtins(qualification_note(
        Qualifications(services.store.redis, settings.result_ttl_seconds), tenant, judge,
        kinds.model_for(judge, settings), kinds.current_prompt_versions().get(judge)))
    return services.reviews.correct_monitor(tenant, app, view, judge)


class QueueCollector(Collector):
    """Queue depth per priority queue, live RQ workers, the online stream's backlog and lag, and the OTLP hand-over's
    lag, read from Redis at scrape time."""

    def __init__(self, client: redis.Redis, settings: Settings) -> None:
        self.client = client
        self.queues = {label: queue_named(name, client)
                       for label, name in zip(("online", "batch"), settings.queues, strict=True)}
        self.online_stream = stream_key(settings)
        self.queue_prefix = settings.queue_prefix
        self.settings = settings

    def describe(self) -> Iterator[Metric]:
        """Declare the gauges without touching Redis."""
        for metric in GAUGES:
            yield _gauge(metric)

    def collect(self) -> Iterator[Metric]:
        """Read the queue lengths and the worker registry; with Redis down both gauges are left out."""
        yield self._judge_configured()
        try:
            yield from self._gauges()
        except redis.RedisError:
            return

    def _gauges(self) -> Iterator[Metric]:
        depth = _gauge(QUEUE_DEPTH)
        for label, queue in self.queues.items():
            depth.add_metric([label], queue.count)
        yield depth
        workers = _gauge(WORKERS)
        workers.add_metric([], Worker.count(connection=self.client, queue=self.queues["batch"]))
        yield workers
        waiting = backlog(self.client, self.online_stream)
        lag, posts = _gauge(ONLINE_LAG), _gauge(ONLINE_BACKLOG)
        lag.add_metric(["online"], waiting.oldest_age_seconds)
        posts.add_metric(["online"], waiting.posts)
        yield lag
        yield posts
        otlp = _gauge(OTLP_HANDOVER_LAG)
        otlp.add_metric([], handover_lag(self.client, self.queue_prefix))
        yield otlp


    def _judge_configured(self) -> Metric:
        """Whether the default judge judges with an LLM: 0 says the production rates are not judged at all."""
        name = self.settings.default_judge
        heuristic = kinds.is_heuristic(name)
        measured = kinds.judges_traces(name) and not heuristic and kinds.unconfigured(name, self.settings) is None
        gauge = _gauge(JUDGE_CONFIGURED)
        gauge.add_metric([name, "true" if heuristic else "false"], 1 if measured else 0)
        return gauge


def _gauge(metric: MetricDef) -> GaugeMetricFamily:
    return GaugeMetricFamily(metric.name, metric.help, labels=metric.labels)

