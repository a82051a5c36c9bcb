"""Online monitoring over real HTTP and real workers: policies, sampling, /metrics across workers, the monitor."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from ragpulse.monitoring.catalog import AGREEMENT_GAUGES
from ragpulse.monitoring.sampling import hash_fraction
from tests.fake_anthropic import FakeAnthropic
from tests.support import wait_for_job

pytestmark = pytest.mark.integration


def production(app: str, n: int, tag: str, **extra: object) -> list[dict]:
    """Answers the fake judge finds in the context for even i, and invents for odd i."""
    return [{"trace_id": f"{tag}-{i}", "app": app, "source": "production", "query": f"q {i}",
             "answer": f"Fact {i} holds." if i % 2 == 0 else f"Invented {i} claim.",
             "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds."}], **extra} for i in range(n)]


def sample(metrics_text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in metrics_text.splitlines():
        match = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            return float(match.group(2))
    return 0.0


def test_policy_round_trip_and_validation(client: httpx.Client) -> None:
    app = f"shop-{uuid.uuid4().hex[:6]}"
    assert client.get(f"/v1/apps/{app}/policy").json()["sample_rate"] == 1.0
    written = client.put(f"/v1/apps/{app}/policy", json={"sample_rate": 0.25, "always_judge": {"top_score_below": 0.3}})
    assert written.status_code == 200
    policy = client.get(f"/v1/apps/{app}/policy").json()
    assert policy["sample_rate"] == 0.25 and policy["always_judge"]["top_score_below"] == 0.3
    bad = client.put(f"/v1/apps/{app}/policy", json={"sample_rate": 1.5})
    assert bad.status_code == 422 and bad.json()["errors"][0]["path"] == "$.sample_rate"


def test_policy_shows_the_rules_in_force_with_their_defaults_and_sources(client: httpx.Client) -> None:
    import msgspec

    from ragpulse.monitoring.sampling import AlwaysJudge

    rules = [f.name for f in msgspec.structs.fields(AlwaysJudge)]
    app = f"shop-{uuid.uuid4().hex[:6]}"
    fresh = client.get(f"/v1/apps/{app}/policy").json()
    assert fresh["always_judge"] == {"negative_feedback": True, "cited_not_retrieved": True, "top_score_below": None,
                                     "injection_docs": True}
    assert set(fresh["always_judge"]) == set(rules)                 # every rule, the ones on by default included
    assert fresh["stored"] is False and fresh["app"] == app and fresh["max_source_age_days"] is None
    assert fresh["sources"] == {"sample_rate": "RAGPULSE_SAMPLE_RATE", **{f"always_judge.{r}": "default" for r in rules},
                                "max_source_age_days": "default", "sample_by": "default",
                                "review_sample_rate": "RAGPULSE_REVIEW_SAMPLE_RATE", "judge": "RAGPULSE_JUDGE"}
    assert 0 <= fresh["review_sample_rate"] <= 1 and fresh["judge"] is None

    written = client.put(f"/v1/apps/{app}/policy", json={"sample_rate": 0.5, "always_judge": {"negative_feedback": False},
                                                          "max_source_age_days": 90, "review_sample_rate": 0.2})
    assert written.status_code == 200
    for policy in (written.json(), client.get(f"/v1/apps/{app}/policy").json()):
        assert policy["always_judge"] == {"negative_feedback": False, "cited_not_retrieved": True, "top_score_below": None,
                                          "injection_docs": True}
        assert policy["stored"] is True and policy["sample_rate"] == 0.5 and policy["max_source_age_days"] == 90
        assert policy["sources"] == {"sample_rate": "stored", "always_judge.negative_feedback": "stored",
                                     "always_judge.cited_not_retrieved": "default",
                                     "always_judge.top_score_below": "default",
                                     "always_judge.injection_docs": "default", "max_source_age_days": "stored",
                                     "sample_by": "default", "review_sample_rate": "stored", "judge": "RAGPULSE_JUDGE"}
        assert policy["review_sample_rate"] == 0.2


def test_production_traces_are_sampled_by_policy(client: httpx.Client) -> None:
    app = f"shop-{uuid.uuid4().hex[:6]}"
    client.put(f"/v1/apps/{app}/policy", json={"sample_rate": 0.5})
    traces = production(app, 40, app)
    traces[1]["metadata"] = {"feedback": "thumbs_down"}
    accepted = client.post("/v1/batches", json={"traces": traces, "options": {"environment": "production"}}).json()
    job = wait_for_job(client, accepted["job_id"])
    assert job["queue"] == "online"
    items = client.get(f"/v1/jobs/{accepted['job_id']}/results", params={"limit": 100}).json()["items"]
    for item in items:
        expected = hash_fraction(item["trace_id"]) < 0.5 or item["trace_id"] == f"{app}-1"
        assert item["sampled"] is expected, item["trace_id"]
        assert (item["generation"] is not None) is expected          # not sampled: counted, not judged
    in_sample = hash_fraction(f"{app}-1") < 0.5               # `sampled` says the uniform sample picked it
    assert next(i for i in items if i["trace_id"] == f"{app}-1")["sample_reason"] == \
        ("sampled" if in_sample else "always:negative_feedback")
    monitor = client.get(f"/v1/monitor/{app}", params={"window": "5m"}).json()
    assert monitor["judged"] == sum(i["sampled"] for i in items) and monitor["sample_rate"] == 0.5
    assert monitor["judged_by_rule"] == (0 if in_sample else 1)
    assert monitor["sampled"] + monitor["not_sampled"] == 40


def test_metrics_add_up_across_two_workers(cluster_factory) -> None:
    app = f"m{uuid.uuid4().hex[:6]}"
    with FakeAnthropic(latency=0.02) as fake:
        cluster = cluster_factory(fake, 2, RAGPULSE_APPS=app, RAGPULSE_CHUNK_SIZE="4")
        abstaining = [{**t, "trace_id": f"{app}-abstain-{i}", "answer": "I don't know."}
                      for i, t in enumerate(production(app, 8, app))]
        job_id = cluster.post(production(app, 40, app) + abstaining, queue="batch", environment="production")
        assert wait_for_job(cluster.http, job_id, timeout=120)["status"] == "finished"
        assert all("evaluate_chunk" in w.output() for w in cluster.workers)      # both workers took chunks
        text = cluster.http.get("/metrics").text
        mine = {"tenant": "default", "app": app, "environment": "production"}     # open access: tenant default
        assert sample(text, "ragpulse_traces_received_total", **mine) == 48
        assert sample(text, "ragpulse_traces_judged_total", **mine, judge="anthropic") == 48
        assert sample(text, "ragpulse_traces_answered_total", **mine, judge="anthropic") == 40   # abstentions out
        assert sample(text, "ragpulse_traces_hallucinated_total", **mine, judge="anthropic") == 20
        assert sample(text, "ragpulse_claims_total", **mine, verdict="unsupported") == 20
        assert sample(text, "ragpulse_faithfulness_count", **mine) == 40
        assert sample(text, "ragpulse_judge_requests_total", model="claude-sonnet-4-6", status="ok") >= 40
        assert 'ragpulse_queue_depth{queue="online"}' in text and "ragpulse_workers 2.0" in text
        monitor = cluster.http.get(f"/v1/monitor/{app}", params={"window": "1h"}).json()
        report = cluster.http.get(f"/v1/jobs/{job_id}/report").json()["generation"]["hallucination_rate"]
        assert monitor["judged"] == 48 and monitor["answered"] == 40
        assert monitor["hallucination_rate"]["rate"] == report["mean"] == 0.5      # one definition, one number
        assert monitor["hallucination_rate"]["n"] == report["n"] == 40


def test_two_tenants_naming_an_app_alike_get_separate_series(cluster_factory) -> None:
    """t2's traces of app `shop` leave t1's `shop` series (and so t1's alerts) alone, in the API's counts and the
    workers' alike."""
    app = f"shop{uuid.uuid4().hex[:6]}"
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_APPS=app, RAGPULSE_API_KEYS="t1:key-1,t2:key-2")
        clients = {tenant: httpx.Client(base_url=cluster.url, headers={"Authorization": f"Bearer key-{tenant[1]}"})
                   for tenant in ("t1", "t2")}
        posted = {}
        for tenant, n in (("t1", 4), ("t2", 10)):
            response = clients[tenant].post("/v1/batches", json={"traces": production(app, n, f"{app}-{tenant}"),
                                                                 "options": {"judge": "anthropic",
                                                                             "environment": "production"}})
            assert response.status_code == 202, response.text
            posted[tenant] = response.json()["job_id"]
        for tenant, job_id in posted.items():
            assert wait_for_job(clients[tenant], job_id)["status"] == "finished"
            clients[tenant].close()
        text = cluster.http.get("/metrics").text
    for tenant, n in (("t1", 4), ("t2", 10)):
        mine = {"tenant": tenant, "app": app, "environment": "production"}
        assert sample(text, "ragpulse_traces_received_total", **mine) == n
        assert sample(text, "ragpulse_traces_judged_total", **mine, judge="anthropic") == n
        assert sample(text, "ragpulse_traces_answered_total", **mine, judge="anthropic") == n
        assert sample(text, "ragpulse_traces_hallucinated_total", **mine, judge="anthropic") == n // 2
    assert 'tenant="other"' not in "\n".join(line for line in text.splitlines() if f'app="{app}"' in line
                                              and not line.endswith(" 0.0"))


