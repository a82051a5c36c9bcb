"""The table of odd inputs: hostile bodies, headers and query strings for every endpoint that reads one.

Each case is one request to the live API (tests/test_api_limits.py sends them all to the session's API) with the
status it must get and, for a 4xx, a path its problem body must name (`$.traces[0].query` in a body, `query.limit`,
`path.app`, `header.content-type`). A 2xx is expected only where the input is accepted by design (a whole float for
an integer, intake/whole.py; a dot-led trace id like `.x`; an OTLP span whose attributes are poison, which is taken
with 200 and recorded `invalid` by the hand-over). `before` is a request sent first (an Idempotency-Key's first use).

The categories follow the hostile probe of issue 23 (188 bad bodies) and its OTLP cases: wrong JSON types at every
level, missing, unknown and repeated fields, nulls, empty and over-long strings and lists, numbers out of range,
non-JSON numbers, deep nesting, invalid UTF-8, lone surrogates, NUL bytes, a BOM, trailing garbage, truncated JSON,
wrong content types and codings, compression bombs, protobuf garbage, bad path segments, headers and query strings.
"""

from __future__ import annotations

import gzip
import json
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

JSON = "application/json"
PROTOBUF = "application/x-protobuf"
BATCH = "POST /v1/batches"
DRY_RUN = "POST /v1/batches?dry_run=true"
TRACES = "POST /v1/traces"
CALIBRATION = "POST /v1/calibrations"
LABELS = "POST /v1/labels"
POLICY = "PUT /v1/apps/odd-inputs/policy"
OTLP = "POST /v1/otlp/v1/traces"
RAW = "RAW"
"""A case whose body is the whole request, sent as it is on a socket (bytes no HTTP client would send)."""
RESULTS = "GET /v1/jobs/{job}/results"
COMPARE = "GET /v1/jobs/{job}/compare?baseline={job}"
MiB = 1024 * 1024


@dataclass(frozen=True)
class Odd:
    """One odd request and what it must get.

    `request` is "METHOD /path?query"; `{job}` stands for a finished job of the session. `path` is a path the problem
    must name (None: the input has no single place at fault, e.g. bytes that are not JSON). `check` reads the answer's
    JSON further. `handed_over` is (OpenTelemetry trace id, status, app) of an OTLP export taken with 200:
    the hand-over must record the trace with that status (`invalid` for poison, `done` for an attribute coerced or
    dropped) under that app."""

    id: str
    request: str
    body: bytes | None
    status: int
    path: str | None = None
    content_type: str | None = JSON
    headers: tuple[tuple[str, str], ...] = ()
    before: Odd | None = None
    check: Callable[[Any], None] | None = None
    handed_over: tuple[str, str, str] | None = None


# -- body builders ----------------------------------------------------------------------------------------------------

def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


def trace(**fields: Any) -> dict[str, Any]:
    return {"query": "q", **fields}


def batch(*traces: dict[str, Any], **top: Any) -> bytes:
    return dumps({"traces": list(traces) or [trace()], **top})


def doc(**fields: Any) -> dict[str, Any]:
    return {"id": "d1", **fields}


def three_docs(third: dict[str, Any]) -> bytes:
    """A trace whose third retrieved document is `third` (the first two are fine)."""
    return batch(trace(retrieved_docs=[doc(), doc(id="d2"), third]))


def options(**fields: Any) -> bytes:
    return batch(options=fields)


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def with_metadata(metadata: str, doc_metadata: str | None = None) -> bytes:
    extra = f', "retrieved_docs": [{{"id": "d1", "metadata": {doc_metadata}}}]' if doc_metadata else ""
    return f'{{"traces": [{{"query": "q", "metadata": {metadata}{extra}}}]}}'.encode()


EVIDENCE_HUGE_INT = dumps({"traces": [{"query": "q", "session_id": "s", "session_evidence": [
    {"id": "d", "metadata": {"k": 10**23}}]}]})
"""A session-evidence document whose metadata holds an integer msgpack cannot store (past 64 bits)."""


def raw(query: bytes) -> bytes:
    """A batch whose query is `query` spliced in raw: bytes (escapes, invalid UTF-8) no JSON encoder would write."""
    return b'{"traces": [{"query": "' + query + b'"}]}'


def long(n: int) -> str:
    return "x" * n


def dry_count(expected: int) -> Callable[[Any], None]:
    def check(answer: Any) -> None:
        assert answer["dry_run"] is True and answer["trace_count"] == expected, answer
    return check


def truncated_at(n: int) -> Callable[[Any], None]:
    def check(problem: Any) -> None:
        assert problem["errors_truncated"] is True and len(problem["errors"]) == n, problem
    return check


# -- the batch body: top level, trace fields, documents, options ------------------------------------------------------

TOP_LEVEL = [
    Odd("empty-body", BATCH, b"", 400),
    Odd("whitespace-body", BATCH, b" \n\t ", 400),
    Odd("null-top-level", BATCH, b"null", 422, "$"),
    Odd("array-top-level", BATCH, b"[]", 422, "$"),
    Odd("array-of-traces-top-level", BATCH, b'[{"query": "q"}]', 422, "$"),
    Odd("string-top-level", BATCH, b'"traces"', 422, "$"),
    Odd("number-top-level", BATCH, b"42", 422, "$"),
    Odd("bool-top-level", BATCH, b"true", 422, "$"),
    Odd("empty-object", BATCH, b"{}", 422, "$"),
    Odd("unknown-top-level-field", BATCH, batch(trace(), extra=1), 422, "$"),
    Odd("misspelt-top-level-field", BATCH, b'{"trace": [{"query": "q"}]}', 422, "$"),
    Odd("traces-null", BATCH, b'{"traces": null}', 422, "$.traces"),
    Odd("traces-empty", BATCH, b'{"traces": []}', 422, "$.traces"),
    Odd("traces-object", BATCH, b'{"traces": {"query": "q"}}', 422, "$.traces"),
    Odd("traces-string", BATCH, b'{"traces": "q"}', 422, "$.traces"),
    Odd("traces-number", BATCH, b'{"traces": 1}', 422, "$.traces"),
    Odd("trace-null", BATCH, b'{"traces": [null]}', 422, "$.traces[0]"),
    Odd("trace-array", BATCH, b'{"traces": [[]]}', 422, "$.traces[0]"),
    Odd("trace-string", BATCH, b'{"traces": ["q"]}', 422, "$.traces[0]"),
    Odd("trace-number", BATCH, b'{"traces": [{"query": "q"}, 7]}', 422, "$.traces[1]"),
    Odd("trace-empty-object", BATCH, b'{"traces": [{}]}', 422, "$.traces[0]"),
    Odd("second-trace-missing-query", BATCH, batch(trace(), {"answer": "a"}), 422, "$.traces[1]"),
    Odd("unknown-trace-field", BATCH, batch(trace(gold_docs=["d"])), 422, "$.traces[0]"),
    Odd("errors-listed-for-every-trace", BATCH, batch(trace(), trace(query=""), trace(), trace(query=1)), 422,
        "$.traces[3].query"),
    Odd("errors-truncated-at-100", BATCH, batch(*[trace(query="") for _ in range(150)]), 422, "$.traces[99].query",
        check=truncated_at(100)),
    Odd("over-max-traces-per-batch", BATCH, b'{"traces": [' + b",".join([b'{"query":"q"}'] * 10_001) + b"]}", 413,
        "$.traces"),
]

SYNTAX = [
    Odd("trailing-after-number", BATCH, b"2x", 400),
    Odd("trailing-after-array", BATCH, b"[]x", 400),
    Odd("trailing-after-object", BATCH, b'{"traces":[]}}', 400),
    Odd("trailing-garbage-after-valid-batch", BATCH, batch() + b"garbage", 400),
    Odd("second-json-document", BATCH, batch() + b"\n" + batch(), 400),
    Odd("truncated-mid-string", BATCH, b'{"traces": [{"query": "q', 400),
    Odd("truncated-mid-object", BATCH, b'{"traces": [{"query": "q"', 400),
    Odd("truncated-after-colon", BATCH, b'{"traces":', 400),
    Odd("truncated-escape", BATCH, b'{"traces": [{"query": "\\u12', 400),
    Odd("unclosed-10000-levels", BATCH, b"[" * 10_000, 400),
    Odd("single-quotes", BATCH, b"{'traces': [{'query': 'q'}]}", 400),
    Odd("unquoted-key", BATCH, b'{traces: [{"query": "q"}]}', 400),
    Odd("trailing-comma-in-array", BATCH, b'{"traces": [{"query": "q"},]}', 400),
    Odd("trailing-comma-in-object", BATCH, b'{"traces": [{"query": "q",}]}', 400),
    Odd("line-comment", BATCH, b'// c\n{"traces": [{"query": "q"}]}', 400),
    Odd("block-comment", BATCH, b'{"traces": /* c */ [{"query": "q"}]}', 400),
    Odd("nan-literal", BATCH, b'{"traces": [{"query": "q", "retrieved_docs": [{"id": "d", "score": NaN}]}]}', 400),
    Odd("infinity-literal", BATCH, b'{"traces": [{"query": "q", "retrieved_docs": [{"id": "d", "score": Infinity}]}]}',
        400),
    Odd("minus-infinity-literal", POLICY, b'{"sample_rate": -Infinity}', 400),
    Odd("leading-zero-number", POLICY, b'{"sample_rate": 01}', 400),
    Odd("hex-number", POLICY, b'{"sample_rate": 0x1}', 400),
    Odd("plus-sign-number", POLICY, b'{"sample_rate": +1}', 400),
    Odd("bare-dot-number", POLICY, b'{"sample_rate": .5}', 400),
    Odd("utf8-bom", BATCH, b"\xef\xbb\xbf" + batch(), 400),
    Odd("utf16-body", BATCH, batch().decode().encode("utf-16"), 400),
    Odd("invalid-utf8-in-string", BATCH, raw(b"\xff\xfe"), 400),
    Odd("overlong-utf8-in-string", BATCH, raw(b"\xc0\xaf"), 400),
    Odd("truncated-utf8-in-string", BATCH, raw(b"\xe2\x82"), 400),
    Odd("utf8-encoded-surrogate", BATCH, raw(b"\xed\xa0\x80"), 400),
    Odd("raw-nul-in-string", BATCH, raw(b"a\x00b"), 400),
    Odd("raw-newline-in-string", BATCH, raw(b"a\nb"), 400),
    Odd("raw-nul-outside-string", BATCH, b'{"traces": \x00[{"query": "q"}]}', 400),
    Odd("bad-escape", BATCH, raw(b"\\x41"), 400),
    # a lone surrogate escape is well-formed JSON text but no Unicode string: msgspec refuses the body (400), so no
    # string that cannot be encoded as UTF-8 (nor stored, nor sent to a judge) gets in
    Odd("lone-high-surrogate-in-query", BATCH, raw(b"\\ud800"), 400),
    Odd("lone-low-surrogate-in-answer", BATCH, b'{"traces": [{"query": "q", "answer": "\\udc00"}]}', 400),
    Odd("lone-surrogate-in-metadata-key", BATCH, with_metadata('{"\\ud800": 1}'), 400),
    Odd("lone-surrogate-in-doc-id", BATCH, b'{"traces": [{"query": "q", "retrieved_docs": [{"id": "\\ud83d"}]}]}',
        400),
    Odd("lone-surrogate-in-online-trace", TRACES, raw(b"x\\ud800y"), 400),
    Odd("nesting-1000-levels", BATCH, f'{{"traces": {nested(1000)}}}'.encode(), 400),
    Odd("nesting-100000-levels", BATCH, f'{{"traces": {nested(100_000)}}}'.encode(), 400),
    Odd("nesting-1000-levels-in-metadata", BATCH, with_metadata(f'{{"x": {nested(1000)}}}'), 400),
    Odd("nesting-1000-objects-in-metadata", BATCH, with_metadata('{"a":' * 1000 + "1" + "}" * 1000), 400),
    Odd("nesting-100-levels-in-metadata", BATCH, with_metadata(f'{{"x": {nested(100)}}}'), 422,
        "$.traces[0].metadata.x" + "[0]" * 63),
    Odd("nesting-65-objects-in-doc-metadata", BATCH, with_metadata("{}", '{"a":' * 65 + "1" + "}" * 65), 422,
        "$.traces[0].retrieved_docs[0].metadata" + ".a" * 64),
]

