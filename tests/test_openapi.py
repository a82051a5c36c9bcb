"""The OpenAPI document at /schema/openapi.json tells the truth: bearer security, problem-details errors, 409s."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.integration

METHODS = ("get", "put", "post", "delete", "patch")
PROBLEM_REF = {"$ref": "#/components/schemas/ProblemDetails"}


@pytest.fixture(scope="module")
def spec(stack) -> dict[str, Any]:
    return httpx.get(f"{stack.url}/schema/openapi.json", timeout=30).json()


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, item in spec["paths"].items() for method, op in item.items()
            if method in METHODS]


def test_bearer_security_is_declared_and_required_on_every_v1_operation(spec: dict[str, Any]) -> None:
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {
        **spec["components"]["securitySchemes"]["bearerAuth"], "type": "http", "scheme": "bearer"}
    for path, method, op in operations(spec):
        if path.startswith("/v1/"):
            assert op.get("security") == [{"bearerAuth": []}], (method, path)
        else:                                               # probes and /metrics stay open
            assert not op.get("security"), (method, path)


def test_every_operation_documents_the_problems_it_can_answer(spec: dict[str, Any]) -> None:
    from service.openapi import ERRORS

    ops = operations(spec)
    assert {(path, method) for path, method, _ in ops} == set(ERRORS), "a route is missing from service.openapi.ERRORS"
    for path, method, op in ops:
        responses = op["responses"]
        expected = set()
        if path.startswith("/v1/"):
            expected |= {"401", "503"}                      # every /v1 call authenticates and reaches Redis
        if op.get("parameters") or "requestBody" in op:
            expected.add("400")                             # a parameter out of range, or malformed JSON
        if "requestBody" in op:
            expected.add("413")                             # takes input: too large
            if path != "/v1/otlp/v1/traces":                # OTLP answers unreadable spans with partial success
                expected.add("422")                         # ... or breaking the schema
        if "{job_id}" in path or path == "/v1/calibrations":
            expected.add("404")
        if path == "/readyz":
            expected.add("503")
        assert expected <= set(responses), (method, path, sorted(responses))
        for status in expected:
            assert responses[status]["content"] == {"application/problem+json": {"schema": PROBLEM_REF}}, \
                (method, path, status)
        if "401" in responses:
            assert "WWW-Authenticate" in responses["401"]["headers"]
        if "503" in responses:
            assert "Retry-After" in responses["503"]["headers"]
    assert "409" in spec["paths"]["/v1/jobs/{job_id}/retry"]["post"]["responses"]
    # Litestar's stock 400 body ({status_code, detail, extra}) is not what this API answers: none is left.
    assert "Validation Exception" not in str(spec)


def test_the_problem_details_schema_is_what_errors_look_like(spec: dict[str, Any], client: httpx.Client) -> None:
    schemas = spec["components"]["schemas"]
    problem = schemas["ProblemDetails"]
    assert {"type", "title", "status", "detail", "errors", "errors_truncated"} == set(problem["properties"])
    assert set(problem["required"]) == {"title", "status", "detail"}
    error_item = schemas[problem["properties"]["errors"]["items"]["$ref"].rsplit("/", 1)[1]]
    assert set(error_item["properties"]) == set(error_item["required"]) == {"path", "message"}
    answers = [
        client.post("/v1/batches", content=b"{", headers={"content-type": "application/json"}),   # 400
        client.get(f"/v1/jobs/{uuid.uuid4().hex}"),                                              # 404
        client.post("/v1/batches", json={"traces": [{"answer": 1}]}),                             # 422
        client.get(f"/v1/jobs/{uuid.uuid4().hex}/results", params={"limit": 0}),                  # 400 parameter
    ]
    for response in answers:
        assert response.headers["content-type"] == "application/problem+json", response.text
        body = response.json()
        assert set(body) <= set(problem["properties"]) and set(problem["required"]) <= set(body), body
        assert body["status"] == response.status_code and isinstance(body["detail"], str)
        for item in body.get("errors", []):
            assert set(item) == {"path", "message"}


def test_the_batch_answers_are_typed(spec: dict[str, Any], client: httpx.Client) -> None:
    responses = spec["paths"]["/v1/batches"]["post"]["responses"]
    assert responses["202"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Accepted"}
    assert responses["200"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/DryRun"}
    cost = spec["components"]["schemas"]["CostEstimate"]
    dry = client.post("/v1/batches", params={"dry_run": "true"}, json={"traces": [{"query": "q", "answer": "A."}]})
    assert dry.status_code == 200 and set(dry.json()["estimate"]) == set(cost["properties"])
    report = spec["paths"]["/v1/jobs/{job_id}/report"]["get"]["responses"]["200"]
    assert report["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Report"}


def test_retrying_a_job_that_has_not_ended_is_409(api_factory, stack) -> None:
    """The job waits on a queue no worker listens to, so it is still queued when the retry comes."""
    url = api_factory({"RAGPULSE_QUEUE": f"idle-{uuid.uuid4().hex[:8]}"})
    with httpx.Client(base_url=url, timeout=30) as http:
        job_id = http.post("/v1/batches", json={"traces": [{"query": "q", "answer": "A."}]}).json()["job_id"]
        response = http.post(f"/v1/jobs/{job_id}/retry")
        assert response.status_code == 409, response.text
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["status"] == 409 and body["title"] == "Conflict" and "queued" in body["detail"]
        assert body["errors"] == [{"path": "path.job_id", "message": "job still running"}]
        assert http.post(f"/v1/jobs/{uuid.uuid4().hex}/retry").status_code == 404


def test_options_lists_every_documented_method_of_a_path(spec: dict[str, Any], client: httpx.Client) -> None:
    """Litestar's own OPTIONS answer listed only GET for /v1/apps/{app}/policy, which PUT serves too."""
    for path, item in spec["paths"].items():
        concrete = path.replace("{job_id}", "0" * 32).replace("{app}", "chat").replace("{version}", "1")
        allowed = {m.strip() for m in client.options(concrete).headers["allow"].split(",")}
        assert {m.upper() for m in item if m in METHODS} | {"OPTIONS"} == allowed, (path, allowed)