def test_a_worker_cuts_what_its_judge_sees_and_says_so(cluster_factory) -> None:
    """RAGPULSE_JUDGE_MAX_*_CHARS reach the worker: the long answer is judged cut, the result names the cut, and
    /metrics and the report count it."""
    app = f"cut{uuid.uuid4().hex[:6]}"
    long_answer = "Fact 0 holds. " + "Padding that goes on. " * 40
    with FakeAnthropic() as fake:
        cluster = cluster_factory(fake, 1, RAGPULSE_APPS=app, RAGPULSE_JUDGE_MAX_ANSWER_CHARS="200",
                                  RAGPULSE_JUDGE_MAX_DOC_CHARS="50", RAGPULSE_JUDGE_MAX_CONTEXT_CHARS="80")
        traces = production(app, 2, app)
        traces[0]["answer"] = long_answer
        job_id = cluster.post(traces, judge="local")
        assert wait_for_job(cluster.http, job_id)["status"] == "finished"
        results = {r["trace_id"]: r for r in cluster.results(job_id)}
        report = cluster.http.get(f"/v1/jobs/{job_id}/report").json()
        text = cluster.http.get("/metrics").text
    assert results[f"{app}-0"]["judge_input_truncated"] == ["answer"]
    assert results[f"{app}-1"]["judge_input_truncated"] == []
    assert results[f"{app}-0"]["claims"][0]["verdict"] == "supported"             # judged on what was left
    assert report["counts"]["judge_input_truncated"] == 1
    mine = {"tenant": "default", "app": app, "environment": "evaluation"}             # a batch: an evaluation run
    assert sample(text, "ragpulse_judge_input_truncated_total", **mine, part="answer") == 1
    assert sample(text, "ragpulse_judge_input_truncated_total", **mine, part="documents") == 0