DUPLICATES = [
    Odd("duplicate-key-top-level", BATCH, b'{"traces": [{"query": "q"}], "traces": [{"query": "r"}]}', 422,
        "$.traces"),
    Odd("duplicate-key-in-trace", BATCH, b'{"traces": [{"query": "q", "query": "other"}]}', 422, "$.traces[0].query"),
    Odd("duplicate-key-in-doc", BATCH, b'{"traces": [{"query": "q", "retrieved_docs": [{"id": "a", "id": "b"}]}]}',
        422, "$.traces[0].retrieved_docs[0].id"),
    Odd("duplicate-key-in-relevance", BATCH, b'{"traces": [{"query": "q", "relevance": {"d": 1, "d": 3}}]}', 422,
        "$.traces[0].relevance.d"),
    Odd("duplicate-key-in-options", DRY_RUN, b'{"traces": [{"query": "q"}], "options": {"k": [1], "k": [5]}}', 422,
        "$.options.k"),
    Odd("duplicate-key-in-metadata", BATCH, with_metadata('{"a:b": 1, "c": "x:y", "a:b": 2}'), 422,
        '$.traces[0].metadata["a:b"]'),
    Odd("duplicate-key-beside-escaped-colon", BATCH, with_metadata('{"t": "12\\u003a00", "t": "13:00"}'), 422,
        "$.traces[0].metadata.t"),
    Odd("duplicate-key-escaped-spelling", BATCH, b'{"traces": [{"query": "q", "\\u0071uery": "r"}]}', 422,
        "$.traces[0].query"),
    Odd("duplicate-key-in-policy", POLICY, b'{"sample_rate": 0.5, "sample_rate": 1}', 422, "$.sample_rate"),
    Odd("duplicate-key-in-online-trace", TRACES, b'{"traces": [{"query": "q", "app": "a", "app": "b"}]}', 422,
        "$.traces[0].app"),
    Odd("duplicate-key-in-label", LABELS, b'{"trace_id": "t", "trace_id": "u", "reviewer": "r", "hallucinated": true,'
        b' "abstained": false}', 422, "$.trace_id"),
    Odd("duplicate-key-in-calibration", CALIBRATION, b'{"job_id": "j", "job_id": "k", "labels": [{"trace_id": "t", '
        b'"faithful": true}]}', 422, "$.job_id"),
]

TRACE_FIELDS = [
    Odd("query-null", BATCH, batch(trace(query=None)), 422, "$.traces[0].query"),
    Odd("query-empty", BATCH, batch(trace(query="")), 422, "$.traces[0].query"),
    Odd("query-over-32768-chars", BATCH, batch(trace(query=long(32_769))), 422, "$.traces[0].query"),
    Odd("query-number", BATCH, batch(trace(query=1)), 422, "$.traces[0].query"),
    Odd("query-bool", BATCH, batch(trace(query=True)), 422, "$.traces[0].query"),
    Odd("query-list", BATCH, batch(trace(query=["q"])), 422, "$.traces[0].query"),
    Odd("query-object", BATCH, batch(trace(query={"text": "q"})), 422, "$.traces[0].query"),
    Odd("trace-id-empty", BATCH, batch(trace(trace_id="")), 422, "$.traces[0].trace_id"),
    Odd("trace-id-over-256-chars", BATCH, batch(trace(trace_id=long(257))), 422, "$.traces[0].trace_id"),
    Odd("trace-id-control-char", BATCH, batch(trace(trace_id="a\x01b")), 422, "$.traces[0].trace_id"),
    Odd("trace-id-escaped-nul", BATCH, batch(trace(trace_id="a\x00b")), 422, "$.traces[0].trace_id"),
    Odd("trace-id-number", BATCH, batch(trace(trace_id=12)), 422, "$.traces[0].trace_id"),
    Odd("trace-id-repeated-in-batch", BATCH, batch(trace(trace_id="t"), trace(trace_id="t")), 422,
        "$.traces[1].trace_id"),
    Odd("app-empty", BATCH, batch(trace(app="")), 422, "$.traces[0].app"),
    Odd("app-dot", BATCH, batch(trace(app=".")), 422, "$.traces[0].app"),
    Odd("app-dot-dot", BATCH, batch(trace(app="..")), 422, "$.traces[0].app"),
    Odd("app-dot-led", BATCH, batch(trace(app=".x")), 422, "$.traces[0].app"),
    Odd("app-slash", BATCH, batch(trace(app="a/b")), 422, "$.traces[0].app"),
    Odd("app-non-ascii", BATCH, batch(trace(app="äpp")), 422, "$.traces[0].app"),
    Odd("app-over-64-chars", BATCH, batch(trace(app=long(65))), 422, "$.traces[0].app"),
    Odd("app-null", BATCH, batch(trace(app=None)), 422, "$.traces[0].app"),
    Odd("answer-number", BATCH, batch(trace(answer=5)), 422, "$.traces[0].answer"),
    Odd("answer-over-1-mib", BATCH, batch(trace(answer=long(MiB + 1))), 422, "$.traces[0].answer"),
    Odd("reference-answer-list", BATCH, batch(trace(reference_answer=["a"])), 422, "$.traces[0].reference_answer"),
    Odd("gold-doc-ids-string", BATCH, batch(trace(gold_doc_ids="d1")), 422, "$.traces[0].gold_doc_ids"),
    Odd("gold-doc-ids-empty-id", BATCH, batch(trace(gold_doc_ids=["d1", ""])), 422, "$.traces[0].gold_doc_ids[1]"),
    Odd("gold-doc-ids-number-id", BATCH, batch(trace(gold_doc_ids=[1])), 422, "$.traces[0].gold_doc_ids[0]"),
    Odd("gold-doc-ids-over-10000", BATCH, batch(trace(gold_doc_ids=["d"] * 10_001)), 422, "$.traces[0].gold_doc_ids"),
    Odd("gold-and-relevance-both", BATCH, batch(trace(gold_doc_ids=["d"], relevance={"d": 1})), 422, "$.traces[0]"),
    Odd("relevance-grade-over-3", BATCH, batch(trace(relevance={"d": 4})), 422, "$.traces[0].relevance[...]"),
    Odd("relevance-grade-negative", BATCH, batch(trace(relevance={"d": -1})), 422, "$.traces[0].relevance[...]"),
    Odd("relevance-grade-string", BATCH, batch(trace(relevance={"d": "2"})), 422, "$.traces[0].relevance[...]"),
    Odd("relevance-grade-bool", BATCH, batch(trace(relevance={"d": True})), 422, "$.traces[0].relevance[...]"),
    Odd("relevance-grade-fraction", BATCH, batch(trace(relevance={"d": 2.5})), 422, "$.traces[0].relevance[...]"),
    Odd("relevance-grade-huge-int", BATCH, b'{"traces": [{"query": "q", "relevance": {"d": 99999999999999999999}}]}',
        422, "$.traces[0].relevance[...]"),
    Odd("relevance-empty-doc-id", BATCH, batch(trace(relevance={"": 1})), 422, "$.traces[0].relevance"),
    Odd("relevance-list", BATCH, batch(trace(relevance=[["d", 1]])), 422, "$.traces[0].relevance"),
    Odd("answerable-string", BATCH, batch(trace(answerable="yes")), 422, "$.traces[0].answerable"),
    Odd("answerable-number", BATCH, batch(trace(answerable=1)), 422, "$.traces[0].answerable"),
    Odd("question-type-unknown", BATCH, batch(trace(question_type="trivia")), 422, "$.traces[0].question_type"),
    Odd("source-unknown", BATCH, batch(trace(source="web")), 422, "$.traces[0].source"),
    Odd("generator-model-over-256-chars", BATCH, batch(trace(generator_model=long(257))), 422,
        "$.traces[0].generator_model"),
    Odd("citations-string", BATCH, batch(trace(citations="d1")), 422, "$.traces[0].citations"),
    Odd("citations-over-1000", BATCH, batch(trace(citations=["d"] * 1001)), 422, "$.traces[0].citations"),
    Odd("timestamp-not-a-date", BATCH, batch(trace(timestamp="yesterday")), 422, "$.traces[0].timestamp"),
    Odd("timestamp-month-13", BATCH, batch(trace(timestamp="2026-13-01T00:00:00Z")), 422, "$.traces[0].timestamp"),
    Odd("timestamp-epoch-number", BATCH, batch(trace(timestamp=1_700_000_000)), 422, "$.traces[0].timestamp"),
    Odd("timestamp-before-year-1-in-utc", BATCH, batch(trace(timestamp="0001-01-01T03:02:03+16:00")), 422,
        "$.traces[0]"),   # was a 500: the store's msgpack write converts to UTC
    Odd("timestamp-after-year-9999-in-utc", TRACES, batch(trace(timestamp="9999-12-31T23:00:00-05:00")), 422,
        "$.traces[0]"),
    Odd("updated-at-before-year-1-in-utc", BATCH,
        batch(trace(retrieved_docs=[{"id": "d", "updated_at": "0001-01-01T00:00:00+01:00"}])), 422,
        "$.traces[0].retrieved_docs[0]"),
    Odd("metadata-string", BATCH, batch(trace(metadata="x")), 422, "$.traces[0].metadata"),
    Odd("metadata-list", BATCH, batch(trace(metadata=[1])), 422, "$.traces[0].metadata"),
    Odd("number-out-of-range-in-metadata", BATCH, with_metadata('{"x": -1e999}'), 422, "$.traces[0].metadata[...]"),
    Odd("int-over-64-bits-in-metadata", BATCH, with_metadata('{"n": 18446744073709551616}'), 422,
        "$.traces[0].metadata.n"),
    Odd("int-over-64-bits-in-metadata-dry-run", DRY_RUN, with_metadata('{"n": 18446744073709551616}'), 422,
        "$.traces[0].metadata.n"),
    Odd("int-under-64-bits-in-doc-metadata", BATCH, with_metadata("{}", '{"ids": [1, -9223372036854775809]}'), 422,
        "$.traces[0].retrieved_docs[0].metadata.ids[1]"),
    Odd("int-300-digits-in-metadata", BATCH, with_metadata('{"n": ' + "9" * 300 + "}"), 422, "$.traces[0].metadata.n"),
    *(Odd(f"int-over-64-bits-in-session-evidence-metadata{suffix}", request, EVIDENCE_HUGE_INT, 422,
          "$.traces[0].session_evidence[0].metadata.k") for suffix, request in (("", BATCH), ("-dry-run", DRY_RUN),
                                                                                ("-online", TRACES))),
    Odd("int-over-64-bits-in-bound-batch-metadata", BATCH,
        batch(trace(metadata={"k": 10**23}), dataset={"name": "no-such-dataset-here", "version": 1}), 422,
        "$.traces[0].metadata.k"),
    Odd("dataset-version-over-64-bits-in-batch", DRY_RUN, batch(trace(), dataset={"name": "faq", "version": 2**64}),
        422, "$.dataset.version"),
    Odd("principal-string", BATCH, batch(trace(principal="alice")), 422, "$.traces[0].principal"),
    Odd("principal-groups-string", BATCH, batch(trace(principal={"groups": "g"})), 422, "$.traces[0].principal.groups"),
    Odd("principal-empty-group", BATCH, batch(trace(principal={"groups": ["g", ""]})), 422,
        "$.traces[0].principal.groups[1]"),
    Odd("principal-groups-over-1000", BATCH, batch(trace(principal={"groups": ["g"] * 1001})), 422,
        "$.traces[0].principal.groups"),
    Odd("principal-group-over-256-chars", BATCH, batch(trace(principal={"groups": [long(257)]})), 422,
        "$.traces[0].principal.groups[0]"),
    Odd("principal-id-over-256-chars", BATCH, batch(trace(principal={"id": long(257)})), 422, "$.traces[0].principal.id"),
    Odd("principal-id-number", BATCH, batch(trace(principal={"id": 5})), 422, "$.traces[0].principal.id"),
    Odd("principal-unknown-field", BATCH, batch(trace(principal={"role": "admin"})), 422, "$.traces[0].principal"),
    Odd("candidates-over-10000", BATCH, batch(trace(candidates=["d"] * 10_001)), 422, "$.traces[0].candidates"),
    Odd("latency-negative", BATCH, batch(trace(latency_ms={"retrieval": -1})), 422, "$.traces[0].latency_ms.retrieval"),
    Odd("latency-over-a-day", BATCH, batch(trace(latency_ms={"total": 86_400_001})), 422,
        "$.traces[0].latency_ms.total"),
    Odd("latency-string", BATCH, batch(trace(latency_ms={"generation": "5"})), 422,
        "$.traces[0].latency_ms.generation"),
    Odd("latency-bool", BATCH, batch(trace(latency_ms={"rerank": True})), 422, "$.traces[0].latency_ms.rerank"),
    Odd("latency-1e309", BATCH, b'{"traces": [{"query": "q", "latency_ms": {"total": 1e309}}]}', 422,
        "$.traces[0].latency_ms.total"),
    Odd("latency-unknown-stage", BATCH, batch(trace(latency_ms={"embed": 1})), 422, "$.traces[0].latency_ms"),
    Odd("usage-tokens-negative", BATCH, batch(trace(usage={"prompt_tokens": -1})), 422,
        "$.traces[0].usage.prompt_tokens"),
    Odd("usage-tokens-over-1e8", BATCH, batch(trace(usage={"completion_tokens": 100_000_001})), 422,
        "$.traces[0].usage.completion_tokens"),
    Odd("usage-tokens-fraction", BATCH, batch(trace(usage={"prompt_tokens": 3.5})), 422,
        "$.traces[0].usage.prompt_tokens"),
    Odd("usage-tokens-bool", BATCH, batch(trace(usage={"prompt_tokens": True})), 422,
        "$.traces[0].usage.prompt_tokens"),
    Odd("usage-tokens-string", BATCH, batch(trace(usage={"prompt_tokens": "3"})), 422,
        "$.traces[0].usage.prompt_tokens"),
    Odd("usage-tokens-over-64-bits", BATCH, b'{"traces": [{"query": "q", "usage": {"prompt_tokens": '
        b"18446744073709551616}}]}", 422, "$.traces[0].usage.prompt_tokens"),
    Odd("usage-tokens-1e400", BATCH, b'{"traces": [{"query": "q", "usage": {"prompt_tokens": 1e400}}]}', 422,
        "$.traces[0].usage.prompt_tokens"),
    Odd("usage-cost-over-1000", BATCH, batch(trace(usage={"cost_usd": 1000.01})), 422, "$.traces[0].usage.cost_usd"),
    Odd("usage-cost-tiny-negative", BATCH, batch(trace(usage={"cost_usd": -1e-300})), 422,
        "$.traces[0].usage.cost_usd"),
]

