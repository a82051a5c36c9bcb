"""One ragpulse trace from the spans of one OpenTelemetry trace.

Read, by span kind (OpenInference `openinference.span.kind`, else inferred from OpenLLMetry / GenAI attributes):

- query: the root span's `input.value` (or `traceloop.entity.input`), else the retriever's, else the last user
  message of an LLM span (`llm.input_messages.N.message`, `gen_ai.prompt.N`); JSON values give their `query`,
  `question`, `input` or `text` field;
- documents: `retrieval.documents.N.document.{id,content,score,metadata}` of RETRIEVER spans, in start order; with a
  RERANKER span its `reranker.output_documents` are the retrieved documents and its `reranker.input_documents` the
  candidates;
- answer: the root span's `output.value` (or `traceloop.entity.output`), else the last LLM span's output message
  (`llm.output_messages.N.message.content`, `gen_ai.completion.N.content`, `output.value`);
- usage: `llm.token_count.{prompt,completion}` or `gen_ai.usage.{input,output,prompt,completion}_tokens`, summed over
  LLM spans; model: `llm.model_name` or `gen_ai.response.model` / `gen_ai.request.model`;
- latency: retrieval, rerank and generation from those spans' durations, total from the root span's.

The trace id is the OpenTelemetry trace id (32 hex characters); `app` is the resource's `service.name` (characters
outside `A-Za-z0-9._-` become `-`, `default` when unset).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ragpulse.otlp.spans import SpanRecord

_APP_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_FIELDS = ("query", "question", "input", "text", "output", "answer", "content")


@dataclass
class Assembled:
    """The trace as a wire-schema dict, and what it lacks (`query`, `documents`) when incomplete."""

    trace: dict[str, Any]
    missing: list[str] = field(default_factory=list)


def assemble(spans: Sequence[SpanRecord]) -> Assembled:
    """The ragpulse trace of `spans` (one OpenTelemetry trace, any order, duplicates allowed)."""
    spans = sorted({s.span_id: s for s in spans}.values(), key=lambda s: (s.start_ns, s.span_id))
    ids = {s.span_id for s in spans}
    root = next((s for s in spans if not s.parent_id or s.parent_id not in ids), spans[0])
    by_kind: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_kind.setdefault(span.kind, []).append(span)
    llms, retrievers, rerankers = by_kind.get("LLM", []), by_kind.get("RETRIEVER", []), by_kind.get("RERANKER", [])
    docs = [d for s in retrievers for d in _documents(s.attributes, "retrieval.documents")]
    candidates = None
    if rerankers:
        candidates = [d["id"] for d in _documents(rerankers[-1].attributes, "reranker.input_documents")] or \
            [d["id"] for d in docs] or None
        docs = _documents(rerankers[-1].attributes, "reranker.output_documents") or docs
    trace = {"trace_id": root.trace_id, "app": _app(root.service), "source": "production",
             "query": _query(root, retrievers, llms), "retrieved_docs": _unique(docs),
             "answer": _answer(root, llms), "candidates": candidates, "generator_model": _model(llms),
             "usage": _usage(llms), "latency_ms": _latency(root, retrievers, rerankers, llms)}
    trace = {key: value for key, value in trace.items() if value not in (None, "", {}, [])}
    missing = [name for name, key in (("query", "query"), ("documents", "retrieved_docs")) if key not in trace]
    return Assembled(trace=trace, missing=missing)


def _documents(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    docs = []
    for i in range(10_000):
        base = f"{prefix}.{i}.document"
        if f"{base}.id" not in attributes and f"{base}.content" not in attributes:
            break
        doc = {"id": str(attributes.get(f"{base}.id") or f"{prefix.split('.')[0]}-{i}"),
               "text": _text(attributes.get(f"{base}.content")), "score": attributes.get(f"{base}.score"),
               "metadata": _metadata(attributes.get(f"{base}.metadata"))}
        docs.append({key: value for key, value in doc.items() if value is not None})
    return docs


def _unique(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Documents in rank order; one retrieved by two retrievers keeps its first position."""
    seen: dict[tuple[str, str | None], dict[str, Any]] = {}
    for doc in docs:
        seen.setdefault((doc["id"], doc.get("text")), doc)
    return list(seen.values())


def _query(root: SpanRecord, retrievers: list[SpanRecord], llms: list[SpanRecord]) -> str | None:
    for span in (root, *retrievers):
        found = _field(span.attributes.get("input.value") or span.attributes.get("traceloop.entity.input"))
        if found:
            return found
    for span in reversed(llms):
        found = _last_message(span.attributes, "llm.input_messages", "user") or \
            _last_message(span.attributes, "gen_ai.prompt", "user")
        if found:
            return found
    return None


def _answer(root: SpanRecord, llms: list[SpanRecord]) -> str | None:
    found = _field(root.attributes.get("output.value") or root.attributes.get("traceloop.entity.output"))
    if found or not llms:
        return found
    last = llms[-1].attributes
    return (_last_message(last, "llm.output_messages", None) or _last_message(last, "gen_ai.completion", None)
            or _field(last.get("output.value")))


def _last_message(attributes: dict[str, Any], prefix: str, role: str | None) -> str | None:
    found = None
    for i in range(1000):
        content = attributes.get(f"{prefix}.{i}.message.content", attributes.get(f"{prefix}.{i}.content"))
        if content is None:
            break
        said = attributes.get(f"{prefix}.{i}.message.role", attributes.get(f"{prefix}.{i}.role"))
        if role is None or said == role:
            found = _text(content)
    return found


def _field(value: Any) -> str | None:
    """A string attribute, or the text field of a JSON one."""
    if not isinstance(value, str) or not value.strip():
        return None
    if value.lstrip()[:1] in "{[":
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, dict):
            return next((parsed[k] for k in _FIELDS if isinstance(parsed.get(k), str) and parsed[k].strip()), value)
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else json.dumps(value)


def _metadata(value: Any) -> dict[str, Any] | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return None
        return parsed if isinstance(parsed, dict) else None
    return None


def _model(llms: list[SpanRecord]) -> str | None:
    for span in reversed(llms):
        for key in ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model"):
            if isinstance(span.attributes.get(key), str):
                return span.attributes[key]
    return None


def _usage(llms: list[SpanRecord]) -> dict[str, int] | None:
    prompt = _sum(llms, ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"))
    completion = _sum(llms, ("llm.token_count.completion", "gen_ai.usage.output_tokens",
                             "gen_ai.usage.completion_tokens"))
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    return {k: v for k, v in usage.items() if v is not None} or None


def _sum(spans: list[SpanRecord], keys: tuple[str, ...]) -> int | None:
    values = [next((int(s.attributes[k]) for k in keys if isinstance(s.attributes.get(k), int | float)), None)
              for s in spans]
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _latency(root: SpanRecord, retrievers: list[SpanRecord], rerankers: list[SpanRecord],
             llms: list[SpanRecord]) -> dict[str, float]:
    stages = {"retrieval": retrievers, "rerank": rerankers, "generation": llms}
    latency = {stage: round(sum(s.duration_ms for s in spans), 3) for stage, spans in stages.items() if spans}
    latency["total"] = round(root.duration_ms, 3)
    return latency


def _app(service: str) -> str:
    return _APP_CHARS.sub("-", service).strip("-")[:64] or "default"
