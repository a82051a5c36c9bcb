"""A fake OpenAI-compatible chat completions server on loopback, that the real openai SDK talks to via base_url.

It judges as tests/fake_anthropic.py does (the same literal-minded verdicts from the same user message), answering
with a forced record_verdicts tool call, or with the JSON as content when the request asks for response_format
json_schema. `supports_tools=False` makes it answer a request with tools as a server without tool support does (400
naming tools). Tests script faults with `push(...)`: 429 with retry-after, 500, 401, truncation (finish_reason
"length"), invalid tool arguments, a 200 that is not a completion. Tokens are counted as tests.fake_anthropic counts
them (`usage="quarter"`, the default, or `"cl100k"`: see tests.tokens). `prompt_cache=True` simulates OpenAI's
automatic prompt caching (off by default, so a request's usage does not depend on the ones before it).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fake_anthropic import (
    PAIRWISE_TOOL, grounded_preference, literal_verdicts, parse_comparison, parse_user_message,
)
from tests import tokens
from tests.loopback import JudgeFake, json_handler

ERROR_TYPES = {401: "invalid_api_key", 403: "permission_denied", 429: "rate_limit_exceeded", 500: "server_error",
               400: "invalid_request_error"}
TOOLS_UNSUPPORTED = "tools are not supported by this server: start it with --enable-auto-tool-choice"


@dataclass
class Fault:
    """What the next request gets instead of a normal answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    tool_input: dict[str, Any] | None = None
    arguments: str | None = None
    """Raw text of the structured output, sent as is (e.g. JSON cut short); overrides tool_input."""
    finish_reason: str = "stop"
    body: Any = None
    """Sent with a 200 instead of a completion: `bytes` as is (an HTML page, with its `headers`' content-type),
    anything else as JSON (the wrong shape); as a proxy or a wrong base URL answers."""


class FakeOpenAI(JudgeFake):
    """Start with `with FakeOpenAI() as fake:`; point the SDK at `fake.base_url` (`.../v1`)."""

    def __init__(self, model: str = "qwen2.5:14b", supports_tools: bool = True,
                 prefer: Callable[[dict[str, Any]], dict[str, Any]] = grounded_preference,
                 usage: str = "quarter", prompt_cache: bool = False) -> None:
        super().__init__(json_handler(lambda handler, body: self.respond(
            handler.path, body, {k.lower(): v for k, v in handler.headers.items()})))
        self.model = model
        self.supports_tools = supports_tools
        self.prefer = prefer
        """How it answers a pairwise comparison (record_preference), given parse_comparison's item."""
        self.base_url = f"{self.url}/v1"
        self.usage = usage
        """How it counts prompt tokens: "quarter" (characters / 4 of the JSON body) or "cl100k" (the text the model
        reads)."""
        self.prompt_cache = prompt_cache
        """Report a prefix seen before as `prompt_tokens_details.cached_tokens`, as OpenAI does by itself: the tools
        and the messages before the first user message, when they reach 1,024 tokens, in whole steps of 128."""
        self.cached_prefixes: set[str] = set()
        self.tool_answers: dict[str, Callable[[str], dict[str, Any] | Fault]] = {
            PAIRWISE_TOOL: lambda text: self.prefer(parse_comparison(text))}
        """Tool (or response_format schema) name -> the answer to a request for it other than record_verdicts: from
        the user message, the structured output, or a Fault to send instead (synthetic generation's calls; a
        pairwise comparison, answered by `prefer`)."""

    def respond(self, path: str, body: dict[str, Any], headers: dict[str, str]
                ) -> tuple[int, dict[str, str], dict[str, Any]]:
        """Status, headers and JSON body for one chat completions request."""
        with self.lock:
            self.requests.append({"path": path, "body": body, "headers": headers})
        request_id = f"req_{uuid.uuid4().hex[:20]}"
        if path != "/v1/chat/completions":
            return 404, {"x-request-id": request_id}, {"error": {"message": f"no route {path}"}}
        if "tools" in body and not self.supports_tools:
            return 400, {"x-request-id": request_id}, _error(400, TOOLS_UNSUPPORTED, param="tools")
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        fault = self.scripted.next(parse_user_message(first).get("question")) or self._tool_answer(body, first)
        if fault.status != 200:
            return fault.status, {"x-request-id": request_id, **fault.headers}, _error(fault.status)
        if fault.body is not None:
            return 200, {"x-request-id": request_id, **fault.headers}, fault.body
        tool_input = fault.tool_input if fault.tool_input is not None else literal_verdicts(parse_user_message(first))
        text = fault.arguments if fault.arguments is not None else json.dumps(tool_input)
        message: dict[str, Any] = {"role": "assistant", "content": text, "tool_calls": None}
        if "tools" in body:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{uuid.uuid4().hex[:20]}", "type": "function",
                "function": {"name": body["tool_choice"]["function"]["name"], "arguments": text}}]}
        details = {"prompt_tokens_details": {"cached_tokens": self._cached(body)}} if self.prompt_cache else {}
        completion = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:20]}", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": fault.finish_reason}],
            "usage": {"prompt_tokens": self.prompt_tokens(body), "completion_tokens": len(text) // 4,
                      "total_tokens": self.prompt_tokens(body) + len(text) // 4,
                      **details},
        }
        return 200, {"x-request-id": request_id}, completion

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """What it reports as usage.prompt_tokens for this request."""
        return tokens.quarter(body) if self.usage == "quarter" else tokens.count(tokens.parts(body))

    def _cached(self, body: dict[str, Any]) -> int:
        """Tokens of this request's prefix read from the simulated cache (0 on its first sight, or under 1,024)."""
        messages = body.get("messages", [])
        before = messages[:next((i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages))]
        prefix = [*body.get("tools", []), *[m.get("content") or "" for m in before]]
        counted = tokens.quarter({"p": prefix}) if self.usage == "quarter" else tokens.count(prefix)
        if counted < 1024:
            return 0
        key = json.dumps([body.get("model"), prefix], sort_keys=True)
        with self.lock:
            hit = key in self.cached_prefixes
            self.cached_prefixes.add(key)
        return counted // 128 * 128 if hit else 0

    def _tool_answer(self, body: dict[str, Any], user_message: str) -> Fault:
        """The scripted answer for the tool or schema the request names, as a Fault; none scripted: the default."""
        named = (body.get("tool_choice") or {}).get("function", {}).get("name") or \
            (body.get("response_format") or {}).get("json_schema", {}).get("name")
        answer = self.tool_answers.get(named or "")
        if answer is None:
            return Fault()
        made = answer(user_message)
        return made if isinstance(made, Fault) else Fault(tool_input=made)


def _error(status: int, message: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message or f"scripted {status}", "type": ERROR_TYPES.get(status, "server_error"),
                      "param": param, "code": None}}