DOCUMENTS = [
    Odd("docs-null", BATCH, batch(trace(retrieved_docs=None)), 422, "$.traces[0].retrieved_docs"),
    Odd("docs-object", BATCH, batch(trace(retrieved_docs={"id": "d"})), 422, "$.traces[0].retrieved_docs"),
    Odd("docs-over-1000", BATCH, batch(trace(retrieved_docs=[doc()] * 1001)), 422, "$.traces[0].retrieved_docs"),
    Odd("third-doc-null", BATCH, three_docs(None), 422, "$.traces[0].retrieved_docs[2]"),
    Odd("third-doc-string", BATCH, three_docs("d3"), 422, "$.traces[0].retrieved_docs[2]"),
    Odd("third-doc-missing-id", BATCH, three_docs({"text": "t"}), 422, "$.traces[0].retrieved_docs[2]"),
    Odd("third-doc-id-empty", BATCH, three_docs(doc(id="")), 422, "$.traces[0].retrieved_docs[2].id"),
    Odd("third-doc-id-number", BATCH, three_docs(doc(id=3)), 422, "$.traces[0].retrieved_docs[2].id"),
    Odd("third-doc-id-null", BATCH, three_docs(doc(id=None)), 422, "$.traces[0].retrieved_docs[2].id"),
    Odd("third-doc-id-over-512-chars", BATCH, three_docs(doc(id=long(513))), 422, "$.traces[0].retrieved_docs[2].id"),
    Odd("doc-unknown-field", BATCH, three_docs(doc(title="t")), 422, "$.traces[0].retrieved_docs[2]"),
    Odd("doc-text-number", BATCH, three_docs(doc(text=1)), 422, "$.traces[0].retrieved_docs[2].text"),
    Odd("doc-text-over-1-mib", BATCH, three_docs(doc(text=long(MiB + 1))), 422, "$.traces[0].retrieved_docs[2].text"),
    Odd("doc-chunk-id-over-512-chars", BATCH, three_docs(doc(chunk_id=long(513))), 422,
        "$.traces[0].retrieved_docs[2].chunk_id"),
    Odd("doc-score-string", BATCH, three_docs(doc(score="0.9")), 422, "$.traces[0].retrieved_docs[2].score"),
    Odd("doc-score-bool", BATCH, three_docs(doc(score=False)), 422, "$.traces[0].retrieved_docs[2].score"),
    Odd("doc-score-1e999", BATCH, b'{"traces": [{"query": "q", "retrieved_docs": [{"id": "d", "score": 1e999}]}]}',
        422, "$.traces[0].retrieved_docs[0].score"),
    Odd("doc-score-minus-1e309", BATCH, b'{"traces": [{"query": "q", "retrieved_docs": [{"id": "d", "score": '
        b"-1e309}]}]}", 422, "$.traces[0].retrieved_docs[0].score"),
    Odd("doc-metadata-list", BATCH, three_docs(doc(metadata=[])), 422, "$.traces[0].retrieved_docs[2].metadata"),
    Odd("doc-acl-string", BATCH, three_docs(doc(acl="g")), 422, "$.traces[0].retrieved_docs[2].acl"),
    Odd("doc-acl-number-group", BATCH, three_docs(doc(acl=[1])), 422, "$.traces[0].retrieved_docs[2].acl[0]"),
    Odd("doc-acl-over-1000", BATCH, three_docs(doc(acl=["g"] * 1001)), 422, "$.traces[0].retrieved_docs[2].acl"),
    Odd("doc-updated-at-garbage", BATCH, three_docs(doc(updated_at="last tuesday")), 422,
        "$.traces[0].retrieved_docs[2].updated_at"),
    Odd("doc-updated-at-number", BATCH, three_docs(doc(updated_at=0)), 422, "$.traces[0].retrieved_docs[2].updated_at"),
    Odd("doc-error-in-second-trace", BATCH, batch(trace(), trace(retrieved_docs=[doc(), doc(score=[])])), 422,
        "$.traces[1].retrieved_docs[1].score"),
]

