"""Sampling policy, cheap checks, Redis-aggregated metrics and rolling windows, on small exact cases."""

from __future__ import annotations

import uuid

import msgspec
import pytest
from prometheus_client import CollectorRegistry

from ragpulse.config import keys
from ragpulse.model.results import TraceResult
from ragpulse.model.scores import GenerationScores
from ragpulse.monitoring import catalog
from ragpulse.monitoring.collector import RedisMetricsCollector
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.monitoring.sampling import AlwaysJudge, SamplingPolicy, cheap_checks, hash_fraction, sampling_decision
from ragpulse.monitoring.rolling import FIELDS, bucket_increments, monitor_view, queue_bucket, window_totals
from ragpulse.model.trace import RetrievedDoc, Trace


def make_trace(trace_id: str = "t", **extra: object) -> Trace:
    return Trace(query="q", trace_id=trace_id, answer="a", retrieved_docs=[RetrievedDoc(id="d", score=0.2)], **extra)


def test_sampling_is_deterministic_and_near_the_rate() -> None:
    policy = SamplingPolicy(sample_rate=0.3)
    decisions = [sampling_decision(make_trace(f"id-{i}"), policy, [])[0] for i in range(2000)]
    again = [sampling_decision(make_trace(f"id-{i}"), policy, [])[0] for i in range(2000)]
    assert decisions == again                                   # same trace id, same decision
    assert 0.26 < sum(decisions) / 2000 < 0.34                  # 600 expected; sd ~ 20
    assert all(d == (hash_fraction(f"id-{i}") < 0.3) for i, d in enumerate(decisions))


def test_always_judge_rules_override_a_zero_rate() -> None:
    policy = SamplingPolicy(sample_rate=0.0, always_judge=AlwaysJudge(top_score_below=0.5))
    negative = make_trace(metadata={"feedback": "thumbs_down"})
    assert sampling_decision(negative, policy, cheap_checks(negative, policy)) == (True, "always:negative_feedback")
    miscited = make_trace(citations=["nope"])
    assert sampling_decision(miscited, policy, cheap_checks(miscited, policy))[1] == "always:cited_not_retrieved"
    low = make_trace()                                          # top score 0.2 < 0.5
    assert sampling_decision(low, policy, cheap_checks(low, policy)) == (True, "always:low_top_score")
    plain = make_trace(metadata={"feedback": "positive"})
    assert sampling_decision(plain, SamplingPolicy(sample_rate=0.0), []) == (False, "not_sampled")


def test_cheap_checks_flag_what_they_name() -> None:
    trace = Trace(query="q", answer=" ", citations=["x"], metadata={"feedback": -1})
    assert cheap_checks(trace, SamplingPolicy()) == ["cited_not_retrieved", "no_retrieved_docs", "empty_answer",
                                                     "negative_feedback"]


def scored(hallucinated: bool, faithfulness: float | None, unanswerable: bool = False, abstained: bool = False):
    return GenerationScores(
        faithfulness=faithfulness, hallucinated=hallucinated, abstained=abstained, answer_relevance=3,
        context_relevance=None, correctness=None, answerable_from_context=not unanswerable, unanswerable=unanswerable,
        unanswerable_hallucination=(not abstained) if unanswerable else None, claims=2, supported=1,
        unsupported=int(hallucinated), contradicted=0, cited=0, cited_not_retrieved=[], cited_without_support=[])


def result(app: str, generation: GenerationScores | None, status: str = "ok") -> TraceResult:
    return TraceResult(trace_id="t", index=0, status=status, app=app, labels="unlabelled", retrieval=None,
                       judge="anthropic" if generation else None, generation=generation, sampled=True)


