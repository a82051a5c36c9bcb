"""The OpenAI-compatible judge: chat completions (vLLM, Ollama, llama.cpp server, LiteLLM, OpenAI) as a provider
adapter of the structured judge loop.

The output is structured one of two ways, with the same generated schema (ragpulse.judges.tool.input_schema()):
`tools` forces a record_verdicts function call with tool_choice; `json_schema` asks for the JSON itself through
`response_format`, which servers enforce by constrained decoding. `auto` tries tools and, when the server answers
that it does not support them (a 4xx naming tools), falls back to json_schema once and remembers that for the rest
of the process (per base URL and model). The system prompt, user message and PROMPT_VERSION are the Anthropic
judge's; the system prompt goes in a system message. Calls are posted through ragpulse.judges.transport (aiohttp and
msgspec, the SDK client's configuration and errors) and read from their JSON, without the SDK's models.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping
from typing import Any, Literal

import msgspec
import openai

from ragpulse.judges.headers import openai_pause_from_headers
from ragpulse.judges.prompt import JUDGE_TASK, user_message
from ragpulse.judges.ratelimit import JudgeLimiter
from ragpulse.judges.structured import Failure, Reply, RetryPolicy, StructuredJudge, Usage, not_the_answer
from ragpulse.judges.task import ToolTask
from ragpulse.judges.transport import JsonTransport
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import JudgeObserver

log = logging.getLogger(__name__)
StructuredMode = Literal["tools", "json_schema", "auto"]
TRUNCATED = "the output was truncated at max_tokens"


def request_parts(task: ToolTask) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The system message, the `tools` mode's arguments and the `json_schema` mode's, for `task`.

    The system message is the rules, then the few-shot examples: one fixed prefix, which OpenAI's automatic prompt
    caching can hold. The tool is an OpenAI function tool with the same schema as the Anthropic tool's input_schema,
    strict (every property required, nullable ones as anyOf null), so servers that enforce it decode only valid
    output; the response format is the same schema, strict."""
    tool = task.tool
    function = {"name": task.name, "description": tool["description"], "parameters": tool["input_schema"],
                "strict": True}
    return (f"{task.system}\n\n{task.examples}",
            {"tools": [{"type": "function", "function": function}],
             "tool_choice": {"type": "function", "function": {"name": task.name}}},
            {"response_format": {"type": "json_schema", "json_schema": {
                "name": task.name, "description": tool["description"], "schema": tool["input_schema"],
                "strict": True}}})


_LEARNED: dict[tuple[str, str], str] = {}
"""(base URL, model) -> the mode `auto` settled on in this process, so the fallback happens once."""


