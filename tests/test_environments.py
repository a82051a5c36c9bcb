"""Environments (issue 26, part 6): eval runs are counted apart from production.

Unit cases pin down where a trace's environment comes from and where it is counted; the integration test evaluates
the README's examples three times against real Redis, the API and workers, and finds the app's production monitor
and production series exactly as they were, while the evaluation series moved by the traces evaluated.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid

import httpx
import msgspec
import pytest
from prometheus_client import CollectorRegistry

from dispatch.queues import pick_queue
from ragpulse.exceptions import InvalidBody
from ragpulse.intake.decode import decode_batch
from ragpulse.model.results import TraceResult
from ragpulse.model.scores import GenerationScores
from ragpulse.monitoring.collector import RedisMetricsCollector
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.monitoring.recorder import count_result, queue_received_counts
from ragpulse.monitoring.rolling import monitor_view, queue_bucket, window_totals
from ragpulse.model.trace import Trace
from tests.fake_anthropic import FakeAnthropic
from tests.support import ROOT, child_env

EXAMPLES = ROOT / "examples" / "acme_support_traces.jsonl"
"""The README walk-through's file: `ragpulse eval examples/acme_support_traces.jsonl` (app nimbus-support)."""
APP = "nimbus-support"


def batch(*traces: dict, **options: object) -> bytes:
    return json.dumps({"traces": list(traces), "options": options}).encode()


# -- where a trace's environment comes from -------------------------------------------------------------------------


def test_a_batch_is_an_evaluation_run_unless_it_says_otherwise() -> None:
    plain = decode_batch(batch({"query": "a"}, {"query": "b", "environment": "evaluation"}))
    assert plain.options.environment == "evaluation"
    assert [t.environment for t in plain.traces] == ["evaluation", "evaluation"]     # every trace takes the job's
    replay = decode_batch(batch({"query": "a"}, environment="production"))
    assert replay.options.environment == "production" and replay.traces[0].environment == "production"


@pytest.mark.parametrize(("environment", "sources", "queue"), [
    ("production", ["production", "production"], "online"),       # production traffic sent as a batch: sampled
    ("evaluation", ["production", "production"], "batch"),        # a replay of production traces as an eval set
    ("staging", ["production"], "batch"),
    ("production", ["production", "human"], "batch"),             # one labelled trace: an evaluation, judged whole
])
def test_the_default_queue_follows_the_environment(environment: str, sources: list[str], queue: str) -> None:
    decoded = decode_batch(batch(*({"query": "q", "source": s} for s in sources), environment=environment))
    assert pick_queue(decoded.traces, decoded.options) == queue


def test_a_trace_naming_another_environment_than_its_batch_is_refused_by_path() -> None:
    with pytest.raises(InvalidBody) as refused:
        decode_batch(batch({"query": "a"}, {"query": "b", "environment": "production"}, {"query": "c"},
                           {"query": "d", "environment": "staging"}))
    assert [e["path"] for e in refused.value.errors] == ["$.traces[1].environment", "$.traces[3].environment"]
    assert "'evaluation'" in refused.value.errors[0]["message"]


@pytest.mark.parametrize(("body", "path"), [
    (batch({"query": "a", "environment": "prod"}), "$.traces[0].environment"),
    (batch({"query": "a"}, environment="test"), "$.options.environment"),
    (batch({"query": "a"}, environment=None), "$.options.environment"),
])
def test_an_environment_outside_the_fixed_set_is_a_422_naming_its_path(body: bytes, path: str) -> None:
    with pytest.raises(InvalidBody) as refused:
        decode_batch(body)
    assert path in [e["path"] for e in refused.value.errors]


# -- where it is counted --------------------------------------------------------------------------------------------