def test_redis_metrics_reach_a_fresh_registry(redis_client) -> None:
    app, tenant = f"app-{uuid.uuid4().hex[:6]}", f"t-{uuid.uuid4().hex[:6]}"
    batch = MetricsBatch({app}, {tenant})
    batch.inc(catalog.TRACES_JUDGED, {**batch.per_app(tenant, app, "production"), "judge": "anthropic"}, 3)
    batch.inc(catalog.TRACES_JUDGED, {**batch.per_app(tenant, "unlisted", "production"), "judge": "anthropic"})
    batch.observe(catalog.FAITHFULNESS, batch.per_app(tenant, app, "production"), 0.35)
    batch.flush(redis_client)
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client))
    value = registry.get_sample_value
    mine = {"tenant": tenant, "app": app, "environment": "production"}
    assert value("ragpulse_traces_judged_total", {**mine, "judge": "anthropic"}) == 3
    assert value("ragpulse_traces_judged_total", {**mine, "app": "other", "judge": "anthropic"}) == 1
    assert value("ragpulse_faithfulness_bucket", {**mine, "le": "0.3"}) == 0
    assert value("ragpulse_faithfulness_bucket", {**mine, "le": "0.4"}) == 1      # cumulative from 0.4 up
    assert value("ragpulse_faithfulness_bucket", {**mine, "le": "+Inf"}) == 1
    assert value("ragpulse_faithfulness_sum", mine) == pytest.approx(0.35)
    assert 0 < redis_client.ttl(keys.metrics())


def test_traces_an_always_judge_rule_picked_are_judged_but_kept_out_of_the_production_rates(redis_client) -> None:
    """Negative feedback picks bad answers: counted in the hallucination rate, 95 forced traces at 40% beside 500
    sampled at 4% would read 9.7% and page. They are counted apart; the rates are the uniform sample's."""
    from ragpulse.monitoring.recorder import count_result

    policy = SamplingPolicy(sample_rate=0.5)
    sampled_ids = [f"id-{i}" for i in range(200) if hash_fraction(f"id-{i}") < 0.5]
    unsampled = next(f"id-{i}" for i in range(200) if hash_fraction(f"id-{i}") >= 0.5)
    complaint = {"feedback": "thumbs_down"}
    in_sample = make_trace(sampled_ids[0], metadata=complaint)
    assert sampling_decision(in_sample, policy, cheap_checks(in_sample, policy)) == (True, "sampled")  # before: always:
    outside = make_trace(unsampled, metadata=complaint)
    assert sampling_decision(outside, policy, cheap_checks(outside, policy)) == (True, "always:negative_feedback")

    tenant, app = f"t-{uuid.uuid4().hex[:6]}", f"rule-{uuid.uuid4().hex[:6]}"
    uniform = [result(app, scored(False, 1.0)) for _ in range(3)]
    forced = [result(app, scored(True, 0.5)) for _ in range(2)]
    for item in forced:
        item.sample_reason = "always:negative_feedback"
    batch = MetricsBatch({app}, {tenant})
    for item in uniform + forced:
        count_result(batch, tenant, item)
    batch.flush(redis_client)
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}))
    where = {"tenant": tenant, "app": app, "environment": "production"}
    value = registry.get_sample_value
    assert value("ragpulse_traces_answered_total", {**where, "judge": "anthropic"}) == 3
    assert value("ragpulse_traces_hallucinated_total", {**where, "judge": "anthropic"}) == 0
    assert value("ragpulse_traces_judged_total", {**where, "judge": "anthropic"}) == 5
    assert value("ragpulse_traces_judged_by_rule_total", {**where, "rule": "negative_feedback"}) == 2
    assert value("ragpulse_traces_hallucinated_by_rule_total", {**where, "rule": "negative_feedback"}) == 2
    totals: dict[str, float] = {}
    for item in uniform + forced:
        for name, add in bucket_increments(item).items():
            totals[name] = totals.get(name, 0.0) + add
    view = monitor_view({**dict.fromkeys(FIELDS, 0.0), **totals}, app, "5m", 0.5)
    assert view["judged"] == 5 and view["judged_by_rule"] == 2 and view["answered"] == 3
    assert view["hallucination_rate"]["rate"] == 0.0 and view["abstention_rate"]["n"] == 3