class OpenAIProvider:
    """Requests, responses and errors of an OpenAI-compatible chat completions server."""

    name = "openai"
    api_error = openai.APIError

    def __init__(self, client: openai.AsyncOpenAI, model: str, max_tokens: int, temperature: float | None,
                 structured: StructuredMode = "auto", task: ToolTask = JUDGE_TASK) -> None:
        self.client, self.model, self.max_tokens, self.structured = client, model, max_tokens, structured
        self.task = task
        self._system, self._tools_mode, self._schema_mode = request_parts(task)
        self._temperature = {"temperature": temperature} if temperature is not None else {}
        self._key = (str(client.base_url), model)
        self.transport = JsonTransport(client, openai)

    @property
    def mode(self) -> str:
        """The structured-output mode the next request uses."""
        if self.structured != "auto":
            return self.structured
        return _LEARNED.get(self._key, "tools")

    def first_turns(self, trace: Trace) -> list[dict[str, Any]]:
        """The trace as the one user message (the system message is added by `send`)."""
        return [{"role": "user", "content": user_message(trace)}]

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        """One request in the current mode; in `auto`, a server refusing tools gets the json_schema request."""
        mode = self.mode
        try:
            return await self._send(turns, mode)
        except openai.APIStatusError as exc:
            if self.structured != "auto" or mode != "tools" or not refuses_tools(exc):
                raise
        log.warning("judge server %s refuses tools for %s; using response_format json_schema from now on",
                    *self._key)
        _LEARNED[self._key] = "json_schema"
        return await self._send(turns, "json_schema")

    def params(self, turns: list[dict[str, Any]], cache_ttl: str | None = None) -> dict[str, Any]:
        """The chat completions request of `turns` in the current mode, as a batch request carries it (`body`).
        `cache_ttl` is ignored: OpenAI caches a repeated prefix by itself."""
        structured = self._tools_mode if self.mode == "tools" else self._schema_mode
        return {"model": self.model, "max_tokens": self.max_tokens,
                "messages": [{"role": "system", "content": self._system}, *turns], **structured, **self._temperature}

    def batch_reply(self, body: dict[str, Any]) -> Reply:
        """The Reply of a chat completion out of a batch's output file (billed at the batch price)."""
        if (what := not_a_completion(body)) is not None:
            raise not_the_answer("chat completions", "RAGPULSE_OPENAI_BASE_URL", body, {}, what)
        return dataclasses.replace(_reply(body, {}, self.model, self.task.name), delivery="batch")

    async def _send(self, turns: list[dict[str, Any]], mode: str) -> Reply:
        structured = self._tools_mode if mode == "tools" else self._schema_mode
        answer = await self.transport.post("/chat/completions", {
            "model": self.model, "max_tokens": self.max_tokens,
            "messages": [{"role": "system", "content": self._system}, *turns], **structured, **self._temperature})
        completion = _decoded(answer.content)
        if (what := not_a_completion(completion)) is not None:
            text = answer.content.decode("utf-8", "replace")
            raise not_the_answer("chat completions", "RAGPULSE_OPENAI_BASE_URL", text, answer.headers, what)
        return _reply(completion, answer.headers, self.model, self.task.name)

    def repair_turns(self, reply: Reply, problem: str) -> list[dict[str, Any]]:
        """The tool call answered by a tool message, or the reply's content answered by a user message."""
        message: dict[str, Any] = reply.turn
        call = next(iter(message.get("tool_calls") or []), None)
        if call is None:
            return [{"role": "assistant", "content": message.get("content") or "(empty)"},
                    {"role": "user", "content": self.task.json_repair_message(problem)}]
        return [
            {"role": "assistant", "content": None, "tool_calls": [{
                "id": call.get("id"), "type": "function",
                "function": {"name": call["function"]["name"], "arguments": call["function"].get("arguments")}}]},
            {"role": "tool", "tool_call_id": call.get("id"), "content": self.task.repair_message(problem)},
        ]

    def failure(self, exc: Exception) -> Failure:
        """Classify an openai.APIError."""
        response = getattr(exc, "response", None)
        return Failure(_status(exc), _describe(exc), response.headers if response is not None else {})

    def pause_hint(self, headers: Mapping[str, str]) -> float | None:
        """Seconds until an exhausted `x-ratelimit-*` limit resets (servers that send none: None)."""
        return openai_pause_from_headers(headers)

    async def aclose(self) -> None:
        """Close the transport's connections and the SDK's HTTP client."""
        await self.transport.aclose()


class OpenAIJudge(StructuredJudge):
    """Judge traces with any OpenAI-compatible server; every call is kept as an auditable JudgeCall."""

    def __init__(self, client: openai.AsyncOpenAI, model: str, max_tokens: int, temperature: float | None = 0.0,
                 structured: StructuredMode = "auto", limiter: JudgeLimiter | None = None,
                 retry: RetryPolicy = RetryPolicy(), observer: JudgeObserver | None = None) -> None:
        super().__init__(OpenAIProvider(client, model, max_tokens, temperature, structured), model, max_tokens,
                         limiter=limiter, retry=retry, observer=observer)


def refuses_tools(exc: openai.APIStatusError) -> bool:
    """True when a 400/422/501 says tools or tool_choice are unsupported (vLLM without a tool parser, llama.cpp
    without --jinja, an Ollama model without tool support all answer so)."""
    if exc.status_code not in (400, 422, 501):
        return False
    body = exc.body if isinstance(exc.body, dict) else {}
    said = f"{body.get('param') or ''} {body.get('message') or exc.message}".lower()
    return "tool" in said


