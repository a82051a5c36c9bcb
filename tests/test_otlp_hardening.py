"""OTLP under hostile input (issue 23): a poison trace is recorded `invalid` and the hand-over carries on for every
tenant; buffered traces and attributes are byte-capped; gzip and deflate bodies are read within the body limit;
deeply nested JSON is a 400 naming the path; late spans never overwrite or double-count a handed-over trace."""

from __future__ import annotations

import json
import time
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import msgspec
import pytest
import redis
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from opentelemetry.sdk.trace.export import SpanExportResult
from prometheus_client import CollectorRegistry

from ragpulse.config import keys
from ragpulse.config.settings import Settings
from ragpulse.exceptions import SpansInvalid
from ragpulse.model.trace import Trace
from ragpulse.otlp.assemble import assemble
from service.monitoring import QueueCollector
from tests.test_otlp import DOCS, KIND, App, otlp_json, read_back, span

pytestmark = pytest.mark.integration

KEYS = "acme:key-acme,globex:key-globex"
MiB = 1024 * 1024
SETTLE = 2.0


def attribute(body: dict, key: str) -> dict:
    """The OTLP/JSON AnyValue of the first span attribute named `key` (to poison in place)."""
    for resource in body["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for kv in span.get("attributes", []):
                    if kv["key"] == key:
                        return kv["value"]
    raise AssertionError(f"no attribute {key}")


def root_attribute(body: dict, key: str) -> dict:
    for span in body["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        if not span.get("parentSpanId"):
            return next(kv["value"] for kv in span["attributes"] if kv["key"] == key)
    raise AssertionError("no root span")


def counter(client: httpx.Client, name: str, **labels: str) -> float:
    """The sum over the series of `name` whose labels include `labels`."""
    total = 0.0
    for line in client.get("/metrics").text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.fixture
def queue() -> str:
    """A queue prefix of the test's own: its poison never reaches the session's API."""
    return f"test-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def tenants(api_factory, queue: str) -> Iterator[tuple[str, httpx.Client, httpx.Client]]:
    url = api_factory({"RAGPULSE_QUEUE": queue, "RAGPULSE_API_KEYS": KEYS, "RAGPULSE_SAMPLE_RATE": "1",
                       "RAGPULSE_OTLP_SETTLE_SECONDS": str(SETTLE)})
    with httpx.Client(base_url=url, timeout=30, headers={"Authorization": "Bearer key-acme"}) as acme, \
            httpx.Client(base_url=url, timeout=30, headers={"Authorization": "Bearer key-globex"}) as globex:
        yield url, acme, globex


# -- defect 1: one poison span must not stop the hand-over for everyone --------------------------------------------

def test_poison_traces_are_recorded_invalid_and_another_tenants_trace_is_still_handed_over(
        tenants, queue: str, redis_client: redis.Redis) -> None:
    _, acme, globex = tenants
    before = counter(acme, "ragpulse_otlp_traces_total", outcome="invalid")
    app, poisons = App("poisoned"), {}
    for name, poison in {"infinity": ("llm.token_count.prompt", {"doubleValue": "Infinity"}),
                         "nan": ("llm.token_count.completion", {"doubleValue": "NaN"}),
                         "nested": ("input.value", {"stringValue": "[" * 1000 + "]" * 1000})}.items():
        trace_id = app.answer("How do I reset my router?")
        body = otlp_json(app.take())
        key, value = poison
        target = root_attribute(body, key) if key == "input.value" else attribute(body, key)
        target.clear()
        target.update(value)
        assert acme.post("/v1/otlp/v1/traces", json=body).status_code == 200
        poisons[name] = trace_id
    evicted = app.answer("How do I reset my router?")
    assert acme.post("/v1/otlp/v1/traces", json=otlp_json(app.take())).status_code == 200
    member = keys.otlp_member("acme", evicted)
    assert redis_client.delete(keys.otlp_spans(queue, member)) == 1        # evicted before its hand-over
    poisons["evicted"] = evicted

    good_app = App("healthy")
    good = good_app.answer("How do I reset my router?")
    assert globex.post("/v1/otlp/v1/traces", json=otlp_json(good_app.take())).status_code == 200
    assert read_back(globex, good, until=("pending", "done"), timeout=SETTLE + 8)["app"] == "healthy"

    for name, trace_id in poisons.items():
        record = read_back(acme, trace_id, until=("invalid",), timeout=10)
        assert record["error"], name
        member = keys.otlp_member("acme", trace_id)
        assert redis_client.zscore(keys.otlp_pending(queue), member) is None, name
        for key in redis_client.scan_iter(match=f"*{trace_id}*"):
            assert redis_client.ttl(key) > 0, (name, key)            # nothing of the poison lives on without a TTL
    assert "llm.token_count.prompt" in read_back(acme, poisons["infinity"], until=("invalid",))["error"]
    assert "nested" in read_back(acme, poisons["nested"], until=("invalid",))["error"]
    assert "expired" in read_back(acme, poisons["evicted"], until=("invalid",))["error"]
    assert counter(acme, "ragpulse_otlp_traces_total", outcome="invalid") - before == len(poisons)


def test_a_stalled_handover_shows_in_the_lag_gauge(redis_client: redis.Redis, queue: str) -> None:
    """No loop runs on this queue: a trace due two minutes ago is what a stalled hand-over leaves (OTLPHandoverStalled
    reads this gauge)."""
    registry = CollectorRegistry()
    registry.register(QueueCollector(redis_client, Settings.from_env({"RAGPULSE_QUEUE": queue})))
    assert registry.get_sample_value("ragpulse_otlp_handover_lag_seconds") == 0
    pending = keys.otlp_pending(queue)
    redis_client.zadd(pending, {keys.otlp_member("acme", "ab" * 16): time.time() - 120})
    try:
        assert 119 < registry.get_sample_value("ragpulse_otlp_handover_lag_seconds") < 180
    finally:
        redis_client.delete(pending)


# -- issue 15: an attribute of the wrong type is coerced or dropped, not the whole trace -----------------------------

def test_wrongly_typed_attributes_are_coerced_or_dropped_with_a_note() -> None:
    spans = [
        span("a", "", 0, 10, **{KIND: "CHAIN", "input.value": "reset?", "output.value": "Hold it."}),
        span("b", "a", 1, 5, **{KIND: "RETRIEVER", f"{DOCS}.0.document.id": "d1", f"{DOCS}.0.document.score": "0.75",
                                 f"{DOCS}.1.document.id": "d2", f"{DOCS}.1.document.score": "high",
                                 f"{DOCS}.1.document.metadata": "[1, 2]"}),
        span("c", "a", 5, 9, **{KIND: "LLM", "llm.token_count.prompt": "30", "llm.token_count.completion": 7.0}),
    ]
    built = assemble(spans)
    assert [d.get("score") for d in built.trace["retrieved_docs"]] == [0.75, None]
    assert "metadata" not in built.trace["retrieved_docs"][1]
    assert built.trace["usage"] == {"prompt_tokens": 30, "completion_tokens": 7}
    notes = sorted(built.notes)                   # coerced: "0.75" and "30"; dropped: "high" and metadata [1, 2]
    assert [action for action, _ in notes] == ["coerced", "coerced", "dropped", "dropped"]
    assert "llm.token_count.prompt: '30' read as 30" in [what for _, what in notes]
    msgspec.convert(built.trace, Trace)                                                         # a valid trace


def test_a_token_count_out_of_range_is_dropped_with_a_note_not_the_trace() -> None:
    """-5 tokens, or 60 + 60 million over two LLM spans (over the schema's 100 million), once made the whole trace
    `invalid` (the odd-input table's otlp-token-count-negative); now only the count is dropped."""
    spans = [
        span("a", "", 0, 10, **{KIND: "CHAIN", "input.value": "reset?", "output.value": "Hold it."}),
        span("b", "a", 1, 5, **{KIND: "LLM", "llm.token_count.prompt": -5, "llm.token_count.completion": 60_000_000}),
        span("c", "a", 5, 9, **{KIND: "LLM", "llm.token_count.completion": 60_000_000}),
    ]
    built = assemble(spans)
    assert "usage" not in built.trace and built.trace["query"] == "reset?"
    assert sorted(what for _, what in built.notes) == [
        "llm.token_count.completion: the spans' sum 120000000 is over 100000000",
        "llm.token_count.prompt: -5 is outside 0 .. 100000000"]
    msgspec.convert(built.trace, Trace)                                                         # a valid trace


def test_values_no_trace_can_hold_are_invalid_naming_the_attribute() -> None:
    llm = span("c", "", 5, 9, **{KIND: "LLM", "llm.token_count.prompt": float("inf")})
    with pytest.raises(SpansInvalid, match="llm.token_count.prompt"):
        assemble([llm])
    deep = span("a", "", 0, 10, **{"input.value": '{"a":' * 65 + "1" + "}" * 65})         # 65 levels
    with pytest.raises(SpansInvalid, match="input.value holds JSON nested deeper than 64"):
        assemble([deep])
    with pytest.raises(SpansInvalid, match="expired"):
        assemble([])


def test_a_score_sent_as_a_string_no_longer_fails_the_trace(tenants) -> None:
    _, acme, _ = tenants
    before = counter(acme, "ragpulse_otlp_attributes_fixed_total", action="coerced")
    app = App("stringly")
    trace_id = app.answer("How do I reset my router?")
    body = otlp_json(app.take())
    score = attribute(body, f"{DOCS}.0.document.score")
    score.clear()
    score["stringValue"] = "0.9"
    assert acme.post("/v1/otlp/v1/traces", json=body).status_code == 200
    assert read_back(acme, trace_id, until=("pending", "done", "invalid"))["status"] != "invalid"
    assert counter(acme, "ragpulse_otlp_attributes_fixed_total", action="coerced") - before == 1


# -- defect 3: gzip and deflate bodies, within the body limit -------------------------------------------------------

def test_the_official_exporter_with_gzip_compression_delivers(client: httpx.Client, stack) -> None:
    app = App("gzipped")
    trace_id = app.answer("How do I reset my router?")
    exporter = OTLPSpanExporter(endpoint=f"{stack.url}/v1/otlp/v1/traces", compression=Compression.Gzip)
    assert exporter.export(app.take()) == SpanExportResult.SUCCESS
    assert read_back(client, trace_id)["status"] == "done"


def test_deflate_bodies_are_read_and_unknown_codings_are_415(client: httpx.Client) -> None:
    app = App("deflated")
    trace_id = app.answer("How do I reset my router?")
    body = json.dumps(otlp_json(app.take())).encode()
    headers = {"content-type": "application/json", "content-encoding": "deflate"}
    assert client.post("/v1/otlp/v1/traces", content=zlib.compress(body), headers=headers).json() == {}
    assert read_back(client, trace_id)["status"] == "done"
    refused = client.post("/v1/otlp/v1/traces", content=body, headers={**headers, "content-encoding": "br"})
    assert refused.status_code == 415 and "br" in refused.json()["detail"]
    corrupt = client.post("/v1/otlp/v1/traces", content=b"\x1f\x8b not gzip", headers={
        **headers, "content-encoding": "gzip"})
    assert corrupt.status_code == 400


def test_a_gzip_bomb_is_refused_with_413_within_the_body_limit(api_factory, stack) -> None:
    limit = 4 * MiB
    url = api_factory({**stack.env, "RAGPULSE_MAX_BODY_BYTES": str(limit)})
    squeezer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MiB)
    bomb = b"".join(squeezer.compress(zeros) for _ in range(256)) + squeezer.flush()    # 256 MiB in ~250 KiB
    assert len(bomb) < limit
    before = peak_rss(api_factory.procs[url].process.pid)
    response = httpx.post(f"{url}/v1/otlp/v1/traces", content=bomb, timeout=60, headers={
        "content-type": "application/x-protobuf", "content-encoding": "gzip"})
    assert response.status_code == 413 and str(limit) in response.json()["detail"]
    assert peak_rss(api_factory.procs[url].process.pid) - before < 4 * limit    # the limit and its copies, not 256 MiB


def peak_rss(pid: int) -> int:
    """The process's peak resident memory (VmHWM) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


# -- defect 4: deep OTLP/JSON is a 400 naming the path -------------------------------------------------------------

@pytest.mark.parametrize("levels", [200, 1000, 5000])
def test_deeply_nested_otlp_json_is_a_400_naming_the_path(client: httpx.Client, levels: int) -> None:
    app = App("deep")
    app.answer("How do I reset my router?")
    body = otlp_json(app.take())
    target = root_attribute(body, "input.value")
    target.clear()
    target["arrayValue"] = {"values": ["BOTTOM"]}
    if levels < 900:         # AnyValues in AnyValues, three JSON levels each
        for _ in range(levels // 3):
            target["arrayValue"] = {"values": [{"arrayValue": target["arrayValue"]}]}
        text = json.dumps(body).replace('"BOTTOM"', '{"stringValue": "bottom"}')
    else:                    # json.dumps cannot even write 1,000 levels: brackets nested by hand
        text = json.dumps(body).replace('"BOTTOM"', "[" * levels + "]" * levels)
    response = client.post("/v1/otlp/v1/traces", content=text, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text[:300]
    problem = response.json()
    path = problem["errors"][0]["path"]
    assert path.startswith("$.resourceSpans[0].scopeSpans[0].spans[") and ".attributes[" in path
    assert "nested deeper than 128 levels" in problem["detail"]


# -- defect 2: one trace cannot make the API load an unbounded amount ----------------------------------------------

def flood_exports(count: int, doc_bytes: int, docs_per_span: int) -> tuple[str, list[bytes]]:
    """One trace as `count` protobuf exports of one span each (children first, the root last, as SDKs send them),
    every child carrying `docs_per_span` documents of `doc_bytes` characters: (trace id, bodies)."""
    app = App("flooder")
    text = "x" * doc_bytes
    with app.tracer.start_as_current_span("rag") as root:
        root.set_attribute(KIND, "CHAIN")
        root.set_attribute("input.value", "How do I reset my router?")
        for _ in range(count - 1):
            with app.tracer.start_as_current_span("retrieve") as retriever:
                retriever.set_attribute(KIND, "RETRIEVER")
                for i in range(docs_per_span):
                    retriever.set_attribute(f"{DOCS}.{i}.document.id", f"d{i}")
                    retriever.set_attribute(f"{DOCS}.{i}.document.content", text)
        trace_id = format(root.get_span_context().trace_id, "032x")
    return trace_id, [encode_spans([span]).SerializeToString() for span in app.take()]


def test_a_one_trace_flood_is_capped_in_bytes_and_keeps_the_api_small(api_factory, queue: str) -> None:
    url = api_factory({"RAGPULSE_QUEUE": queue, "RAGPULSE_SAMPLE_RATE": "1"})
    pid = api_factory.procs[url].process.pid
    trace_id, bodies = flood_exports(20, 1_000_000, 5)          # 20 exports of ~5 MB, one trace: 100 MB offered
    started = peak_rss(pid)
    refused = 0
    with httpx.Client(base_url=url, timeout=60) as client:
        for body in bodies:
            response = client.post("/v1/otlp/v1/traces", content=body, headers={
                "content-type": "application/x-protobuf"})
            assert response.status_code == 200
            answer = ExportTraceServiceResponse.FromString(response.content)
            refused += answer.partial_success.rejected_spans
            if answer.partial_success.rejected_spans:
                assert "bytes buffered for one trace" in answer.partial_success.error_message
        record = read_back(client, trace_id, until=("pending", "done", "incomplete", "invalid"))
        assert record["status"] != "invalid"
        assert refused >= 15                                   # 16 MiB of the ~100 MB offered is buffered at most
        assert counter(client, "ragpulse_otlp_spans_rejected_total", reason="too_large") >= refused
    # Measured: +50 MiB with the 16 MiB cap (the same at 120 exports), +196 MiB without it (the hand-over loaded all).
    assert peak_rss(pid) - started < 100 * MiB, (peak_rss(pid) - started) / MiB


def test_an_attribute_over_its_byte_cap_is_cut_with_a_warning(api_factory, queue: str) -> None:
    url = api_factory({"RAGPULSE_QUEUE": queue, "RAGPULSE_SAMPLE_RATE": "1",
                       "RAGPULSE_OTLP_MAX_ATTRIBUTE_BYTES": "1000"})
    trace_id, bodies = flood_exports(2, 5000, 1)             # one retriever with a 5,000-character document
    with httpx.Client(base_url=url, timeout=30) as client:
        before = counter(client, "ragpulse_otlp_attributes_fixed_total", action="truncated")
        answers = [client.post("/v1/otlp/v1/traces", content=body, headers={"content-type": "application/x-protobuf"})
                   for body in bodies]
        partial = ExportTraceServiceResponse.FromString(answers[0].content).partial_success
        assert partial.rejected_spans == 0 and "over 1000 bytes were truncated" in partial.error_message
        assert read_back(client, trace_id, until=("pending", "done"))["status"] in ("pending", "done")
        assert counter(client, "ragpulse_otlp_attributes_fixed_total", action="truncated") - before == 1


# -- defect 5: late spans neither overwrite nor double-count a handed-over trace -------------------------------------

def test_late_spans_are_refused_and_counted_and_the_done_record_stays(client: httpx.Client, stack) -> None:
    app = App(f"late-{uuid.uuid4().hex[:6]}")
    trace_id = app.answer("How do I reset my router?")
    spans = app.take()
    root = [s for s in spans if s.parent is None]
    retriever = [s for s in spans if s.name == "retrieve"]
    assert OTLPSpanExporter(endpoint=f"{stack.url}/v1/otlp/v1/traces").export(spans) == SpanExportResult.SUCCESS
    done = read_back(client, trace_id)
    assert done["status"] == "done"
    service = app.provider.resource.attributes["service.name"]
    assert client.get(f"/v1/monitor/{service}").json()["traces_received"] == 1
    late_before = counter(client, "ragpulse_otlp_spans_rejected_total", reason="late")

    body = encode_spans([*retriever, *root]).SerializeToString()     # a retried export, and a span that was slow
    response = client.post("/v1/otlp/v1/traces", content=body, headers={"content-type": "application/x-protobuf"})
    partial = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert partial.rejected_spans == 2 and "handed over already" in partial.error_message
    assert counter(client, "ragpulse_otlp_spans_rejected_total", reason="late") - late_before == 2
    time.sleep(SETTLE + 2)                  # past the settle time a second hand-over would have come after
    assert client.get(f"/v1/traces/{trace_id}").json() == done
    assert client.get(f"/v1/monitor/{service}").json()["traces_received"] == 1
