"""Credentials in answers (ragpulse.security.credentials): each kind by its published shape, examples and
placeholders left out, values a retrieved document holds left out, and the finding carried to results, reports,
/metrics and the alert's zero series. Values are generated from a seeded RNG, so every run checks the same ones."""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import json
import random
import string
import time
import uuid
from pathlib import Path

import httpx
import msgspec
import pytest
from prometheus_client import CollectorRegistry

from ragpulse.model.results import Security, TraceResult
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.monitoring.collector import RedisMetricsCollector
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.monitoring.recorder import count_security
from ragpulse.reporting.build import build_report
from ragpulse.reporting.render import render_report
from ragpulse.security.credentials import KINDS, credential_kinds
from ragpulse.security.trace import check_trace
from tests.support import ROOT, wait_for_job

RNG = random.Random(20261203)
ALNUM = string.ascii_letters + string.digits
BASE32 = string.ascii_uppercase + "234567"
NOW = datetime.datetime(2026, 12, 3, tzinfo=datetime.UTC)
DEV_SETS = [ROOT / "bench" / "data" / name for name in ("credentials_dev.jsonl", "credentials_dev2.jsonl")]
"""The first two sets a helper wrote, each scored once before the changes it led to (bench/README.md), since tuned
on. The held-out set (credentials_heldout.jsonl) is scored by bench/credentials_quality.py, never by a test."""


def rand(n: int, alphabet: str = ALNUM) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def b64(n: int) -> str:
    return base64.b64encode(RNG.randbytes(n)).decode()