def judged(app: str, environment: str, hallucinated: bool) -> TraceResult:
    scores = GenerationScores(
        faithfulness=0.0 if hallucinated else 1.0, hallucinated=hallucinated, abstained=False, answer_relevance=3,
        context_relevance=None, correctness=None, answerable_from_context=True, unanswerable=False,
        unanswerable_hallucination=None, claims=1, supported=int(not hallucinated), unsupported=int(hallucinated),
        contradicted=0, cited=0, cited_not_retrieved=[], cited_without_support=[])
    return TraceResult(trace_id="t", index=0, status="ok", app=app, environment=environment, labels="unlabelled",
                       retrieval=None, judge="anthropic", generation=scores, sampled=True)


def test_evaluation_results_have_series_of_their_own_and_production_ones_stay_at_zero(redis_client) -> None:
    tenant, app = f"t-{uuid.uuid4().hex[:6]}", f"env-{uuid.uuid4().hex[:6]}"
    batch_ = MetricsBatch({app}, {tenant})
    for _ in range(3):
        count_result(batch_, tenant, judged(app, "evaluation", hallucinated=True))
    count_result(batch_, tenant, judged(app, "staging", hallucinated=False))
    batch_.flush(redis_client)
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}))
    value = lambda name, environment: registry.get_sample_value(  # noqa: E731
        name, {"tenant": tenant, "app": app, "environment": environment, "judge": "anthropic"})
    assert value("ragpulse_traces_hallucinated_total", "evaluation") == 3
    assert value("ragpulse_traces_answered_total", "evaluation") == 3
    assert value("ragpulse_traces_answered_total", "staging") == 1
    assert value("ragpulse_traces_hallucinated_total", "production") == 0    # exposed at 0, as the alerts need
    assert value("ragpulse_traces_answered_total", "production") == 0
    # only production starts at 0: an environment nobody pages on gets series when it has counts
    other = f"env-{uuid.uuid4().hex[:6]}"
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app, other}))
    assert registry.get_sample_value("ragpulse_traces_answered_total", {
        "tenant": tenant, "app": other, "environment": "production", "judge": "anthropic"}) == 0
    assert registry.get_sample_value("ragpulse_traces_answered_total", {
        "tenant": tenant, "app": other, "environment": "evaluation", "judge": "anthropic"}) is None


def test_each_environment_has_rolling_windows_of_its_own(redis_client) -> None:
    tenant, app, now = f"t-{uuid.uuid4().hex[:6]}", "shop", 1_800_000_000.0
    with redis_client.pipeline() as pipe:
        queue_bucket(pipe, tenant, judged(app, "production", hallucinated=False), at=now)
        for _ in range(4):
            queue_bucket(pipe, tenant, judged(app, "evaluation", hallucinated=True), at=now)
        pipe.execute()
    production = monitor_view(window_totals(redis_client, tenant, app, 5, now=now), app, "5m", 1.0)
    assert production["environment"] == "production" and production["judged"] == 1
    assert production["hallucination_rate"]["rate"] == 0.0                      # 0 of 1: the eval run is not in it
    evaluation = monitor_view(window_totals(redis_client, tenant, app, 5, now=now, environment="evaluation"), app,
                              "5m", 1.0, "evaluation")
    assert evaluation["judged"] == 4 and evaluation["hallucination_rate"]["rate"] == 1.0


def test_received_counts_follow_each_traces_environment(redis_client) -> None:
    tenant, app = f"t-{uuid.uuid4().hex[:6]}", f"env-{uuid.uuid4().hex[:6]}"
    traces = [Trace(query="q", app=app, environment="evaluation") for _ in range(3)]
    traces += [Trace(query="q", app=app, environment="production"), Trace(query="q", app=app)]   # None: legacy
    with redis_client.pipeline() as pipe:
        queue_received_counts(pipe, frozenset({app}), frozenset({tenant}), tenant, traces)
        pipe.execute()
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}))
    received = lambda environment: registry.get_sample_value(  # noqa: E731
        "ragpulse_traces_received_total", {"tenant": tenant, "app": app, "environment": environment})
    assert (received("evaluation"), received("production")) == (3, 2)
    assert window_totals(redis_client, tenant, app, 5)["received"] == 2
    assert window_totals(redis_client, tenant, app, 5, environment="evaluation")["received"] == 3