def test_metrics_need_their_own_token_when_one_is_set(api_factory, stack) -> None:
    url = api_factory({**stack.env, "RAGPULSE_API_KEYS": "acme:key-acme", "RAGPULSE_METRICS_TOKEN": "scrape-me"})
    refused = httpx.get(f"{url}/metrics")
    assert refused.status_code == 401 and refused.headers["content-type"] == "application/problem+json"
    assert refused.headers["www-authenticate"] == "Bearer"
    for wrong in ("Bearer scrape-m", "Bearer key-acme", "Basic scrape-me", "scrape-me"):   # an API key is no token
        assert httpx.get(f"{url}/metrics", headers={"Authorization": wrong}).status_code == 401, wrong
    allowed = httpx.get(f"{url}/metrics", headers={"Authorization": "Bearer scrape-me"})
    assert allowed.status_code == 200 and "ragpulse_api_requests_rejected_total" in allowed.text
    assert httpx.get(f"{url}/healthz").status_code == 200                             # probes stay open
    assert httpx.get(f"{url}/readyz").status_code == 200


def test_every_metric_the_rules_and_dashboard_use_is_exposed(client: httpx.Client) -> None:
    from tests.test_deploy import METRICS

    # A tenant's series appear at 0 from its first post on: post one trace, judged by nobody.
    assert client.post("/v1/batches", json={"traces": [{"query": "q"}], "options": {"judge": "none"}}).status_code == 202
    text = client.get("/metrics").text
    declared = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    exposed = {name + "_total" if name + "_total" in METRICS else name for name in declared}
    assert {gauge.name for gauge in AGREEMENT_GAUGES} <= exposed          # the review loop's, read at scrape time
    assert METRICS <= exposed, sorted(METRICS - exposed)
    assert ('ragpulse_traces_judged_total{app="default",environment="production",judge="anthropic",tenant="default"}'
            in text)                                                                                  # at 0 before any


