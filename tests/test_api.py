"""The HTTP API over real HTTP, with real RQ workers and a real Redis."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
import uuid

import httpx
import msgspec
import pytest
import redis

from ragpulse.ops.redis_server import PrivateRedis, free_port
from tests.support import ROOT, child_env, wait_for_job

pytestmark = pytest.mark.integration


def trace(n: int, **extra: object) -> dict:
    base = {"trace_id": f"t{n}", "query": f"question {n}", "answer": "an answer",
            "retrieved_docs": [{"id": "d1", "text": "one"}, {"id": "d2", "text": "two"}, {"id": "d3", "text": "three"}]}
    return {**base, **extra}


def post(client: httpx.Client, traces: list[dict], **options: object) -> httpx.Response:
    return client.post("/v1/batches", json={"traces": traces, "options": options})


def test_batch_is_evaluated_and_paginated(client: httpx.Client) -> None:
    traces = [
        trace(0, gold_doc_ids=["d2"]),                       # first relevant at rank 2
        trace(1, relevance={"d1": 3, "d9": 2}),              # d9 never retrieved
        trace(2, gold_doc_ids=[]),                           # labels with nothing relevant
        trace(3),                                            # no labels
    ]
    accepted = post(client, traces, k=[1, 3])
    assert accepted.status_code == 202, accepted.text
    body = accepted.json()
    assert body["trace_count"] == 4 and body["status_url"] == f"/v1/jobs/{body['job_id']}"
    job = wait_for_job(client, body["job_id"])
    assert job["status"] == "finished"
    assert job["progress"] == {"total": 4, "done": 4, "failed": 0, "skipped": 0}

    first = client.get(f"/v1/jobs/{body['job_id']}/results", params={"limit": 3}).json()
    assert [i["trace_id"] for i in first["items"]] == ["t0", "t1", "t2"]
    second = client.get(f"/v1/jobs/{body['job_id']}/results",
                        params={"limit": 3, "cursor": first["next_cursor"]}).json()
    assert [i["trace_id"] for i in second["items"]] == ["t3"] and second["next_cursor"] is None

    t0, t1, t2 = first["items"]
    assert t0["retrieval"]["mrr"] == 0.5                    # 1 / rank 2
    assert t0["retrieval"]["recall@1"] == 0.0
    assert t0["retrieval"]["precision@3"] == pytest.approx(1 / 3)
    assert t1["retrieval"]["recall@3"] == 0.5               # d1 found, d9 missed
    assert t1["missed_doc_ids"] == ["d9"]
    assert t2["retrieval"] is None and t2["labels"] == "no_relevant"
    assert second["items"][0]["retrieval"] is None and second["items"][0]["labels"] == "unlabelled"

    report = client.get(f"/v1/jobs/{body['job_id']}/report").json()
    assert report["counts"] == {"total": 4, "ok": 4, "failed": 0, "labelled": 2, "no_relevant": 1, "unlabelled": 1,
                                "judge_input_truncated": 0}
    assert report["retrieval"]["mrr"]["mean"] == pytest.approx(0.75)   # (0.5 + 1) / 2
    assert report["retrieval"]["mrr"]["n"] == 2
    assert report["method"]["gain"] == "linear"
    assert report["worst"][0]["trace_id"] == "t1" and report["worst"][0]["missed_doc_ids"] == ["d9"]
    assert [w["trace_id"] for w in report["worst"]] == ["t1"]           # t0 has recall@3 = 1: not failing


def test_missing_labels_warn_on_the_202_and_the_job(client: httpx.Client) -> None:
    traces = [trace(n) for n in range(4)] + [trace(4, gold_doc_ids=["d1"])]
    body = post(client, traces).json()
    [warning] = body["warnings"]
    assert warning["code"] == "missing_gold_labels" and (warning["count"], warning["total"]) == (4, 5)
    assert client.get(f"/v1/jobs/{body['job_id']}").json()["warnings"] == body["warnings"]


def readme_commands() -> list[list[str]]:
    """The shell commands of the README's ```bash blocks, as argv lists (continuations joined, comments dropped)."""
    blocks = re.findall(r"^```bash\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    commands, pending = [], ""
    for line in "\n".join(blocks).splitlines():
        pending += line[:-1] if line.endswith("\\") else line + "\n"
        if line.endswith("\\"):
            continue
        try:
            argv = shlex.split(pending, comments=True)
        except ValueError:               # an open quote: the command goes on (a multi-line -d '…' body)
            continue
        if argv:
            commands.append(argv)
        pending = ""
    return commands


def readme_curl_block() -> str:
    """The README's `## curl` walk-through, as written (its first bash block)."""
    section = (ROOT / "README.md").read_text().split("\n## curl\n", 1)[1]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_the_readme_curl_walk_through_sets_job_and_reads_it(client: httpx.Client) -> None:
    """Pasted into a shell, the walk-through sets $JOB itself (before, it used $JOB and never said how to set it)."""
    lines = readme_curl_block().splitlines()
    first_read = next(i for i, line in enumerate(lines) if line.startswith("curl -s localhost:8080/v1/jobs/$JOB"))
    script = "\n".join([*lines[:first_read + 1], 'echo "JOB=$JOB"']).replace("localhost:8080", str(client.base_url))
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.rsplit("JOB=", 1)[1].strip()
    assert re.fullmatch(r"[0-9a-f]{32}", job_id), done.stdout
    assert msgspec.json.decode(done.stdout.rsplit("JOB=", 1)[0])["job_id"] == job_id   # GET /v1/jobs/$JOB answered


def test_the_readme_names_the_extra_that_runs_otel_app() -> None:
    """examples/otel_app.py imports the OpenTelemetry SDK: the README names the extra that installs it."""
    import tomllib

    readme = " ".join((ROOT / "README.md").read_text().split())
    said = re.search(r"`examples/otel_app\.py` is a runnable instrumented app; .*?'\.\[(\w+)\]'", readme)
    assert said, "the README does not say which extra examples/otel_app.py needs"
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(dep.startswith("opentelemetry-sdk") for dep in extras[said.group(1)])
    assert "from opentelemetry.sdk" in (ROOT / "examples" / "otel_app.py").read_text()


def test_the_readme_dry_run_example_runs_as_written(client: httpx.Client) -> None:
    [curl] = [argv for argv in readme_commands() if argv[0] == "curl" and any("dry_run=true" in a for a in argv)]
    data = curl[curl.index("-d") + 1]
    body = (ROOT / data[1:]).read_bytes() if data.startswith("@") else data.encode()   # curl -d @file reads the file
    url = next(a for a in curl if "dry_run=true" in a)
    response = client.post("/" + url.split("/", 1)[1], content=body, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    answer = response.json()
    traces = msgspec.json.decode(body)["traces"]
    assert answer["dry_run"] is True and answer["trace_count"] == len(traces)
    estimate = answer["estimate"]
    assert estimate["judge_calls"] == sum(1 for t in traces if t.get("answer")) and estimate["cost_usd"] > 0


def test_malformed_json_is_400(client: httpx.Client) -> None:
    response = client.post("/v1/batches", content=b'{"traces": [', headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "not valid JSON" in response.json()["detail"]


def test_schema_violations_are_422_listing_every_failing_path(client: httpx.Client) -> None:
    traces = [trace(0), {"query": 7}, trace(2), trace(3, relevance={"d1": 9}), trace(4, gold_docs=["d1"]),
              trace(5, gold_doc_ids=["d1"], relevance={"d1": 1})]
    response = post(client, traces, gain="cubic")
    assert response.status_code == 422
    errors = {e["path"]: e["message"] for e in response.json()["errors"]}
    assert errors["$.traces[1].query"] == "Expected `str`, got `int`"
    assert errors["$.traces[3].relevance[...]"] == "Expected `int` <= 3"
    assert "unknown field `gold_docs`" in errors["$.traces[4]"]
    assert "mutually exclusive" in errors["$.traces[5]"]
    assert "$.options.gain" in errors
    assert len(errors) == 5


def test_422_lists_every_failing_field_of_every_trace_not_only_the_first(client: httpx.Client) -> None:
    response = client.post("/v1/batches", json={"traces": [
        {"retrieved_docs": "x", "answer": 5}, trace(1), {"query": "q", "retrieved_docs": [{"text": 1}]}]})
    assert response.status_code == 422
    body = response.json()
    assert {(e["path"], e["message"]) for e in body["errors"]} == {
        ("$.traces[0]", "Object missing required field `query`"),
        ("$.traces[0].retrieved_docs", "Expected `array`, got `str`"),
        ("$.traces[0].answer", "Expected `str | null`, got `int`"),
        ("$.traces[2].retrieved_docs[0]", "Object missing required field `id`"),
        ("$.traces[2].retrieved_docs[0].text", "Expected `str | null`, got `int`"),
    }
    assert "errors_truncated" not in body


def test_422_errors_are_bounded_with_a_flag(client: httpx.Client) -> None:
    response = client.post("/v1/batches", json={"traces": [{"answer": 5}] * 150})   # 300 failing paths
    assert response.status_code == 422
    body = response.json()
    assert len(body["errors"]) == 100 and body["errors_truncated"] is True
    assert "first 100 errors" in body["detail"]


def test_duplicate_trace_ids_are_422(client: httpx.Client) -> None:
    response = post(client, [trace(0), trace(1), {**trace(2), "trace_id": "t0"}])
    assert response.status_code == 422
    assert response.json()["errors"][0]["path"] == "$.traces[2].trace_id"


def test_unknown_and_malformed_job_ids_are_404(client: httpx.Client) -> None:
    for job_id in ["0" * 32, "not-a-job", "../../etc"]:
        for suffix in ["", "/results", "/report"]:
            assert client.get(f"/v1/jobs/{job_id}{suffix}").status_code == 404


def test_bad_pagination_parameters_are_400_naming_them(client: httpx.Client) -> None:
    job_id = post(client, [trace(0)]).json()["job_id"]
    too_big = client.get(f"/v1/jobs/{job_id}/results", params={"limit": 100_000})
    assert too_big.status_code == 400 and too_big.json()["errors"][0]["path"] == "query.limit"
    bad_cursor = client.get(f"/v1/jobs/{job_id}/results", params={"cursor": "abc"})
    assert bad_cursor.status_code == 400 and bad_cursor.json()["errors"][0]["path"] == "query.cursor"


def test_limits_answer_413(api_factory, stack) -> None:
    url = api_factory({**stack.env, "RAGPULSE_MAX_BODY_BYTES": "2000", "RAGPULSE_MAX_TRACES": "2"})
    with httpx.Client(base_url=url) as http:
        big = http.post("/v1/batches", json={"traces": [trace(0, answer="x" * 5000)]})
        assert big.status_code == 413
        many = post(http, [trace(0), trace(1), trace(2)])
        assert many.status_code == 413 and "limit is 2" in many.json()["detail"]


def test_tenants_are_isolated_and_keys_required(api_factory, stack) -> None:
    url = api_factory({**stack.env, "RAGPULSE_API_KEYS": "acme:key-acme,globex:key-globex"})
    acme = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-acme"})
    globex = httpx.Client(base_url=url, headers={"Authorization": "Bearer key-globex"})
    assert httpx.post(f"{url}/v1/batches", json={"traces": [trace(0)]}).status_code == 401
    assert httpx.get(f"{url}/v1/jobs/{'0' * 32}", headers={"Authorization": "Bearer nope"}).status_code == 401
    job_id = post(acme, [trace(0, gold_doc_ids=["d1"])]).json()["job_id"]
    assert acme.get(f"/v1/jobs/{job_id}").status_code == 200
    for suffix in ["", "/results", "/report"]:
        assert globex.get(f"/v1/jobs/{job_id}{suffix}").status_code == 404


def test_each_tenant_has_an_ingest_rate_shared_by_every_replica(api_factory, stack) -> None:
    """Over RAGPULSE_TENANT_TRACES_PER_SECOND a post is 429 with Retry-After and problem+json, whichever replica it
    reaches; another tenant is not slowed; a refused batch stores nothing; the bucket refills at the rate."""
    acme, globex = f"acme{uuid.uuid4().hex[:6]}", f"globex{uuid.uuid4().hex[:6]}"   # buckets of their own
    env = {**stack.env, "RAGPULSE_API_KEYS": f"{acme}:key-acme,{globex}:key-globex", "RAGPULSE_MAX_TRACES": "6",
           "RAGPULSE_TENANT_TRACES_PER_SECOND": "2", "RAGPULSE_TENANT_TRACES_BURST": "6"}
    one, two = api_factory(env), api_factory(env)
    as_acme = [httpx.Client(base_url=url, headers={"Authorization": "Bearer key-acme"}) for url in (one, two)]
    as_globex = httpx.Client(base_url=one, headers={"Authorization": "Bearer key-globex"})
    assert post(as_acme[0], [trace(i) for i in range(4)]).status_code == 202        # 4 of the 6 at once
    estimate = as_acme[1].post("/v1/batches", params={"dry_run": "true"}, json={"traces": [trace(0), trace(1)]})
    assert estimate.status_code == 200                                              # an estimate costs nothing
    refused = post(as_acme[1], [trace(i) for i in range(5)])                        # the other replica knows
    assert refused.status_code == 429, refused.text
    assert refused.headers["content-type"] == "application/problem+json"
    problem = refused.json()
    assert problem["status"] == 429 and "2 traces/s" in problem["detail"] and acme in problem["detail"]
    assert int(refused.headers["retry-after"]) in (2, 3)                            # 3 short at 2 a second
    assert post(as_globex, [trace(i) for i in range(6)]).status_code == 202         # a bucket per tenant
    assert post(as_acme[0], [trace(0), trace(1)]).status_code == 202                # what is left still fits
    assert post(as_acme[0], [trace(0)]).status_code == 429
    assert received_by(one, acme) == 6                                              # refused: nothing written
    time.sleep(1.1)                                                                 # 2 tokens back
    assert post(as_acme[1], [trace(0), trace(1)]).status_code == 202
    metrics = httpx.get(f"{one}/metrics").text
    assert re.search(r'ragpulse_api_requests_rejected_total\{status="429"\} [1-9]', metrics)


def received_by(url: str, tenant: str) -> float:
    """ragpulse_traces_received_total of one tenant, summed over its apps."""
    return sum(float(line.split()[-1]) for line in httpx.get(f"{url}/metrics").text.splitlines()
               if line.startswith("ragpulse_traces_received_total{") and f'tenant="{tenant}"' in line)


def test_redis_down_is_503_with_retry_after(api_factory) -> None:
    url = api_factory({}, redis=f"redis://127.0.0.1:{free_port()}/0")
    assert httpx.get(f"{url}/healthz").status_code == 200
    ready = httpx.get(f"{url}/readyz")
    assert ready.status_code == 503 and ready.headers["retry-after"]
    posted = httpx.post(f"{url}/v1/batches", json={"traces": [trace(0)]})
    assert posted.status_code == 503 and posted.headers["retry-after"]
    assert "Traceback" not in posted.text
    assert httpx.get(f"{url}/v1/jobs/{'0' * 32}").status_code == 503


def test_a_full_redis_is_503_naming_the_refusal_and_stores_nothing(api_factory) -> None:
    server = PrivateRedis().start()  # its own server: maxmemory reaches every client of a server
    try:
        url = api_factory({}, redis=server.url)
        admin = redis.Redis.from_url(server.url)
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", "1")  # every write is refused with OOM, as in a full production Redis
        keys_before = admin.dbsize()
        small = httpx.post(f"{url}/v1/batches", json={"traces": [trace(0)]})
        large_traces = [trace(i, answer="x" * 2000) for i in range(150)]  # over 256 KiB: staged in a thread
        large = httpx.post(f"{url}/v1/batches", json={"traces": large_traces})
        for posted in (small, large):
            assert posted.status_code == 503, posted.text
            assert "OOM" in posted.json()["detail"] and posted.headers["retry-after"]
        assert admin.dbsize() == keys_before
        admin.config_set("maxmemory", "0")
        assert httpx.post(f"{url}/v1/batches", json={"traces": [trace(0)]}).status_code == 202
    finally:
        server.stop()


def test_refuses_open_access_on_a_public_address(redis_url: str) -> None:
    env = child_env(redis_url, {"RAGPULSE_HOST": "0.0.0.0", "RAGPULSE_PORT": str(free_port())})
    result = subprocess.run([sys.executable, "-m", "service"], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "without API keys" in result.stderr


def test_open_mode_answers_only_requests_for_a_loopback_host(client: httpx.Client) -> None:
    """DNS rebinding: a page of evil.example, its name re-pointed to 127.0.0.1, would read and post as tenant
    `default` from the user's browser (Origin and Host both say evil.example). Open mode is for loopback names."""
    for host in ("evil.example", "evil.example:8080", "10.0.0.5", ""):
        refused = client.get("/v1/jobs", headers={"host": host})
        assert refused.status_code == 421, host
        assert refused.headers["content-type"] == "application/problem+json" and "loopback" in refused.json()["detail"]
        assert client.get("/jobs", headers={"host": host}).status_code == 421      # the pages too
    port = client.base_url.port
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        assert client.get("/v1/jobs", headers={"host": host}).status_code == 200, host


def test_openapi_documents_the_trace_schema(client: httpx.Client) -> None:
    spec = client.get("/schema/openapi.json").json()
    body = spec["paths"]["/v1/batches"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/BatchRequest"}
    trace_schema = spec["components"]["schemas"]["Trace"]
    assert {"query", "retrieved_docs", "gold_doc_ids", "relevance", "question_type"} <= set(trace_schema["properties"])


def test_the_docs_page_loads_nothing_from_another_host(client: httpx.Client) -> None:
    page = client.get("/schema")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    assert not re.findall(r"(?:https?:)?//[\w.-]+", html), "external URL in the docs page"
    assert "default-src 'none'" in html                         # CSP: the browser may load nothing else either
    references = re.findall(r"""(?:src|href)\s*=\s*['"]([^'"]*)['"]""", html)
    local = [ref for ref in references if not ref.startswith(("#", "data:"))]
    assert "/schema/openapi.json" in local
    for ref in local:
        assert client.get(ref).status_code == 200, ref
    anchors = set(re.findall(r"id='([^']+)'", html))
    assert {ref[1:] for ref in references if ref.startswith("#")} <= anchors   # in-page links resolve
    assert "/v1/batches" in html and "schema-Trace" in anchors and "gold_doc_ids" in html
    for stock in ("/schema/redoc", "/schema/swagger", "/schema/elements", "/schema/rapidoc"):
        assert client.get(stock).status_code == 404                # no CDN-backed page is left behind


def test_metrics_count_accepted_traces(client: httpx.Client) -> None:
    def received() -> float:
        """ragpulse_traces_received_total summed over its app label."""
        return sum(float(line.split()[-1]) for line in client.get("/metrics").text.splitlines()
                   if line.startswith("ragpulse_traces_received_total{"))

    before = received()
    post(client, [trace(0), trace(1), trace(2)])
    assert received() == before + 3


def test_metrics_content_type_is_prometheus_exactly_once(client: httpx.Client) -> None:
    from prometheus_client import CONTENT_TYPE_LATEST

    response = client.get("/metrics")
    assert response.headers.get_list("content-type") == [CONTENT_TYPE_LATEST]
    assert response.headers["content-type"].count("charset") == 1


def test_results_are_kept_as_msgpack_with_a_ttl(client: httpx.Client, redis_client) -> None:
    job_id = post(client, [trace(0, gold_doc_ids=["d1"])]).json()["job_id"]
    wait_for_job(client, job_id)
    keys = redis_client.keys(f"ragpulse:job:{job_id}*")
    assert len(keys) >= 4
    for key in keys:
        ttl = redis_client.ttl(key)
        assert 0 < ttl <= 7 * 24 * 3600, key
    chunk = redis_client.get(f"ragpulse:job:{job_id}:chunk:0")
    assert chunk[:1] != b"\x80"                                # not a pickle (protocol 2+ header)
    [stored] = msgspec.msgpack.decode(chunk)                   # msgpack holding the trace as posted
    assert stored["query"] == "question 0" and stored["gold_doc_ids"] == ["d1"]


def test_the_examples_readme_is_titled_for_the_data_it_describes() -> None:
    """Before, it was titled after the file's name (acme) while every trace is of the Nimbus Thermostat's bot."""
    import json

    traces = (ROOT / "examples" / "acme_support_traces.jsonl").read_text().splitlines()
    [app] = {json.loads(line)["app"] for line in traces if line.strip()}
    title = (ROOT / "examples" / "README.md").read_text().splitlines()[0]
    assert app.split("-")[0] in title.lower() and "acme" not in title.lower()
