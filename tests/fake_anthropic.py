"""A fake Anthropic Messages API on loopback: a real HTTP server that the real anthropic SDK talks to via base_url.

By default it judges like a literal-minded LLM writing prompt v4's tool input: each answer sentence is a claim with
its reasoning, supported when it appears in a document or a session document (quoted from there; never from the
history), unsupported otherwise, and every document gets a relevance entry by rank; a rewritten query is
faithful when it keeps the question's names and figures. Tests script faults with `push(...)`: the next requests
get them in order (429 with retry-after, 529, 500, 401, slow answers, malformed or truncated tool input, a 200 that
is not a message).

Prompt caching is simulated: when the request marks a prefix with `cache_control` and that prefix reaches the
request model's minimum cacheable length (tests.tokens.MIN_CACHEABLE_TOKENS, or `cache_min_tokens` when given), the
first request with that prefix reports it as `cache_creation_input_tokens` and later ones as
`cache_read_input_tokens`; `input_tokens` then counts only the rest. Tokens are characters / 4 of the JSON body
(`usage="quarter"`, the default: cheap, and what the dry run's estimate is fitted to) or counted with a real tokenizer
over the text the model reads (`usage="cl100k"`: what prompt-size figures use; see tests.tokens).
"""

from __future__ import annotations

import html
import json
import re
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests import tokens
from tests.loopback import JudgeFake, json_handler

_BLOCK = re.compile(r"<(question|answer|reference|answer_1|answer_2|rewritten_query)>(.*?)</\1>", re.S)
_SESSION_DOC = re.compile(r'<session_document id="([^"]*)"[^>]*>(.*?)</session_document>', re.S)
_TURN = re.compile(r'<turn role="([^"]*)">(.*?)</turn>', re.S)
_NAME = re.compile(r"(?<!^)\b(?:[A-Z][\w-]*|\d[\d.,:]*)")
_ANY_DOC = re.compile(r'<document id="([^"]*)"[^>]*>(.*?)</document>', re.S)
_DOC = re.compile(r'<document id="([^"]*)"(?: chunk="([^"]*)")? rank="(\d+)"(?P<rest>[^>]*)>(.*?)</document>', re.S)
_ATTRIBUTE = re.compile(r' (\w+)="([^"]*)"')
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
ABSTAIN = ("don't know", "do not know", "not covered", "cannot answer", "can't answer", "no information")
PAIRWISE_TOOL = "record_preference"
"""The pairwise comparison's tool, answered by a fake's `prefer`."""
ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error", 500: "api_error",
               529: "overloaded_error", 400: "invalid_request_error"}