OPTIONS = [
    Odd("options-null", BATCH, batch(options=None), 422, "$.options"),
    Odd("options-list", BATCH, batch(options=[]), 422, "$.options"),
    Odd("options-unknown-field", BATCH, options(judge_model="x"), 422, "$.options"),
    Odd("k-empty", BATCH, options(k=[]), 422, "$.options.k"),
    Odd("k-zero", BATCH, options(k=[0]), 422, "$.options.k[0]"),
    Odd("k-over-1000", BATCH, options(k=[5, 1001]), 422, "$.options.k[1]"),
    Odd("k-string", BATCH, options(k="5"), 422, "$.options.k"),
    Odd("k-bool", BATCH, options(k=[True]), 422, "$.options.k[0]"),
    Odd("k-fraction", BATCH, options(k=[2.5]), 422, "$.options.k[0]"),
    Odd("k-over-20-cutoffs", BATCH, options(k=list(range(1, 22))), 422, "$.options.k"),
    Odd("gain-unknown", BATCH, options(gain="log"), 422, "$.options.gain"),
    Odd("judge-unknown", BATCH, options(judge="gpt"), 422, "$.options.judge"),
    Odd("repeats-3", BATCH, options(repeats=3), 422, "$.options.repeats"),
    Odd("repeats-zero", BATCH, options(repeats=0), 422, "$.options.repeats"),
    Odd("queue-unknown", BATCH, options(queue="fast"), 422, "$.options.queue"),
    Odd("sample-unknown", BATCH, options(sample="some"), 422, "$.options.sample"),
    Odd("callback-url-not-configured", BATCH, options(callback_url="https://example.com/hook"), 422,
        "$.options.callback_url"),
    Odd("callback-url-over-2048-chars", BATCH, options(callback_url="https://e.com/" + long(2040)), 422,
        "$.options.callback_url"),
    Odd("budget-zero", BATCH, options(budget_usd=0), 422, "$.options.budget_usd"),
    Odd("budget-negative", BATCH, options(budget_usd=-1), 422, "$.options.budget_usd"),
    Odd("budget-1e309", BATCH, b'{"traces": [{"query": "q"}], "options": {"budget_usd": 1e309}}', 422,
        "$.options.budget_usd"),
    Odd("run-name-with-space", BATCH, options(run="my run"), 422, "$.options.run"),
    Odd("run-name-over-128-chars", BATCH, options(run=long(129)), 422, "$.options.run"),
    Odd("variant-unknown", BATCH, options(variant="baseline"), 422, "$.options.variant"),
    Odd("targets-unknown-metric", BATCH, options(targets={"accuracy": 0.5}), 422, "$.options"),
    Odd("targets-cutoff-not-in-k", BATCH, options(k=[5], targets={"recall@7": 0.5}), 422, "$.options"),
    Odd("targets-key-upper-case", BATCH, options(targets={"Recall@5": 0.5}), 422, "$.options.targets"),
    Odd("targets-value-string", BATCH, options(targets={"recall@5": "high"}), 422, "$.options.targets[...]"),
    Odd("targets-key-over-64-chars", BATCH, options(targets={"a" * 65: 0.5}), 422, "$.options.targets"),
    Odd("targets-over-64-keys", BATCH, options(targets={f"m{i}": 0.5 for i in range(65)}), 422, "$.options.targets"),
]

ACCEPTED = [   # near misses, accepted by design: each shows the input is taken as documented
    Odd("accepted-colons-and-extremes", DRY_RUN,
        with_metadata('{"a:b": "c:d", "e": "f\\u003ag", "max": 18446744073709551615, "min": -9223372036854775808, '
                      f'"x": {nested(63)}}}'), 200, content_type="application/json; charset=utf-8", check=dry_count(1)),
    Odd("accepted-whole-floats-for-ints", DRY_RUN,
        batch(trace(relevance={"d": 2.0}, usage={"prompt_tokens": 3.0}), options={"k": [5.0, 10.0], "repeats": 1.0}),
        200, check=dry_count(1)),
    Odd("accepted-whole-float-exponent", DRY_RUN, b'{"traces": [{"query": "q", "usage": {"prompt_tokens": 3e2}}]}',
        200, check=dry_count(1)),
    Odd("accepted-negative-zero", DRY_RUN, b'{"traces": [{"query": "q", "usage": {"cost_usd": -0.0, "prompt_tokens": '
        b'-0}, "latency_ms": {"total": -0}}]}', 200, check=dry_count(1)),
    Odd("accepted-int-for-float", DRY_RUN, batch(trace(retrieved_docs=[doc(score=1)], latency_ms={"total": 5})), 200,
        check=dry_count(1)),
    Odd("accepted-escaped-nul-in-query", DRY_RUN, raw(b"a\\u0000b"), 200, check=dry_count(1)),
    Odd("accepted-surrogate-pair", DRY_RUN, raw(b"\\ud83d\\ude00"), 200, check=dry_count(1)),
    Odd("accepted-nulls-for-optional-fields", DRY_RUN, batch(trace(answer=None, trace_id=None, metadata=None,
                                                                   usage=None, answerable=None)), 200,
        check=dry_count(1)),
    Odd("accepted-problem-json-media-type", DRY_RUN, batch(), 200, content_type="application/problem+json",
        check=dry_count(1)),
    Odd("accepted-trace-id-with-slash-in-batch", DRY_RUN, batch(trace(trace_id="a/b")), 200, check=dry_count(1)),
]

# -- POST /v1/traces: the same schema, and a trace id that must read back as a URL path segment -----------------------

ONLINE = [
    Odd("online-empty-body", TRACES, b"", 400),
    Odd("online-environment-unknown", TRACES, b'{"traces": [{"query": "q", "environment": "prod"}]}', 422,
        "$.traces[0].environment"),
    Odd("batch-trace-environment-not-the-jobs", BATCH,
        b'{"traces": [{"query": "q"}, {"query": "q", "environment": "production"}]}', 422, "$.traces[1].environment"),
    Odd("batch-environment-unknown", BATCH, b'{"traces": [{"query": "q"}], "options": {"environment": 1}}', 422,
        "$.options.environment"),
    Odd("online-top-level-array", TRACES, b'[{"query": "q"}]', 422, "$"),
    Odd("online-traces-empty", TRACES, b'{"traces": []}', 422, "$.traces"),
    Odd("online-options-not-allowed", TRACES, batch(options={}), 422, "$"),
    Odd("online-over-1000-traces", TRACES, b'{"traces": [' + b",".join([b'{"query":"q"}'] * 1001) + b"]}", 413,
        "$.traces"),
    Odd("online-trace-id-slash", TRACES, batch(trace(trace_id="a/b")), 422, "$.traces[0].trace_id"),
    Odd("online-trace-id-dot", TRACES, batch(trace(trace_id=".")), 422, "$.traces[0].trace_id"),
    Odd("online-trace-id-dot-dot", TRACES, batch(trace(trace_id="..")), 422, "$.traces[0].trace_id"),
    Odd("online-trace-id-traversal", TRACES, batch(trace(trace_id="../../etc/passwd")), 422, "$.traces[0].trace_id"),
    Odd("online-trace-id-over-256-chars", TRACES, batch(trace(trace_id=long(257))), 422, "$.traces[0].trace_id"),
    Odd("online-trace-id-control-char", TRACES, batch(trace(trace_id="a\tb")), 422, "$.traces[0].trace_id"),
    Odd("online-trace-id-repeated", TRACES, batch(trace(trace_id="t1"), trace(trace_id="t1")), 422,
        "$.traces[1].trace_id"),
    Odd("online-app-dot-dot", TRACES, batch(trace(app="..")), 422, "$.traces[0].app"),
    Odd("online-app-dot-led", TRACES, batch(trace(app=".hidden")), 422, "$.traces[0].app"),
    Odd("online-doc-id-number", TRACES, batch(trace(retrieved_docs=[doc(), doc(), doc(id=3)])), 422,
        "$.traces[0].retrieved_docs[2].id"),
    Odd("online-metadata-huge-int", TRACES, with_metadata('{"n": 18446744073709551616}'), 422,
        "$.traces[0].metadata.n"),
    Odd("online-usage-bool", TRACES, batch(trace(usage={"completion_tokens": False})), 422,
        "$.traces[0].usage.completion_tokens"),
    Odd("online-nesting-1000", TRACES, f'{{"traces": {nested(1000)}}}'.encode(), 400),
    Odd("online-invalid-utf8", TRACES, raw(b"\x80"), 400),
    Odd("online-text-plain", TRACES, batch(), 415, "header.content-type", content_type="text/plain"),
    Odd("accepted-online-trace-id-dot-led", TRACES, batch(trace(trace_id=f".{uuid.uuid4().hex}")), 202),
    Odd("accepted-online-trace-id-dot-dot-led", TRACES, batch(trace(trace_id=f"..{uuid.uuid4().hex}")), 202),
    Odd("accepted-online-whole-float", TRACES, batch(trace(usage={"prompt_tokens": 12.0})), 202),
]

# -- POST /v1/calibrations, POST /v1/labels, PUT /v1/apps/{app}/policy -------------------------------------------------


def calibration(**fields: Any) -> bytes:
    return dumps({"job_id": "0" * 32, "labels": [{"trace_id": "t", "faithful": True}], **fields})


def claims(*items: Any) -> bytes:
    return calibration(labels=[{"trace_id": "t", "faithful": True, "claims": list(items)}])


