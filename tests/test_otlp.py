"""OTLP/HTTP ingestion: an app instrumented with the OpenTelemetry SDK and OpenInference attributes exports to a live
ragpulse (protobuf and JSON), spans split across exports are joined, incomplete traces are reported, and the
assembly reads OpenInference and OpenLLMetry / GenAI spans."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator

import httpx
import msgspec
import pytest
from google.protobuf import json_format
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragpulse.otlp.assemble import assemble, deployment_environment
from ragpulse.otlp.spans import SpanRecord

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS
MANUAL = "Hold the reset button for ten seconds to reset the router to its factory settings."


# -- an instrumented app ------------------------------------------------------------------------------------------

class App:
    """A tiny RAG app traced with the OpenTelemetry SDK; spans are captured, then exported as a test chooses."""

    def __init__(self, service: str, **resource: str) -> None:
        self.captured = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service, **resource}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.captured))
        self.tracer = self.provider.get_tracer("rag-app")

    def answer(self, question: str, *, documents: bool = True) -> str:
        """Run one request; returns its OpenTelemetry trace id (32 hex)."""
        with self.tracer.start_as_current_span("rag") as root:
            root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
            root.set_attribute(SpanAttributes.INPUT_VALUE, question)
            if documents:
                with self.tracer.start_as_current_span("retrieve") as retriever:
                    retriever.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                    retriever.set_attribute(SpanAttributes.INPUT_VALUE, question)
                    for i, (doc_id, text) in enumerate([("manual", MANUAL), ("faq", "Routers blink amber on error.")]):
                        retriever.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_ID}", doc_id)
                        retriever.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}", text)
                        retriever.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_SCORE}", 0.9 - i / 10)
            with self.tracer.start_as_current_span("generate") as llm:
                llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
                llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, "acme-llm-2026")
                llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_PROMPT, 412)
                llm.set_attribute(SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, 23)
                answer = "Hold the reset button for ten seconds."
                llm.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, answer)
            return format(root.get_span_context().trace_id, "032x")

    def take(self) -> list[ReadableSpan]:
        spans = list(self.captured.get_finished_spans())
        self.captured.clear()
        return spans


def export_protobuf(url: str, spans: list[ReadableSpan], key: str | None = None) -> SpanExportResult:
    headers = {"Authorization": f"Bearer {key}"} if key else None
    return OTLPSpanExporter(endpoint=f"{url}/v1/otlp/v1/traces", headers=headers).export(spans)


def otlp_json(spans: list[ReadableSpan]) -> dict:
    """The OTLP/JSON form of an export: protobuf's JSON mapping with the ids in hex, as the spec writes them."""
    body = json_format.MessageToDict(encode_spans(spans))

    def hexed(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str):
                    node[key] = base64.b64decode(value).hex()
                else:
                    hexed(value)
        elif isinstance(node, list):
            for item in node:
                hexed(item)

    hexed(body)
    return body