def test_the_app_policy_cap_holds_under_concurrent_puts(redis_client) -> None:  # noqa: ANN001
    from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

    from ragpulse.exceptions import Conflict  # noqa: PLC0415
    from ragpulse.monitoring.policy_store import PolicyStore  # noqa: PLC0415
    from ragpulse.monitoring.sampling import SamplingPolicy  # noqa: PLC0415

    store, tenant = PolicyStore(redis_client, 1.0, max_apps=100), f"t-{uuid.uuid4().hex[:8]}"

    def put(n: int) -> bool:
        try:
            store.put(tenant, f"app-{n}", SamplingPolicy(sample_rate=0.5))
        except Conflict:
            return False
        return True

    with ThreadPoolExecutor(16) as pool:
        stored = list(pool.map(put, range(160)))
    assert sum(stored) == 100 and len(store.apps(tenant)) == 100
    store.delete(tenant, "app-0" if stored[0] else next(f"app-{n}" for n, ok in enumerate(stored) if ok))
    assert put(1000) and not put(1001)          # the deleted app's place, and no more


def test_a_policy_past_the_cap_is_409_and_delete_frees_its_place(api_factory, stack) -> None:  # noqa: ANN001
    tag = uuid.uuid4().hex[:8]       # a tenant of its own: other tests store the default tenant's policies
    url = api_factory({**stack.env, "RAGPULSE_MAX_APPS_PER_TENANT": "2", "RAGPULSE_API_KEYS": f"t{tag}:key-{tag}"})
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer key-{tag}"}) as http:
        for app in ("a", "b"):
            assert http.put(f"/v1/apps/{tag}-{app}/policy", json={"sample_rate": 0.5}).status_code == 200
        refused = http.put(f"/v1/apps/{tag}-c/policy", json={"sample_rate": 0.5})
        assert refused.status_code == 409 and refused.json()["errors"][0]["path"] == "path.app"
        assert "RAGPULSE_MAX_APPS_PER_TENANT=2" in refused.json()["errors"][0]["message"]
        dropped = http.delete(f"/v1/apps/{tag}-a/policy")
        assert dropped.status_code == 200 and dropped.json()["stored"] is False
        assert dropped.json()["sample_rate"] == http.get(f"/v1/apps/{tag}-a/policy").json()["sample_rate"]
        assert http.put(f"/v1/apps/{tag}-c/policy", json={"sample_rate": 0.5}).status_code == 200
        assert "DELETE" in http.options(f"/v1/apps/{tag}-c/policy").headers["allow"]
