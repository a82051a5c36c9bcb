"""One ragpulse trace from the spans of one OpenTelemetry trace.

Read, by span kind (OpenInference `openinference.span.kind`, else inferred from OpenLLMetry / GenAI attributes):

- query: the root span's `input.value` (or `traceloop.entity.input`), else the retriever's, else the last user
  message of an LLM span (`llm.input_messages.N.message`, `gen_ai.prompt.N`); in a conversation (`session.id`, or
  a chat history) that last user message comes before the retriever's input; JSON values give their `query`,
  `question`, `input` or `text` field;
- documents: `retrieval.documents.N.document.{id,content,score,metadata}` of RETRIEVER spans, in start order; with a
  RERANKER span its `reranker.output_documents` are the retrieved documents and its `reranker.input_documents` the
  candidates;
- answer: the root span's `output.value` (or `traceloop.entity.output`), else the last LLM span's output message
  (`llm.output_messages.N.message.content`, `gen_ai.completion.N.content`, `output.value`);
- usage: `llm.token_count.{prompt,completion}` or `gen_ai.usage.{input,output,prompt,completion}_tokens`, summed over
  LLM spans; model: `llm.model_name` or `gen_ai.response.model` / `gen_ai.request.model`;
- latency: retrieval, rerank and generation from those spans' durations, total from the root span's;
- conversation: `session.id` is the `session_id`; the LLM span's chat messages before the last user message (user and
  assistant ones; system and tool messages dropped) are the `history`, and the number of user messages among them the
  `turn` (inferred); a retriever's `input.value` that differs from the query is the `rewritten_query`.

The trace id is the OpenTelemetry trace id (32 hex characters); `app` is the resource's `service.name` (characters
outside `A-Za-z0-9._-` become `-`, `default` when unset); `environment` is the `deployment.environment.name` (or `deployment.environment`) of the
earliest span whose resource names one, read as one of ragpulse's three (`deployment_environment`): a name that says
staging, development or test is `staging`, one that says evaluation `evaluation`, any other `production`, as is a
trace whose resource names no deployment.

An attribute of the wrong type is coerced or dropped, with a note (`Assembled.notes`), never the whole trace: a
score or token count sent as a numeric string is read as a number, one that is no number is dropped (a token count
outside 0 .. MAX_TOKEN_COUNT too, alone or summed over the LLM spans), and so is
document metadata that is not an object or holds an integer msgpack cannot store. A value no trace can hold raises
SpansInvalid naming the attribute: a token count that is infinite or NaN, or JSON nested past MAX_JSON_DEPTH (which
Python's JSON parser could not even read at ~1,000 levels).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ragpulse.exceptions import SpansInvalid
from ragpulse.model.storable import INT_MAX, INT_MIN, OUT_OF_RANGE, unstorable
from ragpulse.model.trace import MAX_HISTORY_TURNS, MAX_TOKEN_COUNT, SessionId
from ragpulse.otlp.spans import SpanRecord

_APP_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_FIELDS = ("query", "question", "input", "text", "output", "answer", "content")
MAX_JSON_DEPTH = 64
"""The deepest JSON an attribute may nest (as `metadata` on POST /v1/traces): deeper is SpansInvalid."""
Note = tuple[str, str]
"""(action, what): `coerced` or `dropped`, and the attribute with why."""


@dataclass
class Assembled:
    """The trace as a wire-schema dict, and what it lacks (`query`, `documents`) when incomplete."""

    trace: dict[str, Any]
    missing: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    """Attributes of the wrong type that were coerced or dropped."""


def assemble(spans: Sequence[SpanRecord]) -> Assembled:
    """The ragpulse trace of `spans` (one OpenTelemetry trace, any order, duplicates allowed); SpansInvalid when there
    are none or one holds a value no trace can hold."""
    if not spans:
        raise SpansInvalid("no spans to assemble: its buffered spans expired or were evicted before the hand-over")
    notes: list[Note] = []
    spans = sorted({s.span_id: s for s in spans}.values(), key=lambda s: (s.start_ns, s.span_id))
    ids = {s.span_id for s in spans}
    root = next((s for s in spans if not s.parent_id or s.parent_id not in ids), spans[0])
    by_kind: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_kind.setdefault(span.kind, []).append(span)
    llms, retrievers, rerankers = by_kind.get("LLM", []), by_kind.get("RETRIEVER", []), by_kind.get("RERANKER", [])
    docs = [d for s in retrievers for d in _documents(s.attributes, "retrieval.documents", notes)]
    candidates = None
    if rerankers:
        candidates = [d["id"] for d in _documents(rerankers[-1].attributes, "reranker.input_documents", notes)] or \
            [d["id"] for d in docs] or None
        docs = _documents(rerankers[-1].attributes, "reranker.output_documents", notes) or docs
    chat = conversation(spans, root, llms, notes)
    query = _query(root, retrievers, llms, chat=bool(chat))
    trace = {"trace_id": root.trace_id, "app": app_name(root.service), "source": "production",
             "environment": trace_environment(spans),
             "query": query, "retrieved_docs": _unique(docs),
             "answer": _answer(root, llms), "candidates": candidates, "generator_model": _model(llms),
             "usage": _usage(llms, notes), "latency_ms": _latency(root, retrievers, rerankers, llms),
             "rewritten_query": _rewritten(retrievers, query), **chat}
    trace = {key: value for key, value in trace.items() if value not in (None, "", {}, [])}
    missing = [name for name, key in (("query", "query"), ("documents", "retrieved_docs")) if key not in trace]
    return Assembled(trace=trace, missing=missing, notes=notes)


def _documents(attributes: dict[str, Any], prefix: str, notes: list[Note]) -> list[dict[str, Any]]:
    docs = []
    for i in range(10_000):
        base = f"{prefix}.{i}.document"
        if f"{base}.id" not in attributes and f"{base}.content" not in attributes:
            break
        doc = {"id": str(attributes.get(f"{base}.id") or f"{prefix.split('.')[0]}-{i}"),
               "text": _text(attributes.get(f"{base}.content")),
               "score": _score(attributes.get(f"{base}.score"), f"{base}.score", notes),
               "metadata": _metadata(attributes.get(f"{base}.metadata"), f"{base}.metadata", notes)}
        docs.append({key: value for key, value in doc.items() if value is not None})
    return docs


def _unique(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Documents in rank order; one retrieved by two retrievers keeps its first position."""
    seen: dict[tuple[str, str | None], dict[str, Any]] = {}
    for doc in docs:
        seen.setdefault((doc["id"], doc.get("text")), doc)
    return list(seen.values())