def _decoded(content: bytes) -> Any:
    """The JSON of a 2xx body, or None when it is not JSON (a proxy's page)."""
    try:
        return msgspec.json.decode(content)
    except msgspec.DecodeError:
        return None


def not_a_completion(completion: object) -> str | None:
    """How a 2xx body, decoded from JSON, fails to be a chat completion this adapter can read, or None (a body that is
    not JSON decodes to None). An empty list of choices, or no usage, is a completion (some servers send so); no
    list of choices, or a choice without a message, is not."""
    if not isinstance(completion, dict):
        return "not a JSON object"
    choices = completion.get("choices")
    if not isinstance(choices, list):
        return "no list of choices"
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            return "a choice without a message"
        calls = message.get("tool_calls") or []
        if not isinstance(calls, list) or not all(
                isinstance(call, dict) and isinstance(call.get("function"), dict)
                and isinstance(call["function"].get("name"), str) for call in calls):
            return "a tool call without a function name"
    usage = completion.get("usage")
    if usage is not None and not (isinstance(usage, dict) and all(
            isinstance(usage.get(name), int | None) for name in ("prompt_tokens", "completion_tokens"))):
        return "token usage that is not counts"
    return None


def _reply(completion: dict[str, Any], headers: Mapping[str, str], model: str, tool_name: str) -> Reply:
    """The Reply of a chat completion as decoded from its JSON (not_a_completion(completion) is None)."""
    choices = completion.get("choices") or []
    choice = choices[0] if choices else None
    message: dict[str, Any] = choice["message"] if choice is not None else {"role": "assistant", "content": None}
    output, problem = _structured_output(message, tool_name)
    finish_reason = choice.get("finish_reason") if choice is not None else None
    if finish_reason == "length":
        problem = TRUNCATED
    return Reply(
        output=output, problem=problem, raw_output=output if output is not None else message,
        model=completion.get("model") or model, stop_reason=finish_reason, usage=_usage(completion.get("usage")),
        request_id=headers.get("x-request-id"), headers=headers, turn=message,
    )


def _usage(usage: Any) -> Usage:
    """Tokens as billed: `prompt_tokens` counts the cached ones too (`prompt_tokens_details.cached_tokens`, billed at
    the cached-input rate), so they are taken out of the input and counted as cache reads."""
    if not isinstance(usage, dict):
        return Usage(0, 0)
    details = usage.get("prompt_tokens_details")
    cached = (details.get("cached_tokens") if isinstance(details, dict) else None) or 0
    prompt = usage.get("prompt_tokens") or 0
    cached = cached if isinstance(cached, int) and 0 < cached <= prompt else 0
    return Usage(prompt - cached, usage.get("completion_tokens") or 0, cache_read_input_tokens=cached)


def _structured_output(message: dict[str, Any], tool_name: str) -> tuple[Any, str | None]:
    """The tool's JSON from the tool call, or from the content when there is no tool call."""
    calls = message.get("tool_calls") or []
    call = next((c for c in calls if c["function"]["name"] == tool_name), None)
    if call is None and calls:
        return None, f"no {tool_name} tool call in the response"
    text = call["function"].get("arguments") if call is not None else message.get("content")
    if not text or not isinstance(text, str):
        return None, f"no {tool_name} tool call or JSON content in the response"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"the {tool_name} output is not valid JSON ({exc})"


def _status(exc: Exception) -> str:
    match exc:
        case openai.RateLimitError():
            return "rate_limited"
        case openai.APIStatusError() if exc.status_code in (503, 529):
            return "overloaded"
        case openai.InternalServerError():
            return "server_error"
        case openai.APITimeoutError():
            return "timeout"
        case openai.APIConnectionError():
            return "connection_error"
        case openai.AuthenticationError() | openai.PermissionDeniedError():
            return "auth_error"
    return "bad_request"


def _describe(exc: Exception) -> str:
    if isinstance(exc, openai.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        return f"{exc.status_code} {body.get('message') or exc.message}"
    return type(exc).__name__