CALIBRATIONS = [
    Odd("calibration-empty-body", CALIBRATION, b"", 400),
    Odd("calibration-truncated", CALIBRATION, calibration()[:-3], 400),
    Odd("calibration-empty-object", CALIBRATION, b"{}", 422, "$"),
    Odd("calibration-array", CALIBRATION, b"[]", 422, "$"),
    Odd("calibration-job-id-number", CALIBRATION, calibration(job_id=5), 422, "$.job_id"),
    Odd("calibration-job-id-null", CALIBRATION, calibration(job_id=None), 422, "$.job_id"),
    Odd("calibration-job-id-empty", CALIBRATION, calibration(job_id=""), 422, "$.job_id"),
    Odd("calibration-job-id-1-mb", CALIBRATION, calibration(job_id=long(MiB)), 422, "$.job_id"),
    Odd("calibration-job-id-traversal", CALIBRATION, calibration(job_id="../jobs"), 422, "$.job_id"),
    Odd("calibration-labels-empty", CALIBRATION, calibration(labels=[]), 422, "$.labels"),
    Odd("calibration-labels-object", CALIBRATION, calibration(labels={"t": True}), 422, "$.labels"),
    Odd("calibration-labels-over-10000", CALIBRATION,
        calibration(labels=[{"trace_id": f"t{i}", "faithful": True} for i in range(10_001)]), 422, "$.labels"),
    Odd("calibration-label-empty", CALIBRATION, calibration(labels=[{}]), 422, "$.labels[0]"),
    Odd("calibration-faithful-string", CALIBRATION, calibration(labels=[{"trace_id": "t", "faithful": "yes"}]), 422,
        "$.labels[0].faithful"),
    Odd("calibration-faithful-number", CALIBRATION, calibration(labels=[{"trace_id": "t", "faithful": 1}]), 422,
        "$.labels[0].faithful"),
    Odd("calibration-trace-id-empty", CALIBRATION, calibration(labels=[{"trace_id": "", "faithful": True}]), 422,
        "$.labels[0].trace_id"),
    Odd("calibration-unknown-field", CALIBRATION, calibration(judge="local"), 422, "$"),
    Odd("calibration-claims-string", CALIBRATION, calibration(labels=[{"trace_id": "t", "faithful": True,
                                                                       "claims": "all"}]), 422, "$.labels[0].claims"),
    Odd("calibration-claim-index-negative", CALIBRATION, claims({"index": -1, "verdict": "supported"}), 422,
        "$.labels[0].claims[0].index"),
    Odd("calibration-claim-index-2-to-70-unknown-job", CALIBRATION, claims({"index": 2**70, "verdict": "supported"}),
        422, "$.labels[0].claims[0].index"),
    Odd("calibration-claim-index-2-to-70-unjudged-trace", CALIBRATION, claims({"index": 2**70, "verdict": "supported"})
        .replace(b"0" * 32, b"{job}"), 422, "$.labels[0].claims[0].index"),
    Odd("calibration-claim-index-fraction", CALIBRATION, claims({"index": 0.5, "verdict": "supported"}), 422,
        "$.labels[0].claims[0].index"),
    Odd("calibration-claim-verdict-unknown", CALIBRATION, claims({"index": 0, "verdict": "maybe"}), 422,
        "$.labels[0].claims[0].verdict"),
    Odd("calibration-claim-verdict-missing", CALIBRATION, claims({"index": 0}), 422, "$.labels[0].claims[0]"),
    Odd("calibration-claim-given-twice", CALIBRATION, claims({"index": 0, "verdict": "supported"},
                                                             {"index": 0, "verdict": "contradicted"}), 422,
        "$.labels[0].claims[1].index"),
    Odd("calibration-trace-labelled-twice", CALIBRATION,
        calibration(labels=[{"trace_id": "t", "faithful": True}, {"trace_id": "t", "faithful": False}]), 422,
        "$.labels[1].trace_id"),
    Odd("calibration-unknown-job", CALIBRATION, calibration(), 404),
    Odd("calibration-whole-float-index-then-unknown-job", CALIBRATION,
        claims({"index": 1.0, "verdict": "supported"}), 404),
    Odd("calibration-text-plain", CALIBRATION, calibration(), 415, "header.content-type", content_type="text/plain"),
    Odd("no-content-type-calibration", CALIBRATION, b'{"job_id": "x", "labels": []}', 415, "header.content-type",
        content_type=None),
]


def label(**fields: Any) -> bytes:
    return dumps({"trace_id": "t", "reviewer": "ana", "hallucinated": False, "abstained": False, **fields})


LABEL_CASES = [
    Odd("label-empty-body", LABELS, b"", 400),
    Odd("label-bom", LABELS, b"\xef\xbb\xbf" + label(), 400),
    Odd("label-invalid-utf8-note", LABELS, label(note="NOTE").replace(b"NOTE", b"\xff"), 400),
    Odd("label-empty-object", LABELS, b"{}", 422, "$"),
    Odd("label-string-top-level", LABELS, b'"label"', 422, "$"),
    Odd("label-reviewer-reserved", LABELS, label(reviewer="calibration"), 422, "$"),
    Odd("label-reviewer-empty", LABELS, label(reviewer=""), 422, "$.reviewer"),
    Odd("label-reviewer-space", LABELS, label(reviewer="ana b"), 422, "$.reviewer"),
    Odd("label-reviewer-over-64-chars", LABELS, label(reviewer="a" * 65), 422, "$.reviewer"),
    Odd("label-hallucinated-string", LABELS, label(hallucinated="no"), 422, "$.hallucinated"),
    Odd("label-abstained-null", LABELS, label(abstained=None), 422, "$.abstained"),
    Odd("label-job-id-traversal", LABELS, label(job_id="../x"), 422, "$.job_id"),
    Odd("label-job-id-over-64-chars", LABELS, label(job_id="a" * 65), 422, "$.job_id"),
    Odd("label-trace-id-over-256-chars", LABELS, label(trace_id=long(257)), 422, "$.trace_id"),
    Odd("label-note-over-4000-chars", LABELS, label(note=long(4001)), 422, "$.note"),
    Odd("label-claims-over-1000", LABELS, label(claims=[{"index": i, "verdict": "supported"} for i in range(1001)]),
        422, "$.claims"),
    Odd("label-claim-index-string", LABELS, label(claims=[{"index": "0", "verdict": "supported"}]), 422,
        "$.claims[0].index"),
    Odd("label-claim-index-over-64-bits", LABELS, label(claims=[{"index": 2**64, "verdict": "supported"}]), 422,
        "$.claims[0].index"),
    Odd("label-unknown-field", LABELS, label(score=1), 422, "$"),
    Odd("label-unknown-trace", LABELS, label(trace_id=f"never-{uuid.uuid4().hex}"), 404),
]


POLICY_CASES = [
    Odd("policy-empty-body", POLICY, b"", 400),
    Odd("policy-array", POLICY, b"[0.5]", 422, "$"),
    Odd("policy-rate-over-1", POLICY, b'{"sample_rate": 1.5}', 422, "$.sample_rate"),
    Odd("policy-rate-negative", POLICY, b'{"sample_rate": -0.1}', 422, "$.sample_rate"),
    Odd("policy-rate-string", POLICY, b'{"sample_rate": "0.5"}', 422, "$.sample_rate"),
    Odd("policy-rate-bool", POLICY, b'{"sample_rate": true}', 422, "$.sample_rate"),
    Odd("policy-rate-null", POLICY, b'{"sample_rate": null}', 422, "$.sample_rate"),
    Odd("policy-rate-1e309", POLICY, b'{"sample_rate": 1e309}', 422, "$.sample_rate"),
    Odd("policy-rate-huge-int", POLICY, b'{"sample_rate": 100000000000000000000000}', 422, "$.sample_rate"),
    Odd("policy-always-judge-string", POLICY, b'{"always_judge": "all"}', 422, "$.always_judge"),
    Odd("policy-rule-number", POLICY, b'{"always_judge": {"negative_feedback": 1}}', 422,
        "$.always_judge.negative_feedback"),
    Odd("policy-rule-unknown", POLICY, b'{"always_judge": {"long_answers": true}}', 422, "$.always_judge"),
    Odd("policy-top-score-string", POLICY, b'{"always_judge": {"top_score_below": "low"}}', 422,
        "$.always_judge.top_score_below"),
    Odd("policy-max-age-zero", POLICY, b'{"max_source_age_days": 0}', 422, "$.max_source_age_days"),
    Odd("policy-max-age-over-100-years", POLICY, b'{"max_source_age_days": 36501}', 422, "$.max_source_age_days"),
    Odd("policy-unknown-field", POLICY, b'{"sample_rate": 0.5, "rate": 0.5}', 422, "$"),
    Odd("policy-source-unknown", POLICY, b'{"sources": {"sample_rate": "env"}}', 422, "$.sources[...]"),
    Odd("policy-sources-over-64", POLICY, dumps({"sources": {f"s{i}": "stored" for i in range(65)}}), 422,
        "$.sources"),
    Odd("policy-app-field-dot-dot", POLICY, b'{"app": ".."}', 422, "$.app"),
    Odd("policy-path-app-dot-led", "PUT /v1/apps/.x/policy", b'{"sample_rate": 0.5}', 400, "path.app"),
    Odd("policy-path-app-over-64-chars", f"PUT /v1/apps/{long(65)}/policy", b'{"sample_rate": 0.5}', 400, "path.app"),
    Odd("policy-path-app-percent-encoded-dot-dot", "PUT /v1/apps/%2e%2e/policy", b'{"sample_rate": 0.5}', 400,
        "path.app"),
    Odd("text-plain-policy", POLICY, b'{"sample_rate": 0.5}', 415, "header.content-type", content_type="text/plain"),
    Odd("form-encoded-policy", POLICY, b"sample_rate=0.5", 415, "header.content-type",
        content_type="application/x-www-form-urlencoded"),
    Odd("accepted-policy-negative-zero", POLICY, b'{"sample_rate": -0.0}', 200),
    Odd("accepted-policy-get-body-put-back", POLICY, dumps({
        "app": "other", "stored": True, "sample_rate": 0.25, "max_source_age_days": None,
        "always_judge": {"negative_feedback": True, "cited_not_retrieved": True, "top_score_below": None,
                         "injection_docs": True},
        "sources": {"sample_rate": "stored"}}), 200),
]

# -- headers: content type, length, idempotency key -------------------------------------------------------------------

FIRST_USE = Odd("idempotency-first-use", BATCH, batch(trace(query="first")), 202,
                headers=(("Idempotency-Key", f"odd-{uuid.uuid4().hex}"),))
FIRST_ONLINE_USE = Odd("idempotency-first-online-use", TRACES, batch(trace(query="first")), 202,
                       headers=(("Idempotency-Key", f"odd-{uuid.uuid4().hex}"),))
HEADERS = [
    Odd("text-plain-batch", BATCH, batch(), 415, "header.content-type", content_type="text/plain"),
    Odd("no-content-type-batch", BATCH, batch(), 415, "header.content-type", content_type=None),
    Odd("json-lookalike-content-type", BATCH, batch(), 415, "header.content-type", content_type="application/jsonx"),
    Odd("multipart-content-type", BATCH, batch(), 415, "header.content-type",
        content_type="multipart/form-data; boundary=x"),
    Odd("protobuf-content-type-on-batch", BATCH, batch(), 415, "header.content-type", content_type=PROTOBUF),
    Odd("text-json-content-type", BATCH, batch(), 415, "header.content-type", content_type="text/json"),
    Odd("gzip-json-body", DRY_RUN, gzip.compress(batch()), 415, "header.content-encoding",
        headers=(("Content-Encoding", "gzip"),)),
    Odd("plain-body-declared-gzip", DRY_RUN, batch(), 415, "header.content-encoding",
        headers=(("Content-Encoding", "gzip"),)),
    Odd("deflate-policy-body", POLICY, zlib.compress(b'{"sample_rate": 0.5}'), 415, "header.content-encoding",
        headers=(("Content-Encoding", "deflate"),)),
    Odd("accepted-identity-coding", DRY_RUN, batch(), 200, headers=(("Content-Encoding", "identity"),),
        check=dry_count(1)),
    Odd("idempotency-key-reused-on-traces", TRACES, batch(trace(query="second")), 422, "header.idempotency-key",
        headers=FIRST_ONLINE_USE.headers, before=FIRST_ONLINE_USE),
    Odd("latin1-body-declared-latin1", BATCH, '{"traces": [{"query": "caf\u00e9"}]}'.encode("latin-1"), 400,
        content_type="application/json; charset=latin-1"),
    Odd("idempotency-key-reused-with-another-body", BATCH, batch(trace(query="second")), 422,
        "header.idempotency-key", headers=FIRST_USE.headers, before=FIRST_USE),
    Odd("idempotency-key-empty", BATCH, batch(), 400, "header.idempotency-key", headers=(("Idempotency-Key", ""),)),
    Odd("idempotency-key-with-space", BATCH, batch(), 400, "header.idempotency-key",
        headers=(("Idempotency-Key", "a b"),)),
    Odd("idempotency-key-over-255-chars", TRACES, batch(), 400, "header.idempotency-key",
        headers=(("Idempotency-Key", long(256)),)),
    Odd("oversized-header", DRY_RUN, batch(), 431, "header", headers=(("X-Padding", long(100 * 1024)),)),
    Odd("accepted-large-header-under-the-cap", DRY_RUN, batch(), 200, headers=(("X-Padding", long(32 * 1024)),),
        check=dry_count(1)),
]