def test_body_schemas_say_what_the_decoder_refuses(spec: dict[str, Any], client: httpx.Client) -> None:
    """A body valid by the document must not be refused for a rule the document does not state."""
    trace = spec["components"]["schemas"]["Trace"]
    timestamp = next(s for s in trace["properties"]["timestamp"]["anyOf"] if s.get("type") == "string")
    assert timestamp["format"] == "date-time"                # msgspec 0.23 documents a datetime as any string
    assert client.post("/v1/batches", json={"traces": [{"query": "q", "timestamp": ""}]}).status_code == 422
    assert client.post("/v1/batches", json={"traces": [{"query": "q", "timestamp": "2024-05-01T10:00:00Z"}]}) \
        .status_code == 202
    assert trace["not"]["required"] == ["gold_doc_ids", "relevance"]   # one label kind per trace
    both = client.post("/v1/batches", json={"traces": [{"query": "q", "gold_doc_ids": ["d"], "relevance": {"d": 1}}]})
    assert both.status_code == 422


# -- the contract fixes of issue 23 (defect 13, and the policy round trip of 15) ---------------------------------

def parameter(spec: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    return next(p for p in spec["paths"][path][method]["parameters"] if p["name"] == name)


def test_the_results_cursor_is_documented_as_the_cursors_the_api_issues(spec: dict[str, Any],
                                                                       client: httpx.Client) -> None:
    import re

    cursor = parameter(spec, "/v1/jobs/{job_id}/results", "get", "cursor")
    assert cursor["schema"]["type"] == "string"
    pattern = cursor["schema"]["pattern"]
    assert re.search(pattern, "") and re.search(pattern, "1000") and not re.search(pattern, "abc")  # before: any string
    job_id = client.post("/v1/batches", json={"traces": [{"query": f"q{i}"} for i in range(3)]}).json()["job_id"]
    first = client.get(f"/v1/jobs/{job_id}/results", params={"limit": 2, "cursor": ""})
    assert first.status_code == 200
    bad = client.get(f"/v1/jobs/{job_id}/results", params={"cursor": "x1"})
    assert bad.status_code == 400 and [e["path"] for e in bad.json()["errors"]] == ["query.cursor"]


def test_calibrating_a_job_that_has_not_ended_is_409_as_retry_is(api_factory, spec: dict[str, Any]) -> None:
    assert "409" in spec["paths"]["/v1/calibrations"]["post"]["responses"]
    url = api_factory({"RAGPULSE_QUEUE": f"idle-{uuid.uuid4().hex[:8]}"})
    with httpx.Client(base_url=url, timeout=30) as http:
        job_id = http.post("/v1/batches", json={"traces": [{"query": "q", "answer": "A."}]}).json()["job_id"]
        label = {"trace_id": "t", "faithful": True}
        response = http.post("/v1/calibrations", json={"job_id": job_id, "labels": [label]})
        assert response.status_code == 409, response.text                  # before: 400
        assert response.json()["errors"] == [{"path": "$.job_id", "message": "job has not finished"}]
        twice = http.post("/v1/calibrations", json={"job_id": job_id, "labels": [label, {**label, "faithful": False}]})
        assert twice.status_code == 422 and [e["path"] for e in twice.json()["errors"]] == ["$.labels[1].trace_id"]


def test_metrics_documents_the_401_it_answers_with_a_token(api_factory, spec: dict[str, Any]) -> None:
    responses = spec["paths"]["/metrics"]["get"]["responses"]
    assert set(responses) == {"200", "401"}                                 # before: 200 only
    url = api_factory({"RAGPULSE_METRICS_TOKEN": "m" * 32})
    answer = httpx.get(f"{url}/metrics", timeout=30)
    assert answer.status_code == 401 and answer.headers["content-type"] == "application/problem+json"
    assert httpx.get(f"{url}/metrics", headers={"authorization": f"Bearer {'m' * 32}"}, timeout=30).status_code == 200


@pytest.mark.parametrize("trace_id", ["a/b", "/", ".", ".."])
def test_an_online_trace_id_that_no_url_can_name_is_refused_at_intake(trace_id: str, client: httpx.Client) -> None:
    posted = client.post("/v1/traces", json={"traces": [{"query": "q", "trace_id": trace_id}]})
    assert posted.status_code == 422, posted.text                            # before: 202, then 404 for ever
    assert [e["path"] for e in posted.json()["errors"]] == ["$.traces[0].trace_id"]
    batch = client.post("/v1/batches", json={"traces": [{"query": "q", "trace_id": trace_id}]})
    assert batch.status_code == 202                                          # read by job and index: any id will do


def test_online_trace_ids_with_dots_are_still_taken(client: httpx.Client) -> None:
    ids = [f"{prefix}{uuid.uuid4().hex}" for prefix in ("...", ".", "..", "a.b:")]
    assert client.post("/v1/traces", json={"traces": [{"query": "q", "trace_id": i} for i in ids]}).status_code == 202


@pytest.mark.parametrize("app", [".", "..", ".hidden"])
def test_an_app_name_no_url_can_name_is_refused(app: str, client: httpx.Client) -> None:
    batch = client.post("/v1/batches", json={"traces": [{"query": "q", "app": app}]})
    assert batch.status_code == 422                                          # before: 202
    assert [e["path"] for e in batch.json()["errors"]] == ["$.traces[0].app"]
    assert client.get(f"/v1/apps/{app.replace('.', '%2E')}/policy").status_code in (400, 404)


def test_a_policy_read_with_get_can_be_put_back(client: httpx.Client) -> None:
    app, other = f"shop-{uuid.uuid4().hex[:6]}", f"copy-{uuid.uuid4().hex[:6]}"
    client.put(f"/v1/apps/{app}/policy", json={"sample_rate": 0.25, "always_judge": {"top_score_below": 0.3}})
    read = client.get(f"/v1/apps/{app}/policy").json()
    again = client.put(f"/v1/apps/{app}/policy", json=read)
    assert again.status_code == 200, again.text                               # before: 422, `app` is unknown
    assert again.json() == read
    copied = client.put(f"/v1/apps/{other}/policy", json=read).json()       # the path names the app, not the body
    assert copied["app"] == other and copied["sample_rate"] == 0.25 and copied["always_judge"] == read["always_judge"]
    assert client.put(f"/v1/apps/{app}/policy", json={**read, "stored": "yes"}).status_code == 422


def test_posts_document_their_idempotency_key_and_body_deadline(spec: dict[str, Any]) -> None:
    for path in ("/v1/traces", "/v1/batches"):
        op = spec["paths"][path]["post"]
        (header,) = [p for p in op["parameters"] if p["in"] == "header" and p["name"] == "Idempotency-Key"]
        assert not header.get("required") and header["schema"]["maxLength"] == 255, header
        assert "Idempotent-Replayed" in op["responses"]["202"]["headers"]
        assert "Idempotency-Key" in op["responses"]["422"]["description"]
    for path, method, op in operations(spec):
        assert ("408" in op["responses"]) == ("requestBody" in op), (method, path)   # a body can arrive too slowly


def test_every_parameter_is_described_and_descriptions_are_plain_text(spec: dict[str, Any]) -> None:
    """A reader of /schema learns what each query, path and header parameter does; descriptions carry no Markdown
    code backticks, which the schema viewer shows literally."""
    undescribed, marked = [], []
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict):
                continue
            for param in operation.get("parameters", []):
                where = f"{method.upper()} {path} {param['in']}.{param['name']}"
                text = param.get("description") or param.get("schema", {}).get("description")
                if not text:
                    undescribed.append(where)
                elif "`" in text:
                    marked.append(where)
    assert not undescribed, "parameters without a description:\n" + "\n".join(undescribed)
    assert not marked, "descriptions with backticks:\n" + "\n".join(marked)


