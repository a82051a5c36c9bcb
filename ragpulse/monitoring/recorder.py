"""Turn stored trace results and judge calls into metric increments and rolling-window counts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ragpulse.config.prices import call_cost
from ragpulse.store.atomic import WriteQueue
from ragpulse.model.results import Pipeline, Security, TraceResult, judged_by_rule
from ragpulse.model.environment import environment_of
from ragpulse.model.scores import GenerationScores
from ragpulse.model.turns import turn_bucket
from ragpulse.model.trace import Trace
from ragpulse.metrics.registry import GENERATION
from ragpulse.monitoring import catalog as m
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.monitoring.rolling import HALLUCINATION_RATE, queue_bucket, queue_received


def count_result(batch: MetricsBatch, tenant: str, result: TraceResult) -> None:
    """Metric increments for one newly stored trace result of `tenant`."""
    app = batch.per_app(tenant, result.app, result.environment)
    if result.sampled is not None:
        batch.inc(m.TRACES_SAMPLED if result.sampled else m.TRACES_NOT_SAMPLED, app)
    for check in result.checks:
        batch.inc(m.CHECKS, {**app, "check": check})
    for part in result.judge_input_truncated:
        batch.inc(m.JUDGE_INPUT_TRUNCATED, {**app, "part": part})
    if result.status == "judge_error":
        batch.inc(m.JUDGE_ERRORS, app)
    if result.security is not None:
        count_security(batch, app, result.security, result.judge or "unknown")
    if result.attribution is not None:
        batch.inc(m.ATTRIBUTION, {**app, "stage": result.attribution.stage})
    if result.pipeline is not None:
        count_pipeline(batch, app, result.pipeline)
    g = result.generation
    if g is None:
        return
    labels = {**app, "judge": result.judge or "unknown"}
    batch.inc(m.TRACES_JUDGED, labels)
    rule = judged_by_rule(result.sample_reason)
    if rule is not None:   # picked for looking bad: out of the production rates (the uniform sample's)
        batch.inc(m.JUDGED_BY_RULE, {**app, "rule": rule})
        if HALLUCINATION_RATE.per_trace(result):
            batch.inc(m.HALLUCINATED_BY_RULE, {**app, "rule": rule})
        return
    for verdict, count in (("supported", g.supported), ("unsupported", g.unsupported),
                           ("contradicted", g.contradicted)):
        if count:
            batch.inc(m.CLAIMS, {**app, "verdict": verdict}, count)
    if g.abstained:
        batch.inc(m.ABSTENTIONS, app)
    if g.unanswerable:
        batch.inc(m.UNANSWERABLE, labels)
    if result.session_id is not None:
        batch.inc(m.SESSION_TURNS, {**app, "turn": turn_bucket(result.turn), "outcome": turn_outcome(g)})
    count_registered(batch, result, labels)


def turn_outcome(g: GenerationScores) -> str:
    """The `outcome` label of a judged turn: hallucinated or grounded when it made claims (hallucination_rate's
    population), else abstained or no_claims."""
    if g.claims:
        return "hallucinated" if g.hallucinated else "grounded"
    return "abstained" if g.abstained else "no_claims"


def count_security(batch: MetricsBatch, app: dict[str, str], security: Security, judge: str) -> None:
    """Each security check's population and findings (the rates' numerators and denominators); whether an answer
    followed an injection by the `judge` that said so (the offline heuristic's never page)."""
    if security.acl_leak is not None:
        batch.inc(m.SECURITY_CHECKED, {**app, "check": "acl"})
        if security.acl_leak:
            batch.inc(m.ACL_LEAKS, app)
    if security.injection_checked:
        batch.inc(m.SECURITY_CHECKED, {**app, "check": "injection"})
        if security.injection_docs:
            batch.inc(m.INJECTION_DOCS, app)
    if security.injection_followed is not None:
        judged = {**app, "judge": judge}
        batch.inc(m.INJECTION_JUDGED, judged)
        if security.injection_followed:
            batch.inc(m.INJECTION_FOLLOWED, judged)
    if security.pii_checked:
        batch.inc(m.SECURITY_CHECKED, {**app, "check": "pii"})
        for kind in security.pii:
            batch.inc(m.PII_ANSWERS, {**app, "kind": kind})
    if security.credentials_checked:
        batch.inc(m.SECURITY_CHECKED, {**app, "check": "credentials"})
        for kind in security.credentials:
            batch.inc(m.CREDENTIAL_ANSWERS, {**app, "credential": kind})
    for check, reason in security.skipped.items():
        batch.inc(m.SECURITY_SKIPPED, {**app, "check": check, "reason": reason})
    if security.stale_checked:
        batch.inc(m.SECURITY_CHECKED, {**app, "check": "stale"})
        if security.stale_docs:
            batch.inc(m.STALE_TRACES, app)


def count_pipeline(batch: MetricsBatch, app: dict[str, str], pipeline: Pipeline) -> None:
    """The app's own stage latencies, cost and context size."""
    for stage, ms in pipeline.latency_ms.items():
        batch.observe(m.PIPELINE_LATENCY, {**app, "stage": stage}, ms / 1000)
    if pipeline.cost_usd is not None:
        batch.observe(m.PIPELINE_COST, app, pipeline.cost_usd)
    if pipeline.context_tokens:
        batch.observe(m.CONTEXT_TOKENS, app, pipeline.context_tokens)


def count_registered(batch: MetricsBatch, result: TraceResult, labels: dict[str, str]) -> None:
    """Every registry metric with a Prometheus family: a histogram observes the per-trace value, a counter adds it;
    a population counter counts the trace once when it is in the metric's population."""
    for metric in GENERATION:
        value = metric.per_trace(result)
        if value is None:
            continue
        if metric.population is not None:
            batch.inc(metric.population, {name: labels[name] for name in metric.population.labels})
        family = metric.prometheus
        if family is None:
            continue
        series = {name: labels[name] for name in family.labels}
        if family.kind == "histogram":
            batch.observe(family, series, value)
        else:
            batch.inc(family, series, value)


def queue_result_counts(pipe: WriteQueue, apps: frozenset[str], tenants: frozenset[str], tenant: str,
                        result: TraceResult) -> None:
    """Queue the writes counting one newly stored result (shared metrics, its app's rolling window) onto `pipe`;
    Results.record applies them in the same atomic step as the result itself, so a result is counted exactly once.
    `apps` and `tenants` are the configured ones, which get labels of their own (others are `other`)."""
    batch = MetricsBatch(apps, tenants)
    count_result(batch, tenant, result)
    batch.queue_onto(pipe)
    queue_bucket(pipe, tenant, result)


def queue_received_counts(pipe: WriteQueue, apps: frozenset[str], tenants: frozenset[str], tenant: str,
                          traces: Sequence[Trace]) -> None:
    """Queue the writes counting traces the API accepted, per app and environment: ragpulse_traces_received_total and
    `received` in the app's minute bucket of that environment (online posts and batches alike)."""
    received = MetricsBatch(apps, tenants)
    per_app = Counter((trace.app, environment_of(trace.environment)) for trace in traces)
    for (app, environment), count in per_app.items():
        received.inc(m.TRACES_RECEIVED, received.per_app(tenant, app, environment), count)
        queue_received(pipe, tenant, app, environment, count)
    received.queue_onto(pipe)


def count_request(batch: MetricsBatch, prices: dict[str, tuple[float, float]], model: str, status: str,
                  latency_seconds: float, input_tokens: int, output_tokens: int, *, cache_read_input_tokens: int = 0,
                  cache_creation_input_tokens: int = 0, delivery: str = "interactive") -> float:
    """Metric increments for one provider request (outcome, latency; tokens and cost when ok, at the price of its
    delivery); returns its cost."""
    labels = {"model": model}
    batch.inc(m.JUDGE_REQUESTS, {**labels, "status": status})
    batch.observe(m.JUDGE_LATENCY, labels, latency_seconds)
    if status != "ok":
        return 0.0
    tokens = {"input": input_tokens, "output": output_tokens, "cache_read": cache_read_input_tokens,
              "cache_write": cache_creation_input_tokens}
    for direction, count in tokens.items():
        batch.inc(m.JUDGE_TOKENS, {**labels, "direction": direction}, count)
    cost = call_cost(prices, model, input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens,
                     delivery)
    batch.inc(m.JUDGE_COST, labels, cost)
    return cost


class CallMetrics:
    """Judge request metrics: outcome, latency, tokens, cost and rate-limit waits, counted in memory until `take`
    hands them over to be written (a chunk run writes them every few tenths of a second, not once per call)."""

    def __init__(self, prices: dict[str, tuple[float, float]]) -> None:
        self.prices = prices
        self.counted = MetricsBatch(())

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int, *,
                cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0,
                delivery: str = "interactive") -> float:
        """Count one provider request (prompt-cache reads and writes are token directions of their own); returns its
        cost."""
        return count_request(self.counted, self.prices, model, status, latency_seconds, input_tokens, output_tokens,
                             cache_read_input_tokens=cache_read_input_tokens,
                             cache_creation_input_tokens=cache_creation_input_tokens, delivery=delivery)

    def waited(self, model: str, seconds: float) -> None:
        """Count time spent waiting for the shared rate limit (a call that did not wait counts nothing)."""
        if seconds > 0:
            self.counted.inc(m.RATELIMIT_WAIT, {"model": model}, seconds)

    def take(self) -> MetricsBatch:
        """The increments counted so far, for the caller to write (MetricsBatch.queue_onto); counting starts afresh."""
        taken, self.counted = self.counted, MetricsBatch(())
        return taken