def raw_request(head: str, body: bytes = b"") -> bytes:
    return head.replace("\n", "\r\n").encode("latin-1") + body


BATCH_HEAD = "POST /v1/batches?dry_run=true HTTP/1.1\nHost: t\nContent-Type: application/json\n"
HTTP = [   # refused by the HTTP parser before the app: still a problem body, never plain text
    Odd("http-request-line-garbage", RAW, b"GARBAGE\r\n\r\n", 400),
    Odd("http-bad-chunk-size", RAW, raw_request(BATCH_HEAD + "Transfer-Encoding: chunked\n\n", b"zz\r\n{}\r\n0\r\n\r\n"),
        400),
    Odd("http-header-name-with-space", RAW, raw_request(BATCH_HEAD + "Bad Header: x\nContent-Length: 2\n\n", b"{}"), 400),
    Odd("http-content-length-not-a-number", RAW, raw_request(BATCH_HEAD + "Content-Length: abc\n\n", b"{}"), 400),
    Odd("http-content-length-negative", RAW, raw_request(BATCH_HEAD + "Content-Length: -1\n\n", b"{}"), 400),
    Odd("http-two-content-lengths", RAW, raw_request(BATCH_HEAD + "Content-Length: 2\nContent-Length: 3\n\n", b"{} "),
        400),
    Odd("http-content-length-and-chunked", RAW, raw_request(
        BATCH_HEAD + "Content-Length: 5\nTransfer-Encoding: chunked\n\n", b"0\r\n\r\n"), 400),
    Odd("http-nul-in-header-value", RAW, raw_request(BATCH_HEAD + "X-A: a\0b\nContent-Length: 2\n\n", b"{}"), 400),
    Odd("http-version-unknown", RAW, raw_request("GET /healthz HTTP/9.9\nHost: t\n\n"), 400),
    Odd("http-url-over-head-cap", RAW, raw_request(f"GET /v1/jobs/x?pad={long(100 * 1024)} HTTP/1.1\nHost: t\n\n"),
        431, "header"),
]

# -- GET query strings and path segments ------------------------------------------------------------------------------

QUERIES = [
    Odd("cursor-letters", RESULTS + "?cursor=abc", None, 400, "query.cursor"),
    Odd("cursor-negative", RESULTS + "?cursor=-1", None, 400, "query.cursor"),
    Odd("cursor-13-digits", RESULTS + "?cursor=1234567890123", None, 400, "query.cursor"),
    Odd("cursor-superscript-two", RESULTS + "?cursor=²", None, 400, "query.cursor"),
    Odd("cursor-circled-one", RESULTS + "?cursor=①", None, 400, "query.cursor"),
    Odd("cursor-arabic-indic-three", RESULTS + "?cursor=٣", None, 400, "query.cursor"),
    Odd("cursor-fullwidth-one", RESULTS + "?cursor=１", None, 400, "query.cursor"),
    Odd("cursor-nul", RESULTS + "?cursor=%00", None, 400, "query.cursor"),
    Odd("limit-zero", RESULTS + "?limit=0", None, 400, "query.limit"),
    Odd("limit-over-1000", RESULTS + "?limit=1001", None, 400, "query.limit"),
    Odd("limit-negative", RESULTS + "?limit=-5", None, 400, "query.limit"),
    Odd("limit-words", RESULTS + "?limit=ten", None, 400, "query.limit"),
    Odd("limit-fraction", RESULTS + "?limit=2.5", None, 400, "query.limit"),
    Odd("limit-huge", RESULTS + "?limit=99999999999999999999999", None, 400, "query.limit"),
    Odd("limit-empty", RESULTS + "?limit=", None, 400, "query.limit"),
    Odd("limit-arabic-indic-three", RESULTS + "?limit=٣", None, 400, "query.limit"),
    Odd("accepted-limit-repeated", RESULTS + "?limit=1&limit=2", None, 200),
    Odd("dry-run-not-a-bool", "POST /v1/batches?dry_run=maybe", batch(), 400, "query.dry_run"),
    Odd("job-id-encoded-slash", "GET /v1/jobs/..%2F..%2Fhealthz", None, 404),
    Odd("report-job-id-over-64-chars", f"GET /v1/jobs/{long(65)}/report", None, 400, "path.job_id"),
    Odd("report-page-unknown-job", f"GET /v1/jobs/{'0' * 32}/report.html", None, 404),
    Odd("retry-job-id-over-64-chars", f"POST /v1/jobs/{long(65)}/retry", None, 400, "path.job_id"),
    Odd("retry-unknown-job", f"POST /v1/jobs/{'0' * 32}/retry", None, 404),
    Odd("agreement-app-dot-led", "GET /v1/apps/.x/agreement", None, 400, "path.app"),
    Odd("review-app-over-64-chars", f"GET /v1/apps/{long(65)}/review", None, 400, "path.app"),
    Odd("policy-get-app-with-space", "GET /v1/apps/a%20b/policy", None, 400, "path.app"),
    Odd("monitor-window-empty", "GET /v1/monitor/default?window=", None, 400, "query.window"),
    Odd("limit-bool", RESULTS + "?limit=true", None, 400, "query.limit"),
    Odd("compare-threshold-1e400", COMPARE + "&threshold=1e400", None, 400, "query.threshold"),
    Odd("accepted-cursor-past-the-end", RESULTS + "?cursor=999999999999", None, 200),
    Odd("job-id-over-64-chars", f"GET /v1/jobs/{long(65)}", None, 400, "path.job_id"),
    Odd("job-id-unknown", f"GET /v1/jobs/{'0' * 32}", None, 404),
    Odd("compare-baseline-missing", "GET /v1/jobs/{job}/compare", None, 400, "query.baseline"),
    Odd("compare-threshold-zero", COMPARE + "&threshold=0", None, 400, "query.threshold"),
    Odd("compare-threshold-over-1", COMPARE + "&threshold=1.5", None, 400, "query.threshold"),
    Odd("compare-threshold-nan", COMPARE + "&threshold=nan", None, 400, "query.threshold"),
    Odd("compare-threshold-infinity", COMPARE + "&threshold=inf", None, 400, "query.threshold"),
    Odd("compare-metrics-unknown", COMPARE + "&metrics=accuracy", None, 400, "query.metrics"),
    Odd("compare-metrics-empty", COMPARE + "&metrics=", None, 400, "query.metrics"),
    Odd("compare-metrics-only-commas", COMPARE + "&metrics=,,,", None, 400, "query.metrics"),
    Odd("compare-metrics-over-2000-chars", COMPARE + "&metrics=" + ",".join(["mrr"] * 600), None, 400,
        "query.metrics"),
    Odd("compare-correction-unknown", COMPARE + "&correction=bonferroni", None, 400, "query.correction"),
    Odd("compare-baseline-unknown", "GET /v1/jobs/{job}/compare?baseline=" + "0" * 32, None, 404),
    Odd("monitor-window-unknown", "GET /v1/monitor/default?window=7d", None, 400, "query.window"),
    Odd("monitor-app-dot-led", "GET /v1/monitor/.x", None, 400, "path.app"),
    Odd("monitor-environment-unknown", "GET /v1/monitor/default?environment=prod", None, 400, "query.environment"),
    Odd("monitor-environment-over-16-chars", "GET /v1/monitor/default?environment=" + "e" * 17, None, 400,
        "query.environment"),
    Odd("review-n-zero", "GET /v1/apps/default/review?n=0", None, 400, "query.n"),
    Odd("review-n-over-50", "GET /v1/apps/default/review?n=51", None, 400, "query.n"),
    Odd("review-reviewer-bad", "GET /v1/apps/default/review?reviewer=a%20b", None, 400, "query.reviewer"),
    Odd("labels-trace-id-missing", "GET /v1/labels", None, 400, "query.trace_id"),
    Odd("labels-job-id-traversal", "GET /v1/labels?trace_id=t&job_id=../x", None, 400, "query.job_id"),
    Odd("labels-trace-id-control-char", "GET /v1/labels?trace_id=a%01b", None, 400, "query.trace_id"),
    Odd("trace-id-path-over-256-chars", f"GET /v1/traces/{long(257)}", None, 400, "path.trace_id"),
    Odd("trace-id-path-control-char", "GET /v1/traces/a%01b", None, 400, "path.trace_id"),
]

# -- POST /v1/otlp/v1/traces: OTLP/JSON and protobuf, codings, attribute poison ----------------------------------------


def attr(key: str, value: Any) -> dict[str, Any]:
    """An OTLP/JSON KeyValue; `value` is the AnyValue dict itself when a dict, else a string value."""
    return {"key": key, "value": value if isinstance(value, dict) else {"stringValue": str(value)}}