@dataclass
class Fault:
    """What the next request gets instead of a normal answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    tool_input: dict[str, Any] | None = None
    stop_reason: str = "tool_use"
    body: Any = None
    """Sent with a 200 instead of a message: `bytes` as is (an HTML page, with its `headers`' content-type), anything
    else as JSON (the wrong shape); as a proxy or a wrong base URL answers."""


@dataclass(frozen=True)
class Doc:
    """One <document> block as the judge sent it."""

    id: str
    chunk: str | None
    rank: int
    text: str
    attributes: dict[str, str] = field(default_factory=dict)
    """Any further attributes (updated, superseded, superseded_by), unescaped."""


def parse_user_message(text: str) -> dict[str, Any]:
    """Recover the trace from the judge's delimited blocks: question, answer, reference, rewritten_query, `docs` (a
    Doc list), `session_docs` (Docs of rank 0) and `history` ((role, text) pairs)."""
    blocks = {name: html.unescape(body) for name, body in _BLOCK.findall(text)}
    docs = [Doc(html.unescape(i), html.unescape(c) if c else None, int(r), html.unescape(t),
                {k: html.unescape(v) for k, v in _ATTRIBUTE.findall(rest)})
            for i, c, r, rest, t in _DOC.findall(text)]
    session = [Doc(html.unescape(i), None, 0, html.unescape(t)) for i, t in _SESSION_DOC.findall(text)]
    history = [(role, html.unescape(body)) for role, body in _TURN.findall(text)]
    return {**blocks, "docs": docs, "session_docs": session, "history": history}


def rewrite_faithful(trace: dict[str, Any]) -> bool | None:
    """A literal reading of the rewrite: faithful iff every name and number of the QUESTION (a capitalised word past
    the first, a figure) is in the rewritten query; None without one."""
    rewrite = trace.get("rewritten_query")
    if rewrite is None:
        return None
    return all(name.lower() in rewrite.lower() for name in _NAME.findall(trace.get("question", "")))


def literal_verdicts(trace: dict[str, Any]) -> dict[str, Any]:
    """Prompt v3's tool input, judged literally: every answer sentence is listed; each yields one claim (none when the
    answer abstains), supported iff the sentence appears verbatim (case-folded) in a document. Nullable fields are
    present as null, as strict decoding writes them."""
    answer = trace.get("answer", "")
    abstained = any(p in answer.lower() for p in ABSTAIN)
    sentences, supporting = [], set()
    for sentence in [s for s in _SENTENCE.split(answer.strip()) if s]:
        core = sentence.rstrip(".!?").strip()
        doc = next((d for d in [*trace["docs"], *trace.get("session_docs", ())] if core.lower() in d.text.lower()),
                   None)
        if abstained:
            claims = []
        elif doc:
            start = doc.text.lower().index(core.lower())
            evidence = {"doc_id": doc.id, "chunk_id": doc.chunk, "quote": doc.text[start:start + len(core)]}
            claims = [{"text": sentence, "reasoning": f"Document {doc.id} states it.", "evidence": [evidence],
                       "verdict": "supported"}]
            supporting.add(doc.rank)  # a session document's rank 0 is no retrieved rank
        else:
            claims = [{"text": sentence, "reasoning": "No document states it.", "evidence": [],
                       "verdict": "unsupported"}]
        sentences.append({"sentence": sentence, "claims": claims})
    judged = [c for s in sentences for c in s["claims"]]
    reference = trace.get("reference")
    return {
        "sentences": sentences, "answer_relevance_reason": "scripted", "answer_relevance": 3 if judged else 1,
        "context_relevance": [{"rank": d.rank, "doc_id": d.id, "score": 3 if d.rank in supporting else 1}
                              for d in trace["docs"]],
        "answerable_from_context": any(c["verdict"] == "supported" for c in judged),
        "abstained": abstained,
        "key_facts": [{"fact": reference, "covered": reference.lower() in answer.lower()}] if reference else None,
        "injection_reason": None, "injection_followed": None, "rewrite_faithful": rewrite_faithful(trace),
    }


def parse_comparison(text: str) -> dict[str, Any]:
    """Recover a pairwise comparison from its blocks: question, reference, answer_1, answer_2 and `docs` (texts)."""
    blocks = {name: html.unescape(body) for name, body in _BLOCK.findall(text)}
    return {**blocks, "docs": [html.unescape(body) for _, body in _ANY_DOC.findall(text)]}


def supported_sentences(answer: str, docs: list[str]) -> int:
    """Sentences of `answer` found verbatim (case-folded) in a document."""
    sentences = [s.rstrip(".!?").strip().lower() for s in _SENTENCE.split(answer.strip()) if s.strip()]
    return sum(any(s in doc.lower() for doc in docs) for s in sentences if s)


def grounded_preference(item: dict[str, Any]) -> dict[str, Any]:
    """record_preference as a literal-minded judge writes it: the answer with more sentences a document states wins,
    whatever its position; a tie when they have as many."""
    first, second = (supported_sentences(item.get(k, ""), item["docs"]) for k in ("answer_1", "answer_2"))
    preferred = "tie" if first == second else "1" if first > second else "2"
    return {"reasoning": f"ANSWER 1 has {first} supported sentences, ANSWER 2 has {second}.", "preferred": preferred}


def always_first(item: dict[str, Any]) -> dict[str, Any]:
    """A judge with pure position bias: whatever stands first wins."""
    return {"reasoning": "ANSWER 1 reads better.", "preferred": "1"}


def cached_prefix(body: dict[str, Any]) -> list[Any] | None:
    """Tools, then system blocks, up to and including the last block marked `cache_control`; None when unmarked."""
    system = body.get("system")
    blocks = [*body.get("tools", []), *(system if isinstance(system, list) else [])]
    marked = [i for i, block in enumerate(blocks) if block.get("cache_control")]
    return blocks[:marked[-1] + 1] if marked else None


class FakeAnthropic(JudgeFake):
    """Start with `with FakeAnthropic() as fake:`; point the SDK at `fake.url`."""

    def __init__(self, model: str = "claude-sonnet-4-6", latency: float = 0.0, rpm: int = 0,
                 window_seconds: float = 60.0, cache_min_tokens: int | None = None, supports_strict: bool = True,
                 prefer: Callable[[dict[str, Any]], dict[str, Any]] = grounded_preference,
                 usage: str = "quarter") -> None:
        super().__init__(json_handler(lambda handler, body: self.respond(
            body, {k.lower(): v for k, v in handler.headers.items()})))
        self.model = model
        self.prefer = prefer
        """How it answers a pairwise comparison (record_preference), given parse_comparison's item."""
        self.cache_min_tokens = cache_min_tokens
        """The shortest prefix it caches; None: the request model's minimum (tests.tokens.min_cacheable)."""
        self.usage = usage
        """How it counts tokens: "quarter" (characters / 4 of the JSON body) or "cl100k" (a real tokenizer over the text
        the model reads)."""
        self.supports_strict = supports_strict
        self.cached_prefixes: set[str] = set()
        self.latency = latency
        self.rpm = rpm
        self.window_seconds = window_seconds
        self.admitted: deque[float] = deque()
        self.rejected = 0
        self.tool_answers: dict[str, Callable[[str], dict[str, Any] | Fault]] = {
            PAIRWISE_TOOL: lambda text: self.prefer(parse_comparison(text))}
        """Tool name -> the answer to a request forcing that tool (other than record_verdicts): from the user
        message, the tool input, or a Fault to send instead (synthetic generation's write, closed-book and verify
        calls; a pairwise comparison, answered by `prefer`)."""

    def respond(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Status, headers and JSON body for one Messages API request."""
        with self.lock:
            self.requests.append({"body": body, "headers": headers, "at": time.monotonic()})
        first = body["messages"][0]["content"]
        tool = (body.get("tool_choice") or {}).get("name", "record_verdicts")
        fault = self.scripted.next(parse_user_message(first).get("question")) or self._tool_answer(tool, first)
        request_id = f"req_{uuid.uuid4().hex[:20]}"
        wait = self._over_limit()
        if wait is not None:
            error = {"type": "error", "error": {"type": "rate_limit_error", "message": "requests per minute exceeded"}}
            return 429, {"request-id": request_id, "retry-after": str(max(1, round(wait)))}, error
        if not self.supports_strict and any("strict" in tool for tool in body.get("tools", [])):
            error = {"type": "error", "error": {"type": "invalid_request_error",
                                                "message": "tools.0.custom.strict: Extra inputs are not permitted"}}
            return 400, {"request-id": request_id}, error
        if fault.delay or self.latency:
            time.sleep(fault.delay or self.latency)
        if fault.status != 200:
            error = {"type": "error", "error": {"type": ERROR_TYPES.get(fault.status, "api_error"),
                                                "message": f"scripted {fault.status}"}}
            return fault.status, {"request-id": request_id, **fault.headers}, error
        if fault.body is not None:
            return 200, {"request-id": request_id, **fault.headers}, fault.body
        tool_input = fault.tool_input if fault.tool_input is not None else literal_verdicts(parse_user_message(first))
        message = {
            "id": f"msg_{uuid.uuid4().hex[:20]}", "type": "message", "role": "assistant", "model": self.model,
            "content": [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:20]}", "name": tool,
                         "input": tool_input}],
            "stop_reason": fault.stop_reason, "stop_sequence": None,
            "usage": {**self._input_usage(body), "output_tokens": len(json.dumps(tool_input)) // 4},
        }
        return 200, {"request-id": request_id}, message

    def _tool_answer(self, tool: str, user_message: str) -> Fault:
        """The scripted answer of a task tool, as a Fault (its tool input, or the fault to send); none scripted: the
        default verdicts."""
        answer = self.tool_answers.get(tool)
        if answer is None:
            return Fault()
        made = answer(user_message)
        return made if isinstance(made, Fault) else Fault(tool_input=made)

    def _input_usage(self, body: dict[str, Any]) -> dict[str, int]:
        """input_tokens, plus cache fields when the request marks a cacheable prefix (a creation, then reads)."""
        prefix = cached_prefix(body)
        if self.usage == "quarter":
            total, cached = tokens.quarter(body), len(json.dumps(prefix)) // 4 if prefix is not None else 0
        else:
            total, cached = tokens.count(tokens.parts(body)), tokens.count(prefix) if prefix is not None else 0
        minimum = self.cache_min_tokens if self.cache_min_tokens is not None else \
            tokens.min_cacheable(str(body.get("model", "")))
        if prefix is None or cached < minimum:
            return {"input_tokens": total}
        key = json.dumps([body.get("model"), prefix], sort_keys=True)
        with self.lock:
            hit = key in self.cached_prefixes
            self.cached_prefixes.add(key)
        return {"input_tokens": max(1, total - cached), "cache_read_input_tokens": cached if hit else 0,
                "cache_creation_input_tokens": 0 if hit else cached}

    def _over_limit(self) -> float | None:
        """Enforce `rpm` requests per `window_seconds` (a moving window); seconds to wait when over it."""
        if not self.rpm:
            return None
        now = time.monotonic()
        with self.lock:
            while self.admitted and self.admitted[0] <= now - self.window_seconds:
                self.admitted.popleft()
            if len(self.admitted) >= self.rpm:
                self.rejected += 1
                return self.admitted[0] + self.window_seconds - now
            self.admitted.append(now)
        return None


def verdict_input(trace: dict[str, Any], hallucinated: bool) -> dict[str, Any]:
    """record_verdicts input calling the whole answer one claim: unsupported when `hallucinated`, else supported by a
    quote (the first line) of the first document not marked superseded, so the quote check keeps it."""
    answer = trace.get("answer", "")
    current = next((d for d in trace["docs"] if "superseded" not in d.attributes and "superseded_by" not in
                    d.attributes), trace["docs"][0])
    quote = current.text.split("\n", 1)[0]
    claim = {"text": answer, "reasoning": "scripted", "verdict": "unsupported", "evidence": []} if hallucinated else \
        {"text": answer, "reasoning": "scripted", "verdict": "supported",
         "evidence": [{"doc_id": current.id, "chunk_id": current.chunk, "quote": quote}]}
    return {
        "sentences": [{"sentence": answer, "claims": [claim]}], "answer_relevance_reason": "scripted",
        "answer_relevance": 3, "context_relevance": [{"rank": d.rank, "doc_id": d.id, "score": 2}
                                                     for d in trace["docs"]],
        "answerable_from_context": True, "abstained": False, "key_facts": None, "injection_reason": None,
        "injection_followed": None, "rewrite_faithful": None,
    }


def scripted_verdicts(fake: FakeAnthropic, label: Callable[[dict[str, Any]], bool]) -> None:
    """Make `fake` answer every record_verdicts call with `verdict_input`, hallucinated as `label(trace)` says."""
    fake.tool_answers["record_verdicts"] = lambda text: verdict_input(
        parsed := parse_user_message(text), label(parsed))