def _query(root: SpanRecord, retrievers: list[SpanRecord], llms: list[SpanRecord], chat: bool = False) -> str | None:
    """The root's input, else the retriever's, else the LLM's last user message; in a conversation (a session or a
    chat history) the user's last message comes before the retriever's input, which is then the app's rewrite."""
    inputs = (root, *retrievers)
    for span in inputs[:1] if chat else inputs:
        found = _field(span.attributes, "input.value", "traceloop.entity.input")
        if found:
            return found
    for span in reversed(llms):
        found = _last_message(span.attributes, "llm.input_messages", "user") or \
            _last_message(span.attributes, "gen_ai.prompt", "user")
        if found:
            return found
    for span in retrievers if chat else ():
        found = _field(span.attributes, "input.value", "traceloop.entity.input")
        if found:
            return found
    return None


def _rewritten(retrievers: list[SpanRecord], query: str | None) -> str | None:
    """What the retriever was asked (its `input.value`) when it differs from the user's query: the app's rewrite."""
    for span in retrievers:
        asked = _field(span.attributes, "input.value")
        if asked and query and asked.strip() != query.strip():
            return asked
    return None


def conversation(spans: Sequence[SpanRecord], root: SpanRecord, llms: list[SpanRecord],
                 notes: list[Note]) -> dict[str, Any]:
    """`session_id`, `turn` and `history` of a chat turn: `session.id` (OpenInference; the root span's first, else any
    span's), and the messages of the last LLM span that has any (`llm.input_messages.N.message.{role,content}`, else
    `gen_ai.prompt.N.{role,content}`): the messages before its last user message, user and assistant ones only (system
    and tool messages dropped), are the history, at most the latest MAX_HISTORY_TURNS. The turn index is inferred
    (a heuristic): the number of user messages in that history. An unusable `session.id` is dropped with a note."""
    found: dict[str, Any] = {}
    session = next((s.attributes["session.id"] for s in (root, *spans) if s.attributes.get("session.id")), None)
    if session is not None:
        try:
            found["session_id"] = msgspec.convert(str(session), SessionId)
        except msgspec.ValidationError as exc:
            notes.append(("dropped", f"session.id: {_shown(session)} is no session id ({exc})"))
    messages = next((m for span in reversed(llms) if (m := _messages(span.attributes))), [])
    last_user = max((i for i, (role, _) in enumerate(messages) if role == "user"), default=None)
    if last_user is None:
        return found
    history = [{"role": role, "content": content} for role, content in messages[:last_user]
               if role in ("user", "assistant")][-MAX_HISTORY_TURNS:]
    if history:
        found["history"] = history
    if "session_id" in found:
        found["turn"] = sum(1 for turn in history if turn["role"] == "user")
    return found