def otlp_export(trace_id: str | None = None, root: list | None = None, retriever: list | None = None,
                llm: list | None = None, service: str = "odd-otlp") -> dict[str, Any]:
    """A small OpenInference trace as OTLP/JSON (ids in hex): a root chain span with the query and answer, a retriever
    span with one document and an LLM span with its token counts; the lists given replace each span's attributes."""
    trace_id = trace_id or uuid.uuid4().hex
    root_id, retriever_id, llm_id = (uuid.uuid4().hex[:16] for _ in range(3))
    kind = "openinference.span.kind"

    def span(span_id: str, parent: str, name: str, start: int, attributes: list) -> dict[str, Any]:
        return {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent, "name": name,
                "startTimeUnixNano": str(1_700_000_000_000_000_000 + start),
                "endTimeUnixNano": str(1_700_000_000_000_000_000 + start + 1_000_000), "attributes": attributes}

    spans = [
        span(root_id, "", "rag", 0, root if root is not None else [
            attr(kind, "CHAIN"), attr("input.value", "How do I reset my router?"),
            attr("output.value", "Hold the reset button for ten seconds.")]),
        span(retriever_id, root_id, "retrieve", 1, retriever if retriever is not None else [
            attr(kind, "RETRIEVER"), attr("retrieval.documents.0.document.id", "manual"),
            attr("retrieval.documents.0.document.content", "Hold the reset button for ten seconds to reset it."),
            attr("retrieval.documents.0.document.score", {"doubleValue": 0.9})]),
        span(llm_id, root_id, "generate", 2, llm if llm is not None else [
            attr(kind, "LLM"), attr("llm.token_count.prompt", {"intValue": "412"}),
            attr("llm.token_count.completion", {"intValue": "23"})]),
    ]
    return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", service)]},
                               "scopeSpans": [{"scope": {"name": "odd"}, "spans": spans}]}]}