def test_operation_summaries_and_descriptions_are_plain_text(spec: dict[str, Any]) -> None:
    """An operation's summary and description read as plain text in any viewer: no Markdown code backticks."""
    marked = [f"{method.upper()} {path} {field}" for path, method, op in operations(spec)
              for field in ("summary", "description") if "`" in op.get(field, "")]
    assert all(op.get("summary") for _, _, op in operations(spec)), "an operation without a summary"
    assert not marked, "summaries or descriptions with backticks:\n" + "\n".join(marked)


def test_the_reference_page_shows_no_backtick_literally(stack) -> None:
    """/schema renders every description (operations, parameters, request bodies, responses, schema fields) with
    its backticks as code: before, responses and fields showed them literally (`Authorization: Bearer ...`)."""
    page = httpx.get(f"{stack.url}/schema", timeout=30)
    assert page.status_code == 200 and "<code>Authorization: Bearer &lt;api key&gt;</code>" in page.text
    assert "`" not in page.text


def test_no_one_of_offers_both_integer_and_number(spec: dict[str, Any]) -> None:
    """An integer is valid under `integer` and `number` alike, so a `oneOf` offering both rejects every integer."""
    found = []

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            types = {branch.get("type") for branch in node.get("oneOf", []) if isinstance(branch, dict)}
            if {"integer", "number"} <= types:
                found.append(path)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{path}/{i}")

    walk(spec, "")
    assert not found, found