def _messages(attributes: dict[str, Any]) -> list[tuple[str, str]]:
    """The (role, content) input messages of an LLM span, in order: OpenInference's, else OpenLLMetry / GenAI's."""
    for prefix, base in (("llm.input_messages", "{prefix}.{i}.message.{key}"), ("gen_ai.prompt", "{prefix}.{i}.{key}")):
        found = []
        for i in range(10_000):
            content = attributes.get(base.format(prefix=prefix, i=i, key="content"))
            role = attributes.get(base.format(prefix=prefix, i=i, key="role"))
            if content is None and role is None:
                break
            found.append((str(role or "").lower(), _text(content) or ""))
        if found:
            return found
    return []


def _answer(root: SpanRecord, llms: list[SpanRecord]) -> str | None:
    found = _field(root.attributes, "output.value", "traceloop.entity.output")
    if found or not llms:
        return found
    last = llms[-1].attributes
    return (_last_message(last, "llm.output_messages", None) or _last_message(last, "gen_ai.completion", None)
            or _field(last, "output.value"))


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


def _field(attributes: dict[str, Any], *names: str) -> str | None:
    """The first of `names` set: a string attribute, or the text field of a JSON one."""
    name = next((n for n in names if attributes.get(n)), names[0])
    value = attributes.get(name)
    if not isinstance(value, str) or not value.strip():
        return None
    parsed = _json(value, name)
    if isinstance(parsed, dict):
        return next((parsed[k] for k in _FIELDS if isinstance(parsed.get(k), str) and parsed[k].strip()), value)
    return value