def protobuf(export: dict[str, Any], nest: int = 0) -> bytes:
    """The export as an ExportTraceServiceRequest in protobuf (the ids hex in OTLP/JSON, base64 in protobuf's); with
    `nest`, its first span gets an attribute of arrays nested that deep (past what protobuf's JSON parser builds)."""
    import base64   # noqa: PLC0415 - only the protobuf cases need these
    from google.protobuf import json_format   # noqa: PLC0415
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: PLC0415

    mapped = json.loads(json.dumps(export))
    for resource in mapped["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    request = json_format.ParseDict(mapped, ExportTraceServiceRequest())
    if nest:
        value = request.resource_spans[0].scope_spans[0].spans[0].attributes.add(key="deep").value
        for _ in range(nest):
            value = value.array_value.values.add()
        value.string_value = "x"
    return request.SerializeToString()


def llm_with(key: str, value: dict[str, Any]) -> list:
    return [attr("openinference.span.kind", "LLM"), attr(key, value)]


def handed_over(case_id: str, status: str, *, root: list | None = None, retriever: list | None = None,
                llm: list | None = None, coding: str | None = None, service: str = "odd-otlp",
                app: str = "odd-otlp", in_protobuf: bool = False) -> Odd:
    """An export the receiver takes (200) whose trace the hand-over must record with `status` under `app`."""
    trace_id = uuid.uuid4().hex
    export = otlp_export(trace_id, root=root, retriever=retriever, llm=llm, service=service)
    body = protobuf(export) if in_protobuf else dumps(export)
    headers: tuple[tuple[str, str], ...] = ()
    if coding == "gzip":
        body, headers = gzip.compress(body), (("Content-Encoding", "gzip"),)
    return Odd(case_id, OTLP, body, 200, content_type=PROTOBUF if in_protobuf else JSON, headers=headers,
               handed_over=(trace_id, status, app))


def root_with(key: str, value: str) -> list:
    return [attr("openinference.span.kind", "CHAIN"), attr("input.value", "How do I reset my router?"), attr(key, value)]


def retriever_with(**document: Any) -> list:
    return [attr("openinference.span.kind", "RETRIEVER"), attr("retrieval.documents.0.document.id", "manual"),
            attr("retrieval.documents.0.document.content", "Hold the reset button for ten seconds."),
            *(attr(f"retrieval.documents.0.document.{k}", v) for k, v in document.items())]


def bomb(coding: str, size: int = 64 * MiB) -> bytes:
    """`size` zero bytes compressed: a few tens of KiB that inflate past the 32 MiB body limit."""
    if coding == "gzip":
        return gzip.compress(b"\0" * size, compresslevel=9)
    return zlib.compress(b"\0" * size, 9)


def partial(rejected: int) -> Callable[[Any], None]:
    def check(answer: Any) -> None:
        assert int(answer.get("partialSuccess", {}).get("rejectedSpans", 0)) == rejected, answer
    return check


def nested_values(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


GOOD_OTLP = dumps(otlp_export())
SPAN = "$.resourceSpans[0].scopeSpans[0].spans"
SHAPE = dumps({"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]})
OTLP_CASES = [
    Odd("otlp-empty-json-body", OTLP, b"", 400),
    Odd("otlp-json-null", OTLP, b"null", 400, "$"),
    Odd("otlp-json-array", OTLP, b"[]", 400, "$"),
    Odd("otlp-json-string", OTLP, b'"spans"', 400, "$"),
    Odd("otlp-resource-spans-string", OTLP, b'{"resourceSpans": "x"}', 400, "$.resourceSpans"),
    Odd("otlp-scope-spans-object", OTLP, b'{"resourceSpans": [{"scopeSpans": {}}]}', 400,
        "$.resourceSpans[0].scopeSpans"),
    Odd("otlp-span-number", OTLP, SHAPE, 400, "$.resourceSpans[0].scopeSpans[0].spans[0]"),
    Odd("otlp-trailing-garbage", OTLP, GOOD_OTLP + b"}", 400),
    Odd("otlp-truncated-json", OTLP, GOOD_OTLP[:-20], 400),
    Odd("otlp-invalid-utf8", OTLP, GOOD_OTLP.replace(b"How do I", b"How \xff I"), 400),
    Odd("otlp-nan-literal", OTLP, b'{"resourceSpans": [], "x": NaN}', 400),
    Odd("otlp-double-value-nan-literal", OTLP, dumps(otlp_export(llm=llm_with("llm.token_count.prompt", {
        "doubleValue": "NAN_HERE"}))).replace(b'"NAN_HERE"', b"NaN"), 400),
    Odd("otlp-token-count-1e309", OTLP, dumps(otlp_export(llm=llm_with("llm.token_count.prompt", {
        "doubleValue": "BIG"}))).replace(b'"BIG"', b"1e309"), 400, SPAN + "[2].attributes[1].value.doubleValue"),
    Odd("otlp-input-value-lone-surrogate", OTLP, dumps(otlp_export(root=root_with("output.value", "a\ud800b"))), 400,
        SPAN + "[0].attributes[2].value.stringValue"),
    Odd("otlp-json-nested-1000", OTLP, b'{"resourceSpans": ' + nested(1000).encode() + b"}", 400,
        "$.resourceSpans" + "[0]" * 127),
    Odd("otlp-json-nested-200-in-attribute", OTLP, dumps(otlp_export(
        llm=[attr("openinference.span.kind", "LLM"), attr("llm.x", nested_values(60))])), 400),
    Odd("otlp-int-value-words", OTLP, dumps(otlp_export(llm=llm_with("llm.token_count.prompt", {"intValue": "many"}))),
        400, SPAN + "[2].attributes[1]"),
    Odd("otlp-int-value-over-64-bits", OTLP, dumps(otlp_export(
        llm=llm_with("llm.token_count.prompt", {"intValue": "99999999999999999999"}))), 400, SPAN + "[2].attributes[1]"),
    Odd("accepted-otlp-trace-id-not-hex", OTLP, GOOD_OTLP.replace(b'"traceId": "', b'"traceId": "zz', 1), 200,
        check=partial(1)),
    Odd("otlp-span-field-wrong-type", OTLP, dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": uuid.uuid4().hex, "spanId": "0" * 15 + "1", "name": {"x": 1}}]}]}]}), 400, SPAN + "[0]"),
    Odd("otlp-protobuf-garbage", OTLP, b"\xff" * 64, 400, content_type=PROTOBUF),
    Odd("otlp-protobuf-truncated", OTLP, protobuf(otlp_export())[:-7], 400, content_type=PROTOBUF),
    Odd("otlp-protobuf-json-body", OTLP, GOOD_OTLP, 400, content_type=PROTOBUF),
    Odd("otlp-protobuf-nested-200-in-attribute", OTLP, protobuf(otlp_export(), nest=200), 400, content_type=PROTOBUF),
    Odd("otlp-protobuf-invalid-utf8-string", OTLP,
        protobuf(otlp_export(root=root_with("output.value", "ZZZZ"))).replace(b"ZZZZ", b"\xff\xfe\xfd\xfc"), 400,
        content_type=PROTOBUF),
    Odd("otlp-text-plain", OTLP, GOOD_OTLP, 415, "header.content-type", content_type="text/plain"),
    Odd("otlp-no-content-type", OTLP, GOOD_OTLP, 415, "header.content-type", content_type=None),
    Odd("otlp-gzip-bomb", OTLP, bomb("gzip"), 413, "body", headers=(("Content-Encoding", "gzip"),)),
    Odd("otlp-deflate-bomb", OTLP, bomb("deflate"), 413, "body", headers=(("Content-Encoding", "deflate"),)),
    Odd("otlp-gzip-bomb-protobuf", OTLP, bomb("gzip"), 413, "body", content_type=PROTOBUF,
        headers=(("Content-Encoding", "gzip"),)),
    Odd("otlp-gzip-corrupt", OTLP, gzip.compress(GOOD_OTLP)[:10] + b"\x00" * 40, 400,
        headers=(("Content-Encoding", "gzip"),)),
    Odd("otlp-gzip-truncated", OTLP, gzip.compress(GOOD_OTLP)[:-12], 400, headers=(("Content-Encoding", "gzip"),)),
    Odd("otlp-gzip-claimed-plain-body", OTLP, GOOD_OTLP, 400, headers=(("Content-Encoding", "gzip"),)),
    Odd("otlp-deflate-corrupt", OTLP, b"\x78\x9c" + b"\xff" * 30, 400, headers=(("Content-Encoding", "deflate"),)),
    Odd("otlp-brotli-unsupported", OTLP, GOOD_OTLP, 415, "header.content-encoding",
        headers=(("Content-Encoding", "br"),)),
    Odd("otlp-double-gzip-bomb", OTLP, gzip.compress(bomb("gzip")), 413, "body",
        headers=(("Content-Encoding", "gzip, gzip"),)),
    Odd("accepted-otlp-json-bom", OTLP, b"\xef\xbb\xbf" + dumps({"resourceSpans": []}), 200, check=partial(0)),
    Odd("accepted-otlp-empty-protobuf", OTLP, b"", 200, content_type=PROTOBUF),
    Odd("accepted-otlp-empty-export", OTLP, b"{}", 200, check=partial(0)),
    Odd("accepted-otlp-trace-id-all-zero", OTLP, dumps(otlp_export("0" * 32)), 200, check=partial(3)),
    Odd("accepted-otlp-trace-id-short", OTLP, dumps(otlp_export("abcd")), 200, check=partial(3)),
    handed_over("otlp-token-count-infinity", "invalid", llm=llm_with("llm.token_count.prompt",
                                                                      {"doubleValue": "Infinity"})),
    handed_over("otlp-token-count-minus-infinity", "invalid", llm=llm_with("llm.token_count.completion",
                                                                            {"doubleValue": "-Infinity"})),
    handed_over("otlp-token-count-nan", "invalid", llm=llm_with("llm.token_count.completion", {"doubleValue": "NaN"})),
    handed_over("otlp-input-value-deep-json", "invalid", root=[attr("openinference.span.kind", "CHAIN"),
                                                              attr("input.value", nested(1000))]),
    handed_over("otlp-output-value-deep-json", "invalid", root=root_with("output.value", "{\"a\":" * 5000)),
    handed_over("otlp-doc-metadata-deep-json", "invalid", retriever=retriever_with(metadata=nested(1000))),
    handed_over("otlp-doc-score-string", "done", retriever=retriever_with(score="high")),
    handed_over("otlp-doc-score-numeric-string", "done", retriever=retriever_with(score="0.75")),
    handed_over("otlp-doc-metadata-not-an-object", "done", retriever=retriever_with(metadata="[1, 2]")),
    handed_over("otlp-doc-metadata-huge-int", "done", retriever=retriever_with(metadata='{"n": 1' + "0" * 30 + "}")),
    handed_over("otlp-token-count-string", "done", llm=llm_with("llm.token_count.prompt", {"stringValue": "lots"})),
    handed_over("otlp-token-count-bool", "done", llm=llm_with("llm.token_count.prompt", {"boolValue": True})),
    handed_over("otlp-token-count-negative", "done", llm=llm_with("llm.token_count.prompt", {"intValue": "-5"})),
    handed_over("otlp-token-count-over-1e8", "done", llm=llm_with("llm.token_count.completion",
                                                                   {"intValue": "100000001"})),
    handed_over("otlp-no-query", "incomplete", root=[attr("openinference.span.kind", "CHAIN")]),
    handed_over("otlp-gzip-good", "done", coding="gzip"),
    handed_over("otlp-protobuf-token-count-nan", "invalid", in_protobuf=True,
                llm=llm_with("llm.token_count.prompt", {"doubleValue": "NaN"})),
    handed_over("otlp-protobuf-gzip-token-count-infinity", "invalid", in_protobuf=True, coding="gzip",
                llm=llm_with("llm.token_count.completion", {"doubleValue": "Infinity"})),
    handed_over("otlp-protobuf-input-value-deep-json", "invalid", in_protobuf=True,
                root=[attr("openinference.span.kind", "CHAIN"), attr("input.value", "{\"q\":" * 2000)]),
    handed_over("otlp-service-name-dot", "done", service=".", app="default"),
    handed_over("otlp-service-name-dot-dot", "done", service="..", app="default"),
    handed_over("otlp-service-name-dot-led", "done", service=".x", app="x"),
    handed_over("otlp-service-name-slash", "done", service="a/../b", app="a-..-b"),
    handed_over("otlp-service-name-empty", "done", service="", app="default"),
]

# -- /v1/datasets and batches bound to a dataset -----------------------------------------------------------------------

PUSH = "POST /v1/datasets/odd-inputs/versions"


def item(**fields: Any) -> dict[str, Any]:
    return {"item_id": "i1", "query": "How do I reset it?", **fields}


def items(*listed: dict[str, Any]) -> bytes:
    return dumps({"items": list(listed)})


DATASET_CASES = [
    Odd("dataset-body-a-list", PUSH, b"[]", 422, "$"),
    Odd("dataset-items-missing", PUSH, b"{}", 422, "$"),
    Odd("dataset-items-null", PUSH, b'{"items": null}', 422, "$.items"),
    Odd("dataset-items-empty", PUSH, b'{"items": []}', 422, "$.items"),
    Odd("dataset-item-a-string", PUSH, b'{"items": ["q"]}', 422, "$.items[0]"),
    Odd("dataset-item-no-query", PUSH, items({"item_id": "i1"}), 422, "$.items[0]"),
    Odd("dataset-item-id-nul", PUSH, items(item(item_id="a\u0000b")), 422, "$.items[0].item_id"),
    Odd("dataset-item-id-repeated", PUSH, items(item(), item()), 422),
    Odd("dataset-item-both-label-kinds", PUSH, items(item(gold_doc_ids=["d"], relevance={"d": 1})), 422,
        "$.items[0]"),
    Odd("dataset-item-grade-4", PUSH, items(item(relevance={"d": 4})), 422),
    Odd("dataset-item-split-unknown", PUSH, items(item(split="train")), 422, "$.items[0].split"),
    Odd("dataset-item-source-unknown", PUSH, items(item(source="crowd")), 422, "$.items[0].source"),
    Odd("dataset-item-metadata-int-over-64-bits", PUSH, items(item(metadata={"k": 10**23})), 422,
        "$.items[0].metadata.k"),
    Odd("dataset-item-metadata-int-under-64-bits", PUSH, items(item(), item(item_id="i2", metadata={"k": -2**63 - 1})),
        422, "$.items[1].metadata.k"),
    Odd("dataset-description-over-2048", PUSH, dumps({"items": [item()], "description": long(2049)}), 422,
        "$.description"),
    Odd("dataset-not-json-content", PUSH, items(item()), 415, content_type="text/plain"),
    Odd("dataset-name-dot-led", "POST /v1/datasets/.x/versions", items(item()), 400, "path.name"),
    Odd("dataset-name-over-64", f"GET /v1/datasets/{long(65)}/versions", None, 400, "path.name"),
    Odd("dataset-version-zero", "GET /v1/datasets/odd-inputs/versions/0", None, 400, "path.version"),
    Odd("dataset-unknown", "GET /v1/datasets/no-such-dataset-here/versions", None, 404),
    Odd("dataset-offset-negative", "GET /v1/datasets/odd-inputs/versions/1?offset=-1", None, 400, "query.offset"),
    Odd("dataset-limit-over-1000", "GET /v1/datasets/odd-inputs/versions/1?limit=1001", None, 400, "query.limit"),
    Odd("batch-dataset-a-string", BATCH, batch(trace(), dataset="faq"), 422, "$.dataset"),
    Odd("batch-dataset-version-zero", BATCH, batch(trace(), dataset={"name": "faq", "version": 0}), 422,
        "$.dataset.version"),
    Odd("batch-dataset-unknown", BATCH, batch({"item_id": "i1"}, dataset={"name": "no-such-dataset-here",
                                                                          "version": 1}), 422, "$.dataset"),
    Odd("batch-item-id-without-dataset", BATCH, batch(trace(item_id="i1")), 422, "$.traces[0].item_id"),
    Odd("batch-bound-trace-neither-query-nor-item", BATCH,
        batch({"answer": "a"}, dataset={"name": "no-such-dataset-here", "version": 1}), 422, "$.traces[0].query"),
    Odd("online-item-id", TRACES, dumps({"traces": [trace(item_id="i1")]}), 422, "$.traces[0].item_id"),
    Odd("compare-on-mismatch-unknown", COMPARE + "&on_mismatch=maybe", None, 400, "query.on_mismatch"),
]

SESSION_CASES = [   # conversations (issue 29): the session fields, and the session endpoint's path
    Odd("turn-without-session", BATCH, batch(trace(turn=1)), 422, "$.traces[0]"),
    Odd("online-turn-without-session", TRACES, dumps({"traces": [trace(turn=0)]}), 422, "$.traces[0]"),
    Odd("turn-negative", BATCH, batch(trace(session_id="s", turn=-1)), 422, "$.traces[0].turn"),
    Odd("turn-over-100000", BATCH, batch(trace(session_id="s", turn=100_001)), 422, "$.traces[0].turn"),
    Odd("turn-string", BATCH, batch(trace(session_id="s", turn="1")), 422, "$.traces[0].turn"),
    Odd("session-id-empty", BATCH, batch(trace(session_id="")), 422, "$.traces[0].session_id"),
    Odd("session-id-slash", TRACES, dumps({"traces": [trace(session_id="a/b")]}), 422, "$.traces[0].session_id"),
    Odd("session-id-dot-dot", TRACES, dumps({"traces": [trace(session_id="..")]}), 422, "$.traces[0].session_id"),
    Odd("session-id-over-256-chars", BATCH, batch(trace(session_id=long(257))), 422, "$.traces[0].session_id"),
    Odd("history-role-system", BATCH, batch(trace(session_id="s", history=[{"role": "system", "content": "x"}])),
        422, "$.traces[0].history[0].role"),
    Odd("history-content-missing", BATCH, batch(trace(history=[{"role": "user"}])), 422, "$.traces[0].history[0]"),
    Odd("history-unknown-field", BATCH, batch(trace(history=[{"role": "user", "content": "x", "name": "a"}])), 422,
        "$.traces[0].history[0]"),
    Odd("history-over-200", BATCH, batch(trace(history=[{"role": "user", "content": "x"}] * 201)), 422,
        "$.traces[0].history"),
    Odd("history-not-a-list", BATCH, batch(trace(history="user: hi")), 422, "$.traces[0].history"),
    Odd("rewritten-query-empty", BATCH, batch(trace(rewritten_query="")), 422, "$.traces[0].rewritten_query"),
    Odd("session-evidence-doc-without-id", BATCH, batch(trace(session_evidence=[{"text": "t"}])), 422,
        "$.traces[0].session_evidence[0]"),
    Odd("session-path-dot-dot-escaped", "GET /v1/sessions/%2E%2E", None, 400, "path.session_id"),
    Odd("session-path-over-256-chars", f"GET /v1/sessions/{long(257)}", None, 400, "path.session_id"),
    Odd("session-path-control-char", "GET /v1/sessions/a%01b", None, 400, "path.session_id"),
    Odd("session-unknown", "GET /v1/sessions/no-such-session-here", None, 404),
]

ODD_INPUT: list[Odd] = [*TOP_LEVEL, *SYNTAX, *DUPLICATES, *TRACE_FIELDS, *DOCUMENTS, *OPTIONS, *ACCEPTED, *ONLINE,
                        *CALIBRATIONS, *LABEL_CASES, *POLICY_CASES, *HEADERS, *HTTP, *QUERIES, *OTLP_CASES,
                        *DATASET_CASES, *SESSION_CASES]
"""Every case, in the order sent."""
assert len({case.id for case in ODD_INPUT}) == len(ODD_INPUT), "case ids must be unique"