def test_a_configured_tenants_security_series_start_at_zero_before_it_posts_anything(redis_client) -> None:
    """A new tenant's first trace and first leak are counted within one scrape interval: its series must already be
    exposed at 0, or increase() never sees that first leak."""
    fresh, app = f"new-{uuid.uuid4().hex[:6]}", f"kb-{uuid.uuid4().hex[:6]}"
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}, tenants={fresh}))
    where = {"tenant": fresh, "app": app, "environment": "production"}
    assert registry.get_sample_value("ragpulse_security_acl_leaks_total", where) == 0      # before: absent
    assert registry.get_sample_value("ragpulse_security_pii_answers_total", {**where, "kind": "iban"}) == 0
    assert registry.get_sample_value("ragpulse_security_injection_followed_total", {**where, "judge": "anthropic"}) == 0
    unconfigured = RedisMetricsCollector(redis_client, apps={app})
    assert all(s.labels.get("tenant") != fresh for family in unconfigured.collect() for s in family.samples)


def test_two_tenants_naming_an_app_alike_get_separate_series(redis_client) -> None:
    """Tenant t2 posting as app `shop` moves none of t1's `shop` series (which t1's alerts watch)."""
    from ragpulse.monitoring.recorder import count_result

    t1, t2, stranger = (f"{name}-{uuid.uuid4().hex[:6]}" for name in ("t1", "t2", "gone"))
    app = f"shop-{uuid.uuid4().hex[:6]}"
    batch = MetricsBatch({app}, {t1, t2})
    count_result(batch, t1, result(app, scored(False, 1.0)))
    for _ in range(3):
        count_result(batch, t2, result(app, scored(True, 0.5)))
    count_result(batch, stranger, result(app, scored(True, 0.5)))      # no longer configured: `other`
    batch.flush(redis_client)
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}))
    value = registry.get_sample_value
    labels = lambda tenant: {"tenant": tenant, "app": app, "environment": "production", "judge": "anthropic"}  # noqa: E731
    assert value("ragpulse_traces_hallucinated_total", labels(t1)) == 0          # t1's series, at 0
    assert value("ragpulse_traces_answered_total", labels(t1)) == 1
    assert value("ragpulse_traces_hallucinated_total", labels(t2)) == 3
    assert value("ragpulse_traces_answered_total", labels(t2)) == 3
    assert value("ragpulse_traces_hallucinated_total", labels("other")) >= 1
    # Security series start at 0 too, PII's per kind: the alerts' increase() must see a first leak.
    assert value("ragpulse_security_acl_leaks_total", {"tenant": t1, "app": app, "environment": "production"}) == 0
    assert value("ragpulse_security_injection_followed_total", labels(t1)) == 0                  # per judge
    for kind in ("email", "phone", "payment_card", "iban", "us_ssn"):
        assert value("ragpulse_security_pii_answers_total", {"tenant": t1, "app": app, "environment": "production", "kind": kind}) == 0
    assert value("ragpulse_traces_hallucinated_total", labels(stranger)) is None
    assert value("ragpulse_faithfulness_count", {"tenant": t2, "app": app, "environment": "production"}) == 3
    assert value("ragpulse_claims_total", {"tenant": t1, "app": app, "environment": "production", "verdict": "unsupported"}) == 0