def read_back(client: httpx.Client, trace_id: str, until: tuple[str, ...] = ("done", "failed", "incomplete"),
              timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/v1/traces/{trace_id}")
        if response.status_code == 200 and response.json()["status"] in until:
            return response.json()
        assert time.monotonic() < deadline, f"{trace_id}: {response.status_code} {response.text[:300]}"
        time.sleep(0.2)


@pytest.fixture
def app() -> Iterator[App]:
    made = App(f"acme-support-{uuid.uuid4().hex[:6]}")
    yield made
    made.provider.shutdown()


# -- live ---------------------------------------------------------------------------------------------------------

def test_an_instrumented_app_exports_protobuf_and_its_metrics_come_back(client: httpx.Client, stack, app: App) -> None:
    trace_id = app.answer("How do I reset my router?")
    assert export_protobuf(stack.url, app.take()) == SpanExportResult.SUCCESS
    record = read_back(client, trace_id)
    assert record["status"] == "done" and record["app"] == app.provider.resource.attributes["service.name"]
    result = record["result"]
    assert result["trace_id"] == trace_id and result["generation"]["faithfulness"] == 1.0
    assert result["pipeline"]["prompt_tokens"] == 412 and set(result["pipeline"]["latency_ms"]) == {
        "retrieval", "generation", "total"}


def test_json_exports_are_read_too_and_answered_in_json(client: httpx.Client, app: App) -> None:
    trace_id = app.answer("How do I reset my router?")
    response = client.post("/v1/otlp/v1/traces", json=otlp_json(app.take()))
    assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
    assert response.json() == {}                                    # no partial success: every span taken
    assert read_back(client, trace_id)["result"]["retrieval"] is None   # no labels: retrieval unscored, judged


def test_spans_split_across_exports_are_joined(client: httpx.Client, stack, app: App) -> None:
    trace_id = app.answer("How do I reset my router?")
    spans = app.take()
    root = [s for s in spans if s.parent is None]
    children = [s for s in spans if s.parent is not None]
    assert export_protobuf(stack.url, children) == SpanExportResult.SUCCESS   # children first, as SDKs batch them
    time.sleep(1.0)
    assert client.get(f"/v1/traces/{trace_id}").status_code == 404         # no root yet: still waiting
    assert export_protobuf(stack.url, root) == SpanExportResult.SUCCESS
    result = read_back(client, trace_id)["result"]
    assert result["generation"] is not None and result["pipeline"]["latency_ms"]["total"] > 0


def test_a_trace_without_documents_is_reported_incomplete(client: httpx.Client, stack, app: App) -> None:
    trace_id = app.answer("What's the weather like?", documents=False)
    assert export_protobuf(stack.url, app.take()) == SpanExportResult.SUCCESS
    record = read_back(client, trace_id)
    assert record["status"] == "incomplete" and record["error"] == "no documents" and record["result"] is None
    exposed = client.get("/metrics").text
    assert any(line.startswith("ragpulse_otlp_traces_total{") and 'outcome="incomplete"' in line
               for line in exposed.splitlines())


def test_invalid_spans_get_a_partial_success_and_bad_bodies_a_4xx(client: httpx.Client, app: App) -> None:
    app.answer("How do I reset my router?")
    body = otlp_json(app.take())
    body["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = "0" * 32
    response = client.post("/v1/otlp/v1/traces", json=body)
    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"       # int64 as a JSON string, per proto3
    proto = client.post("/v1/otlp/v1/traces", content=b"\x0a\xff\xff", headers={"content-type": "application/x-protobuf"})
    assert proto.status_code == 400
    assert client.post("/v1/otlp/v1/traces", content=b"x", headers={"content-type": "text/plain"}).status_code == 415
    answer = ExportTraceServiceResponse()
    ok = client.post("/v1/otlp/v1/traces", content=encode_spans([]).SerializeToString(),
                     headers={"content-type": "application/x-protobuf"})
    answer.ParseFromString(ok.content)
    assert ok.status_code == 200 and answer.partial_success.rejected_spans == 0


def test_a_tenant_sees_only_its_own_otlp_traces(api_factory, stack, app: App) -> None:
    url = api_factory({**stack.env, "RAGPULSE_API_KEYS": "acme:key-acme,globex:key-globex"})
    trace_id = app.answer("How do I reset my router?")
    assert export_protobuf(url, app.take(), key="key-acme") == SpanExportResult.SUCCESS
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": "Bearer key-acme"}) as acme:
        assert read_back(acme, trace_id)["status"] == "done"
        assert acme.get(f"/v1/traces/{trace_id}", headers={"Authorization": "Bearer key-globex"}).status_code == 404
        assert acme.post("/v1/otlp/v1/traces", json={}, headers={"Authorization": ""}).status_code == 401


def test_the_resource_names_the_environment_a_trace_is_kept_and_counted_under(client: httpx.Client, stack) -> None:
    """An app deployed to staging says so the OpenTelemetry way (`deployment.environment.name`); its traces are judged
    and kept as staging and counted under environment="staging" (so not in the production series the alerts read)."""
    service = f"acme-support-{uuid.uuid4().hex[:6]}"
    staging, production = App(service, **{"deployment.environment.name": "staging-eu"}), App(service)
    try:
        staged, produced = staging.answer("How do I reset my router?"), production.answer("How do I reset it?")
        assert export_protobuf(stack.url, staging.take()) == SpanExportResult.SUCCESS
        assert client.post("/v1/otlp/v1/traces", json=otlp_json(production.take())).status_code == 200
        assert read_back(client, staged)["result"]["environment"] == "staging"
        assert read_back(client, produced)["result"]["environment"] == "production"   # no name: production
    finally:
        staging.provider.shutdown()
        production.provider.shutdown()
    series = client.get("/metrics").text
    counted = {env: f'ragpulse_otlp_traces_total{{app="other",environment="{env}",outcome="accepted",tenant="default"}}'
               for env in ("staging", "production")}
    assert all(line in series for line in counted.values()), [l for l in series.splitlines() if "otlp_traces" in l]


# -- assembly -----------------------------------------------------------------------------------------------------

def span(span_id: str, parent: str, start: int, end: int, **attributes: object) -> SpanRecord:
    return SpanRecord(trace_id="ab" * 16, span_id=span_id * 16, parent_id=parent * 16 if parent else "", name=span_id,
                      start_ns=start, end_ns=end, service="shop api", attributes=attributes)


def test_a_reranker_gives_the_candidates_and_the_final_documents() -> None:
    spans = [
        span("a", "", 0, 900_000_000, **{KIND: "CHAIN", "input.value": json.dumps({"query": "reset?"}),
                                          "output.value": "Hold it."}),
        span("b", "a", 1, 100_000_000, **{KIND: "RETRIEVER", f"{DOCS}.0.document.id": "d1",
                                           f"{DOCS}.0.document.content": "one", f"{DOCS}.1.document.id": "d2",
                                           f"{DOCS}.1.document.content": "two"}),
        span("c", "a", 100_000_001, 150_000_000, **{KIND: "RERANKER",
                                                   "reranker.input_documents.0.document.id": "d1",
                                                   "reranker.input_documents.1.document.id": "d2",
                                                   "reranker.output_documents.0.document.id": "d2",
                                                   "reranker.output_documents.0.document.content": "two"}),
    ]
    built = assemble(list(reversed(spans)))
    assert built.missing == [] and built.trace["query"] == "reset?" and built.trace["app"] == "shop-api"
    assert built.trace["candidates"] == ["d1", "d2"] and [d["id"] for d in built.trace["retrieved_docs"]] == ["d2"]
    assert built.trace["latency_ms"] == {"retrieval": 100.0, "rerank": 50.0, "total": 900.0}


def test_openllmetry_and_genai_spans_are_read() -> None:
    spans = [
        span("a", "", 0, 10, **{"traceloop.span.kind": "workflow",
                                 "traceloop.entity.input": json.dumps({"question": "reset?"})}),
        span("b", "a", 1, 5, **{f"{DOCS}.0.document.id": "d1", f"{DOCS}.0.document.content": MANUAL}),
        span("c", "a", 5, 9, **{"gen_ai.system": "openai", "gen_ai.request.model": "gpt-x",
                                 "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 7,
                                 "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Hold it."}),
    ]
    built = assemble(spans)
    assert (built.trace["query"], built.trace["answer"], built.trace["generator_model"]) == ("reset?", "Hold it.",
                                                                                            "gpt-x")
    assert built.trace["usage"] == {"prompt_tokens": 30, "completion_tokens": 7}


def test_a_trace_without_a_query_is_incomplete() -> None:
    built = assemble([span("a", "", 0, 10, **{KIND: "LLM", "output.value": "hi"})])
    assert built.missing == ["query", "documents"]


def test_one_export_of_several_traces_buffers_each_and_caps_spans_per_trace(api_factory, stack, app: App) -> None:
    url = api_factory({**stack.env, "RAGPULSE_OTLP_MAX_SPANS_PER_TRACE": "2"})
    first, second = app.answer("How do I reset my router?"), app.answer("Why does it blink amber?")
    response = httpx.post(f"{url}/v1/otlp/v1/traces", json=otlp_json(app.take()), timeout=30)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2" and "over 2 spans in one trace" in partial["errorMessage"]  # 3 spans each
    with httpx.Client(base_url=url, timeout=30) as client:
        for trace_id in (first, second):
            assert read_back(client, trace_id)["status"] in ("done", "incomplete")   # each buffered, each handed over


@pytest.mark.parametrize(("deployment", "environment"), [
    ("production", "production"), ("Prod", "production"), ("prod-eu-1", "production"), ("live", "production"),
    ("eu-west-1", "production"),                       # a name ragpulse does not know keeps its alerts
    ("staging", "staging"), ("Staging-EU", "staging"), ("pre-prod", "staging"), ("non_prod", "staging"),
    ("dev_alice", "staging"), ("QA", "staging"), ("uat", "staging"), ("test", "staging"), ("development", "staging"),
    ("eval", "evaluation"), ("evaluation", "evaluation"),
    ("", None), ("  ", None),                           # no name: the trace's default, production
])
def test_a_deployment_name_is_read_as_one_of_the_three_environments(deployment: str, environment: str | None) -> None:
    assert deployment_environment(deployment) == environment


def test_the_earliest_span_that_names_a_deployment_gives_the_trace_its_environment() -> None:
    def named(span_id: str, parent: str, start: int, deployment: str, **attributes: object) -> SpanRecord:
        return msgspec.structs.replace(span(span_id, parent, start, start + 5, **attributes), deployment=deployment)
    spans = [named("b", "a", 1, "dev", **{f"{DOCS}.0.document.id": "d1", f"{DOCS}.0.document.content": MANUAL}),
             named("a", "", 0, "production", **{KIND: "CHAIN", "input.value": "reset?", "output.value": "Hold it."})]
    assert assemble(spans).trace["environment"] == "production"         # the root's, not the other service's
    unnamed = [msgspec.structs.replace(s, deployment="") for s in spans]
    assert "environment" not in assemble(unnamed).trace                 # the ingest default applies: production


def test_spans_buffered_before_deployments_were_read_still_decode() -> None:
    old = msgspec.msgpack.encode(["ab" * 16, "a" * 16, "", "root", 0, 10, "shop", {"input.value": "q"}])
    assert msgspec.msgpack.decode(old, type=SpanRecord).deployment == ""