def test_a_result_stored_before_environments_existed_reads_as_production() -> None:
    legacy = msgspec.msgpack.encode({"trace_id": "t", "index": 0, "status": "ok", "app": "a", "labels": "unlabelled",
                                     "retrieval": None})
    assert msgspec.msgpack.decode(legacy, type=TraceResult).environment == "production"


# -- the walk-through, three times ----------------------------------------------------------------------------------


def production_lines(metrics: str, tenant: str) -> list[str]:
    """Every per-app sample of `tenant` in production, as exposed."""
    return sorted(line for line in metrics.splitlines()
                  if f'tenant="{tenant}"' in line and 'environment="production"' in line)


def total(metrics: str, name: str, **labels: str) -> float:
    """The sum of the samples of `name` whose labels include `labels`."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()))


def monitors(http: httpx.Client, environment: str = "production") -> dict[str, dict]:
    return {window: http.get(f"/v1/monitor/{APP}", params={"window": window, "environment": environment}).json()
            for window in ("5m", "1h", "24h")}


def ragpulse_eval(url: str, key: str, *flags: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "eval", str(EXAMPLES), "--server", url,
                           "--api-key", key, *flags], capture_output=True, text=True, timeout=180, cwd=ROOT,
                          env=child_env("unused"))
    assert done.returncode == 0, done.stdout + done.stderr
    [job_id] = set(re.findall(r"\b[0-9a-f]{32}\b", done.stdout + done.stderr))
    return job_id


@pytest.mark.integration
def test_evaluating_the_examples_three_times_leaves_the_production_monitor_and_series_unchanged(
        cluster_factory) -> None:
    tenant, key = f"env{uuid.uuid4().hex[:6]}", f"key-{uuid.uuid4().hex}"
    examples = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_APPS=APP, RAGPULSE_API_KEYS=f"{tenant}:{key}")
        http = httpx.Client(base_url=cluster.url, timeout=60, headers={"Authorization": f"Bearer {key}"})
        # Production traffic first, as the app would send it: the monitor has something to keep.
        live = [{**t, "trace_id": f"live-{t['trace_id']}"} for t in examples[:12]]
        assert http.post("/v1/traces", json={"traces": live}).status_code == 202
        deadline = time.monotonic() + 60
        while monitors(http)["5m"]["traces_processed"] < len(live):
            assert time.monotonic() < deadline, "the production traces were not processed"
            time.sleep(0.2)
        before, metrics_before = monitors(http), cluster.http.get("/metrics").text
        assert before["5m"]["traces_processed"] == before["1h"]["judged"] == len(live)

        jobs = [ragpulse_eval(cluster.url, key) for _ in range(3)]

        after, metrics_after = monitors(http), cluster.http.get("/metrics").text
        evaluation = monitors(http, "evaluation")
        for job_id in jobs:
            assert http.get(f"/v1/jobs/{job_id}").json()["environment"] == "evaluation"
            assert http.get(f"/v1/jobs/{job_id}/report").json()["environment"] == "evaluation"
        items = http.get(f"/v1/jobs/{jobs[0]}/results", params={"limit": 100}).json()["items"]
        assert {item["environment"] for item in items} == {"evaluation"} and len(items) == len(examples)

        # A replay of production traffic says so, and is counted as production.
        replay = ragpulse_eval(cluster.url, key, "--environment", "production")
        replayed = monitors(http)
        http.close()
    assert after == before                                              # every field of every window
    assert production_lines(metrics_after, tenant) == production_lines(metrics_before, tenant)
    assert total(metrics_after, "ragpulse_traces_received_total", tenant=tenant, environment="evaluation") == \
        3 * len(examples)
    assert total(metrics_after, "ragpulse_traces_judged_total", tenant=tenant, environment="evaluation") == \
        3 * len(examples)
    assert evaluation["1h"]["traces_received"] == evaluation["1h"]["traces_processed"] == 3 * len(examples)
    assert evaluation["1h"]["environment"] == "evaluation" and evaluation["1h"]["judged"] == 3 * len(examples)
    assert replay not in jobs and replayed["1h"]["traces_received"] == len(live) + len(examples)