def test_unanswerable_counts_carry_the_judge_and_older_unlabelled_fields_do_not_break_the_scrape(redis_client) -> None:
    """The unanswerable hallucination rate's two counters are labelled by judge, as the hallucination rate's are, so
    the alert rules can leave the heuristic out. Fields stored before `judge` existed are left out of /metrics."""
    from ragpulse.monitoring.counters import field
    from ragpulse.monitoring.recorder import count_result

    tenant, app = f"t-{uuid.uuid4().hex[:6]}", f"u-{uuid.uuid4().hex[:6]}"
    batch = MetricsBatch({app}, {tenant})
    guess = scored(True, 0.5, unanswerable=True)                        # did not abstain: a hallucination
    count_result(batch, tenant, result(app, guess))
    count_result(batch, tenant, msgspec.structs.replace(result(app, guess), judge="local"))
    count_result(batch, tenant, msgspec.structs.replace(result(app, scored(False, None, unanswerable=True,
                                                                           abstained=True)), judge="local"))
    batch.flush(redis_client)
    for name in (catalog.UNANSWERABLE.name, catalog.UNANSWERABLE_HALLUCINATIONS.name):   # as written before
        redis_client.hincrbyfloat(keys.metrics(), field(name, "total", {"tenant": tenant, "app": app}), 7)
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}))
    value = lambda name, judge: registry.get_sample_value(  # noqa: E731
        name, {"tenant": tenant, "app": app, "environment": "production", "judge": judge})
    assert value("ragpulse_unanswerable_traces_total", "anthropic") == 1
    assert value("ragpulse_unanswerable_hallucinations_total", "anthropic") == 1
    assert value("ragpulse_unanswerable_traces_total", "local") == 2
    assert value("ragpulse_unanswerable_hallucinations_total", "local") == 1
    assert registry.get_sample_value("ragpulse_unanswerable_traces_total", {"tenant": tenant, "app": app}) is None


def test_every_per_app_family_is_labelled_by_tenant_and_app() -> None:
    """The quality families (declared in the metric registry) and the catalog's own per-app ones alike."""
    from ragpulse.metrics.registry import prometheus_families

    per_app = [m for m in catalog.ALL if "app" in m.labels]
    assert {m.name for m in prometheus_families()} <= {m.name for m in per_app}
    assert len(per_app) >= 13
    for metric in per_app:
        assert metric.labels[:2] == ("tenant", "app"), metric.name
    for metric in catalog.ALL:
        assert "tenant" not in metric.labels or "app" in metric.labels, metric.name


def test_rolling_window_rates_with_wilson_intervals(redis_client) -> None:
    tenant, app, now = f"t-{uuid.uuid4().hex[:6]}", "shop", 1_800_000_000.0
    results = [result(app, scored(True, 0.5)), result(app, scored(False, 1.0)), result(app, scored(False, 1.0)),
               result(app, scored(True, 0.0, unanswerable=True)), result(app, None, status="judge_error")]
    with redis_client.pipeline() as pipe:
        for r in results:
            queue_bucket(pipe, tenant, r, at=now)
        queue_bucket(pipe, tenant, result(app, scored(True, 0.0)), at=now - 600)   # ten minutes earlier
        pipe.execute()
    five = monitor_view(window_totals(redis_client, tenant, app, 5, now=now), app, "5m", 0.5)
    assert five["judged"] == 4 and five["hallucination_rate"]["rate"] == 0.5          # 2 of 4
    assert five["mean_faithfulness"] == pytest.approx(2.5 / 4)
    assert five["unanswerable_hallucination_rate"]["rate"] == 1.0
    assert five["judge_error_rate"]["rate"] == pytest.approx(1 / 5) and five["sample_rate"] == 0.5
    low, high = five["hallucination_rate"]["ci95"]
    assert low < 0.5 < high
    hour = monitor_view(window_totals(redis_client, tenant, app, 60, now=now), app, "1h", 0.5)
    assert hour["judged"] == 5 and hour["hallucination_rate"]["rate"] == 0.6           # 3 of 5
    empty = monitor_view(window_totals(redis_client, tenant, "quiet", 5, now=now), "quiet", "5m", 1.0)
    assert empty["hallucination_rate"] is None and empty["judged"] == 0                 # no data is not 0%


def test_bucket_increments_skip_unjudged_traces() -> None:
    assert bucket_increments(result("a", None)) == {"processed": 1, "sampled": 1}