def jwt(header: dict | None = None) -> str:
    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
    head, body = part(header or {"alg": "HS256", "typ": "JWT"}), part({"sub": rand(8), "iat": 1764720000})
    signature = hmac.new(RNG.randbytes(32), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def pem(kind: str = "RSA ", lines: int = 5, joiner: str = "\n") -> str:
    body = joiner.join(b64(48) for _ in range(lines))
    return f"-----BEGIN {kind}PRIVATE KEY-----{joiner}{body}{joiner}-----END {kind}PRIVATE KEY-----"


AWS_KEY = "AKIA" + rand(16, BASE32)
POSITIVES: dict[str, list[str]] = {
    "private_key": [pem(), pem("OPENSSH ", 4), pem("", 6),
                    json.dumps({"type": "service_account", "private_key": pem("", 5)})],   # `\n` inside a JSON string
    "aws_access_key": [f"Set AWS_ACCESS_KEY_ID={AWS_KEY} in the job.", f"(key ASIA{rand(16, BASE32)})"],
    "aws_secret_key": [f"aws_secret_access_key = {rand(40, ALNUM + '/+')}",
                       f"AWS Secret Access Key [None]: {rand(40, ALNUM + '/+')}",
                       f'provider "aws" {{\n  secret_key = "{rand(40, ALNUM + "/+")}"\n}}',
                       f"Your secret access key is {rand(40, ALNUM + '/+')}."],
    "github_token": [f"git clone https://ghp_{rand(36)}@github.com/acme/infra", f"`github_pat_{rand(22)}_{rand(59)}`"],
    "gitlab_token": [f"PRIVATE-TOKEN: glpat-{rand(20, ALNUM + '_-')}"],
    "slack_token": [f"SLACK_BOT_TOKEN=xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24)}",
                    f"Post to https://hooks.slack.com/services/T{rand(8, BASE32)}/B{rand(9, BASE32)}/{rand(24)}."],
    "stripe_key": [f"stripe.api_key = 'sk_live_{rand(24)}'", f"rk_live_{rand(32)}"],
    "google_api_key": [f"https://maps.googleapis.com/maps/api/js?key=AIza{rand(35, ALNUM + '_-')}"],
    "anthropic_key": [f"ANTHROPIC_API_KEY=sk-ant-api03-{rand(93, ALNUM + '_-')}AA"],
    "openai_key": [f"OPENAI_API_KEY=sk-proj-{rand(74, ALNUM + '_-')}T3BlbkFJ{rand(74, ALNUM + '_-')}",
                   f"openai.api_key = 'sk-{rand(48)}'"],
    "azure_key": [f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={b64(64)};EndpointSuffix=core.net",
                  f"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey={b64(32)}"],
    "jwt": [f"curl -H 'Authorization: Bearer {jwt()}' https://api.acme.io"],
    "url_password": [f"DATABASE_URL=postgres://app:{rand(12)}@db.internal:5432/app", f"redis://:{rand(16)}@cache:6379"],
    "password": ["The admin password is Tr0ub4dor&3.", 'config: {"password": "S3cr3t!9x"}',
                 "DB_PASSWORD=hunter2hunter2", "Das Passwort lautet Xy7#kq!2 und gilt 30 Tage.",
                 "Le mot de passe est : Qw3rty!Az", "The password for the staging Grafana is 5gZr5%+FYIs?*K.",
                 "The Wi-Fi password this quarter is 'H.9%cllcJp-ned'.", "con la contraseña fCuVqGD3HLhKs!y.",
                 "| system | user | password |\n|---|---|---|\n| Grafana | admin | nprB-7YV8e1W |",
                 "Het wachtwoord luidt Kx8!pQ2z", "Usa la contraseña Xy7kLm29Q y tu usuario es jsmith.",
                 "Password is password: Kq7!vRm2 (İstanbul office)", "| Password | Kq7!vRm2x |"],
}

NEGATIVES = [
    "The docs use AKIAIOSFODNN7EXAMPLE with wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY as the secret access key.",
    "Reset your password under Settings. The password must be 12 characters. The password is case-sensitive.",
    "password: <your password>; password = ${DB_PASSWORD}; password: ********; password: see the vault",
    "postgres://user:password@localhost:5432/db, redis://:@cache, https://alice@example.com, mailto:a@b.example",
    "postgres://postgres:postgres@localhost/dev (the image's default) and amqp://guest:guest@rabbit:5672",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b, sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991"
    "b7852b855, id 123e4567-e89b-12d3-a456-426614174000",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6\n"
    "-----END PUBLIC KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\n...your key here...\n-----END RSA PRIVATE KEY-----",
    "Tokens look like ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx or sk-...; use sk_test_" + rand(24) + " in tests and "
    "pk_live_" + rand(24) + " in the browser.",
    "Use the emulator string AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
    "KBHBeksoGMGw==;",
    "A token has three parts: eyJhbGciOi.notjson.signature, and Bearer <token> goes in the header.",
    "Your boarding pass is 12345678; the password policy: 8-64 characters.",
    "db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6231386139643766", "password: vault:secret/data/db#pw",
    "Your password reset code is 482913. The password must be 12+ characters with one symbol such as !.",
    "Passwords expire every 90 days; the password field accepts up to 64 characters.",
    "| user | password |\n|---|---|\n| admin | <set at first login> |\n| ci | ******** |",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ops@bastion",
    # a JWT-shaped token whose header is JSON nested past the decoder's recursion limit (it raised RecursionError)
    base64.urlsafe_b64encode(b'{"a":' + b"[" * 1400).rstrip(b"=").decode() + ".eyJzdWIiOiIxIn0." + "s" * 20,
]


@pytest.mark.parametrize("kind,text", [(kind, text) for kind, texts in POSITIVES.items() for text in texts])
def test_each_kind_is_found_by_its_shape(kind: str, text: str) -> None:
    assert credential_kinds(text, []) == {kind: 1}


def test_every_kind_has_a_positive_case() -> None:
    assert set(POSITIVES) == set(KINDS)


@pytest.mark.parametrize("text", NEGATIVES)
def test_examples_placeholders_and_lookalikes_are_not_credentials(text: str) -> None:
    assert credential_kinds(text, []) == {}


def test_a_value_a_retrieved_document_holds_is_left_out_and_distinct_values_are_counted() -> None:
    key, other = POSITIVES["github_token"][0], f"ghp_{rand(36)}"
    answer = f"{key} or {other}, and {key} again"
    assert credential_kinds(answer, []) == {"github_token": 2}
    assert credential_kinds(answer, [f"The deploy token is {other}."]) == {"github_token": 1}
    wifi = "The guest Wi-Fi password is Welcome2026!"
    assert credential_kinds(wifi, ["Guest Wi-Fi: the password is Welcome2026! (changes monthly)"]) == {}
    key_block = pem()
    assert credential_kinds(f"Here it is:\n{key_block}", [f"ops notes\n{key_block}\n"]) == {}


def test_ordinary_answers_about_passwords_and_keys_are_not_credentials() -> None:
    """90 benign answers a reviewer wrote to break the check (password policies, reset links, phone numbers, dates,
    code reading passwords from variables, documentation URLs with default passwords, tables of policies): one
    finding, the famous example password "Tr0ub4dor&3" named as such (bench/README.md)."""
    flagged = []
    for line in (ROOT / "bench" / "data" / "credentials_benign_dev.jsonl").read_text().splitlines():
        case = json.loads(line)
        if credential_kinds(case["text"], []):
            flagged.append(case["id"])
    assert flagged == ["b045"]


@pytest.mark.parametrize("path", DEV_SETS, ids=lambda path: path.name)
def test_the_dev_sets_are_found_at_their_recorded_precision_and_recall(path: Path) -> None:
    """Value-level precision and recall on each dev set no lower than bench/README.md records after the changes it
    led to (1.000 / 1.000 on both)."""
    hits = extra = missed = 0
    for line in path.read_text().splitlines():
        case = json.loads(line)
        found, wanted = credential_kinds(case["text"], []), case["kinds"]
        for kind in set(found) | set(wanted):
            hits += min(found.get(kind, 0), wanted.get(kind, 0))
            extra += max(0, found.get(kind, 0) - wanted.get(kind, 0))
            missed += max(0, wanted.get(kind, 0) - found.get(kind, 0))
    assert hits / (hits + extra) >= 0.99 and hits / (hits + missed) >= 0.97, (hits, extra, missed)


# -- where the finding goes -----------------------------------------------------------------------------------------

def trace(answer: str) -> Trace:
    return msgspec.convert({"query": "How do I deploy?", "answer": answer,
                            "retrieved_docs": [{"id": "runbook", "text": "Deploys run from the CI pipeline."}]}, Trace)


def test_check_trace_reports_kinds_and_counts_never_the_value() -> None:
    security = check_trace(trace(f"Use {AWS_KEY} to deploy."), NOW, None)
    assert security.credentials_checked and security.credentials == {"aws_access_key": 1}
    assert AWS_KEY not in msgspec.json.encode(security).decode()
    assert check_trace(trace("Run the CI pipeline."), NOW, None).credentials == {}
    unanswered = msgspec.convert({"query": "q", "retrieved_docs": [{"id": "d", "text": "t"}]}, Trace)
    assert check_trace(unanswered, NOW, None).credentials_checked is False


def test_the_report_gives_the_credential_rate_with_its_interval_and_the_kinds() -> None:
    results = [TraceResult(trace_id=f"t{i}", index=i, status="ok", app="a", labels="unlabelled",
                           retrieval=None, security=Security(
        credentials_checked=True, credentials={"jwt": 1} if i < 2 else {})) for i in range(10)]
    report = build_report("j", BatchOptions(), results)
    rate = report.security.rates["credentials"]
    assert (rate.mean, rate.n) == (pytest.approx(0.2), 10) and rate.ci95[0] < 0.2 < rate.ci95[1]
    assert report.security.credential_kinds == {"jwt": 2} and report.security.flagged["credentials"] == ["t0", "t1"]
    assert "credential kinds: jwt 2" in render_report(report)


def test_credential_series_start_at_zero_and_count_each_kind(redis_client) -> None:  # noqa: ANN001
    tenant, app = f"t-{uuid.uuid4().hex[:6]}", f"ops-{uuid.uuid4().hex[:6]}"
    registry = CollectorRegistry()
    registry.register(RedisMetricsCollector(redis_client, apps={app}, tenants={tenant}))
    labels = {"tenant": tenant, "app": app, "environment": "production"}
    value = registry.get_sample_value
    assert all(value("ragpulse_security_credential_answers_total", {**labels, "credential": kind}) == 0
               for kind in KINDS)                                   # the alert's increase() sees the first answer
    batch = MetricsBatch({app}, {tenant})
    count_security(batch, batch.per_app(tenant, app, "production"),
                   Security(credentials_checked=True, credentials={"stripe_key": 2}), "local")
    batch.flush(redis_client)
    assert value("ragpulse_security_credential_answers_total", {**labels, "credential": "stripe_key"}) == 1
    assert value("ragpulse_security_checked_total", {**labels, "check": "credentials"}) == 1


def test_a_batch_answer_with_a_key_reaches_results_report_and_metrics(client: httpx.Client) -> None:
    app = f"cred-{time.time_ns()}"[-20:]
    token = f"glpat-{rand(20)}"
    traces = [{"trace_id": "leak", "app": app, "query": "How do I call the API?", "answer": f"Send {token}.",
               "retrieved_docs": [{"id": "api", "text": "Send your personal access token in PRIVATE-TOKEN."}]},
              {"trace_id": "fine", "app": app, "query": "How do I call the API?",
               "answer": "Send your personal access token in PRIVATE-TOKEN.",
               "retrieved_docs": [{"id": "api", "text": "Send your personal access token in PRIVATE-TOKEN."}]}]
    response = client.post("/v1/batches", json={"traces": traces, "options": {"judge": "local"}})
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    wait_for_job(client, job_id)
    results = {r["trace_id"]: r for r in client.get(f"/v1/jobs/{job_id}/results").json()["items"]}
    assert results["leak"]["security"]["credentials"] == {"gitlab_token": 1}
    assert results["fine"]["security"]["credentials"] == {} and results["fine"]["security"]["credentials_checked"]
    report = client.get(f"/v1/jobs/{job_id}/report").json()["security"]
    assert report["credential_kinds"] == {"gitlab_token": 1} and report["rates"]["credentials"]["n"] == 2
    assert report["flagged"]["credentials"] == ["leak"]
    exposed = client.get("/metrics").text
    assert any(line.startswith("ragpulse_security_credential_answers_total{") and 'credential="gitlab_token"' in line
               and not line.endswith(" 0.0") for line in exposed.splitlines())


# -- linear time on hostile answers (the scaling test's method: tests/test_judge_scaling.py) ------------------------

HOSTILE = {
    "many BEGIN lines": ("", "-----BEGIN PRIVATE KEY-----\n"),
    "password words": ("", "password "),
    "pwd words": ("", "pwd "),
    "stated passwords": ("", "password is 12345 "),
    "spaces after 'password is'": ("password is", " "),
    "tabs after 'password'": ("password", "\t"),
    "table rows": ("", "| password |\n| a |\n"),
    "token-like runs": ("", "eyJ" + "a" * 40 + " xoxb-" + "-" * 40 + " "),
    "dash-eyJ runs": ("", "-eyJ"),
    "the same key again": ("", "AKIAQ7XN2MRT5VBWLJ3D "),
    "URL user parts": ("", "https://" + "a" * 30 + " x://y:"),
}
"""A prefix and a unit repeated after it: each shape once cost quadratic time (a lazy scan for END from every BEGIN:
5.7 s for 560 KB; two adjacent `\\s*` on a run of spaces: 36 s for 40,000; every key compared with every key
before it) or a fixed cost per unit too large (`-eyJ` scanned 2,000 characters each, `pwd ` 15 us)."""


@pytest.mark.parametrize("prefix,unit", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_answers_cost_time_linear_in_their_length(prefix: str, unit: str) -> None:
    def per_char(copies: int) -> float:
        text = prefix + unit * copies
        best = float("inf")
        for _ in range(5):
            started = time.perf_counter()
            credential_kinds(text, [])
            best = min(best, time.perf_counter() - started)
        return best / len(text)
    # About 1 when linear, about 10 when quadratic. Small sizes: a scan capped at 8,000 characters a match (as the
    # old private-key body) is quadratic only below the cap.
    assert per_char(1_000) / per_char(100) < 4.0


def test_an_answer_is_searched_for_at_most_max_values_credentials() -> None:
    """Past MAX_VALUES the answer is a finding anyway; the cap keeps each value's comparisons with the earlier ones
    and with the documents bounded."""
    from ragpulse.security.credentials import MAX_VALUES

    keys = [f"AKIA{rand(16, BASE32)}" for _ in range(150)]
    assert MAX_VALUES == 100 and credential_kinds(" ".join(keys), []) == {"aws_access_key": 100}
    assert credential_kinds(" ".join(keys[:10]), []) == {"aws_access_key": 10}