def _json(value: str, name: str) -> Any:
    """The JSON a string attribute holds, None when it holds none; SpansInvalid past MAX_JSON_DEPTH."""
    if value.lstrip()[:1] not in ("{", "["):
        return None
    try:
        parsed = json.loads(value)
    except RecursionError:
        raise SpansInvalid(f"{name} holds JSON nested too deeply to read (at most {MAX_JSON_DEPTH} levels)") from None
    except ValueError:
        return None
    if _depth(parsed) > MAX_JSON_DEPTH:
        raise SpansInvalid(f"{name} holds JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return parsed


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in `value`, walked without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            stack.extend((item, depth + 1) for item in (node.values() if isinstance(node, dict) else node))
    return deepest


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else json.dumps(value)


def _metadata(value: Any, name: str, notes: list[Note]) -> dict[str, Any] | None:
    """An object, or a string holding a JSON object; anything else, or one msgpack cannot store, dropped."""
    if value is None:
        return None
    parsed = _json(value, name) if isinstance(value, str) else value
    if isinstance(parsed, dict) and _depth(parsed) > MAX_JSON_DEPTH:
        raise SpansInvalid(f"{name} nests deeper than {MAX_JSON_DEPTH} levels")
    if not isinstance(parsed, dict):
        notes.append(("dropped", f"{name}: not an object"))
        return None
    if any(reason == OUT_OF_RANGE for _, reason in unstorable(parsed)):
        notes.append(("dropped", f"{name}: holds an integer outside {INT_MIN} .. {INT_MAX}"))
        return None
    return parsed


def _score(value: Any, name: str, notes: list[Note]) -> float | None:
    """A document score: a number, or a numeric string read as one; anything else dropped."""
    if value is None:
        return None
    number = _number(value)
    if number is None or not math.isfinite(number):
        notes.append(("dropped", f"{name}: {_shown(value)} is not a finite number"))
        return None
    if isinstance(value, str):
        notes.append(("coerced", f"{name}: the string {_shown(value)} read as {number}"))
    return number


def _count(value: Any, name: str, notes: list[Note]) -> int | None:
    """A token count: an integer, a whole float, or a numeric string; SpansInvalid when infinite or NaN; dropped when
    no number, or outside 0 .. MAX_TOKEN_COUNT (the trace would break its schema for one attribute)."""
    number = _number(value)
    if number is None:
        notes.append(("dropped", f"{name}: {_shown(value)} is not a number"))
        return None
    if not math.isfinite(number):
        raise SpansInvalid(f"{name} is {number}: not a token count")
    if not 0 <= number <= MAX_TOKEN_COUNT:
        notes.append(("dropped", f"{name}: {_shown(value)} is outside 0 .. {MAX_TOKEN_COUNT}"))
        return None
    if isinstance(value, str) or number != int(number):
        notes.append(("coerced", f"{name}: {_shown(value)} read as {int(number)}"))
    return int(number)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _shown(value: Any) -> str:
    return repr(value)[:80]


def _model(llms: list[SpanRecord]) -> str | None:
    for span in reversed(llms):
        for key in ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model"):
            if isinstance(span.attributes.get(key), str):
                return span.attributes[key]
    return None


def _usage(llms: list[SpanRecord], notes: list[Note]) -> dict[str, int] | None:
    prompt = _sum(llms, ("llm.token_count.prompt", "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"), notes)
    completion = _sum(llms, ("llm.token_count.completion", "gen_ai.usage.output_tokens",
                             "gen_ai.usage.completion_tokens"), notes)
    usage = {"prompt_tokens": prompt, "completion_tokens": completion}
    return {k: v for k, v in usage.items() if v is not None} or None


def _sum(spans: list[SpanRecord], keys: tuple[str, ...], notes: list[Note]) -> int | None:
    """Each span's first count of `keys` that reads as one, summed; None when no span has one."""
    present = []
    for span in spans:
        for key in (k for k in keys if span.attributes.get(k) is not None):
            count = _count(span.attributes[key], key, notes)
            if count is not None:
                present.append(count)
                break
    total = sum(present) if present else None
    if total is not None and total > MAX_TOKEN_COUNT:
        notes.append(("dropped", f"{keys[0]}: the spans' sum {total} is over {MAX_TOKEN_COUNT}"))
        return None
    return total


def _latency(root: SpanRecord, retrievers: list[SpanRecord], rerankers: list[SpanRecord],
             llms: list[SpanRecord]) -> dict[str, float]:
    stages = {"retrieval": retrievers, "rerank": rerankers, "generation": llms}
    latency = {stage: round(sum(s.duration_ms for s in spans), 3) for stage, spans in stages.items() if spans}
    latency["total"] = round(root.duration_ms, 3)
    return latency


_NOT_PRODUCTION = {
    **dict.fromkeys(("staging", "stage", "stg", "preprod", "preproduction", "uat", "qa", "test", "testing", "tst",
                     "dev", "develop", "development", "local", "sandbox", "demo", "nonprod", "nonproduction"), "staging"),
    **dict.fromkeys(("evaluation", "eval", "evaluations", "evals"), "evaluation"),
}
"""Deployment names, and the first word of longer ones (`staging-eu`, `dev_alice`), read as another environment than
production."""
_WORDS = re.compile(r"[^a-z0-9]+")


def trace_environment(spans: Sequence[SpanRecord]) -> str | None:
    """The environment of a trace's spans: the deployment the earliest span's resource names (the root's, in a trace
    that crosses services), read by `deployment_environment`; None when no span names one."""
    named = [span for span in spans if span.deployment]
    return deployment_environment(min(named, key=lambda s: (s.start_ns, s.span_id)).deployment) if named else None


def deployment_environment(deployment: str) -> str | None:
    """The ragpulse environment of a resource's deployment name, or None when it names none (the trace is then
    `production`, as every OTLP trace was before environments were read).

    The label set is fixed (three values), so a free-form name is read, not kept: a name that says staging,
    development, test, QA or UAT is `staging` (counted, never alerting), one that says evaluation `evaluation`; any
    other is `production`: a deployment named `prod-eu-1` or `live` must keep its alerts, and a name ragpulse does not
    know costs at worst what sending no name does."""
    name = deployment.strip().lower()
    if not name:
        return None
    words = [word for word in _WORDS.split(name) if word]
    whole = "".join(words)
    return _NOT_PRODUCTION.get(whole) or _NOT_PRODUCTION.get(words[0] if words else "") or "production"


def app_name(service: str) -> str:
    """The `app` of a resource's `service.name` (an app name may not start with a dot: `.`, `..` are no name)."""
    return _APP_CHARS.sub("-", service).strip("-.")[:64].rstrip("-.") or "default"