def test_monitor_prometheus_and_report_share_one_hallucination_rate(redis_client) -> None:
    """Hallucinated among judged traces that made claims: an abstention is in none of the three denominators."""
    from ragpulse.model.trace import BatchOptions
    from ragpulse.monitoring.counters import read_samples
    from ragpulse.monitoring.recorder import count_result
    from ragpulse.reporting.build import build_report

    tenant, app, now = f"t-{uuid.uuid4().hex[:6]}", f"h-{uuid.uuid4().hex[:6]}", 1_800_000_000.0
    abstention = msgspec.structs.replace(scored(False, None, abstained=True), claims=0, supported=0)
    results = [result(app, scored(True, 0.5)), result(app, scored(False, 1.0)), result(app, scored(True, 0.0)),
               result(app, abstention), result(app, abstention)]
    report = build_report("job", BatchOptions(), results).generation.hallucination_rate
    assert (report.mean, report.n) == (2 / 3, 3)

    with redis_client.pipeline() as pipe:
        for r in results:
            queue_bucket(pipe, tenant, r, at=now)
        pipe.execute()
    view = monitor_view(window_totals(redis_client, tenant, app, 5, now=now), app, "5m", 1.0)
    assert view["judged"] == 5 and view["answered"] == 3
    assert view["hallucination_rate"]["rate"] == report.mean and view["hallucination_rate"]["n"] == report.n
    assert view["abstention_rate"]["rate"] == 2 / 5                     # abstentions stay a share of judged

    batch = MetricsBatch({app}, {tenant})
    for r in results:
        count_result(batch, tenant, r)
    batch.flush(redis_client)
    samples = {(name, labels.get("app")): value for name, rows in read_samples(redis_client).items()
               for _, labels, value in rows if labels.get("app") == app and labels.get("judge") == "anthropic"
               and labels.get("tenant") == tenant}
    hallucinated = samples[("ragpulse_traces_hallucinated", app)]
    answered = samples[(catalog.TRACES_ANSWERED.name, app)]
    assert (hallucinated, answered, samples[("ragpulse_traces_judged", app)]) == (2, 3, 5)
    assert hallucinated / answered == report.mean


def test_a_minute_of_abstentions_only_has_no_answered_traces(redis_client) -> None:
    """Such a minute is no bucket from before `answered` existed: its judged traces are not its denominator."""
    tenant, app, now = f"t-{uuid.uuid4().hex[:6]}", "shop", 1_800_000_000.0
    abstention = msgspec.structs.replace(scored(False, None, abstained=True), claims=0, supported=0)
    with redis_client.pipeline() as pipe:
        queue_bucket(pipe, tenant, result(app, scored(True, 0.5)), at=now - 60)         # the minute before
        for _ in range(3):
            queue_bucket(pipe, tenant, result(app, abstention), at=now)
        pipe.execute()
    view = monitor_view(window_totals(redis_client, tenant, app, 5, now=now), app, "5m", 1.0)
    assert view["judged"] == 4 and view["answered"] == 1
    assert view["hallucination_rate"]["rate"] == 1.0 and view["hallucination_rate"]["n"] == 1


def test_a_bucket_from_before_answered_keeps_its_old_denominator(redis_client) -> None:
    tenant, app, now = f"t-{uuid.uuid4().hex[:6]}", "shop", 1_800_000_000.0
    old = keys.monitor_bucket(tenant, app, int(now // 60) - 1)
    redis_client.hset(old, mapping={"judged": 4, "hallucinated": 2})      # written by the previous version
    with redis_client.pipeline() as pipe:
        queue_bucket(pipe, tenant, result(app, scored(True, 0.5)), at=now)
        pipe.execute()
    view = monitor_view(window_totals(redis_client, tenant, app, 5, now=now), app, "5m", 1.0)
    assert view["answered"] == 5 and view["hallucination_rate"]["rate"] == 3 / 5
