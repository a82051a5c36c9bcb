"""The Anthropic judge: Messages API with forced tool use, as a provider adapter of the structured judge loop.

Calls are posted through ragpulse.judges.transport (aiohttp and msgspec, the SDK client's configuration and errors) with
the SDK's own retries off (ragpulse.judges.structured retries, so that a 429 can pause every worker); the answer is
read from its JSON, without the SDK's models. The fixed prefix (tool definition and system prompt) is marked for the
provider's prompt cache when it is long enough to be cached (with the task's worked examples, for a model whose
minimum the short prefix misses: `ToolTask.for_model`); cache reads and writes are reported apart.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import anthropic
import msgspec

from ragpulse.exceptions import JudgeNotConfigured
from ragpulse.judges.headers import pause_from_headers
from ragpulse.judges.prompt import JUDGE_TASK, user_message
from ragpulse.judges.ratelimit import JudgeLimiter
from ragpulse.judges.structured import Failure, Reply, RetryPolicy, StructuredJudge, Usage, not_the_answer
from ragpulse.judges.task import ToolTask
from ragpulse.judges.transport import Answer, JsonTransport
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import JudgeObserver

__all__ = ["AnthropicJudge", "AnthropicProvider", "RetryPolicy", "system_blocks"]

log = logging.getLogger(__name__)
NOT_CONFIGURED = "judge not configured: set ANTHROPIC_API_KEY"
_NOT_STRICT: set[tuple[str, str]] = set()
"""(base URL, model) pairs whose API refused `strict` in this process (an older model, a gateway that does not know
it): they get the same tool without it, validated in code as before."""


def system_blocks(model: str, task: ToolTask = JUDGE_TASK, cache_ttl: str | None = None) -> list[dict[str, Any]]:
    """The system prompt and the few-shot examples as two text blocks, the last marked `cache_control` when the fixed
    prefix can be cached for `model`; the examples are `task.for_model(model)`'s (with the worked examples that bring
    the prefix to the model's minimum cacheable length, where it needs them).

    The marker caches the whole prefix before it: the tool definition (tools come first), the rules and the examples.
    A prefix shorter than the model's minimum is never cached: the API accepts the marker, silently caches nothing and
    bills the tokens as plain input, so a marker there would only suggest savings that cannot happen. The estimate is
    chars / 3.5, an over-estimate, so near the minimum the marker may still be a no-op; it never costs extra.
    `cache_ttl` "1h" asks for the 1-hour cache (batch delivery: a batch's requests run spread over up to an hour or
    more, past the default 5 minutes).
    """
    task = task.for_model(model)
    examples: dict[str, Any] = {"type": "text", "text": task.examples}
    if task.cacheable(model):
        examples["cache_control"] = {"type": "ephemeral", **({"ttl": cache_ttl} if cache_ttl else {})}
    return [{"type": "text", "text": task.system}, examples]


class AnthropicProvider:
    """Requests, responses and errors of Anthropic's Messages API."""

    name = "anthropic"
    api_error = anthropic.APIError

    def __init__(self, client: anthropic.AsyncAnthropic, model: str, max_tokens: int,
                 temperature: float | None, task: ToolTask = JUDGE_TASK) -> None:
        self.client, self.model, self.max_tokens = client, model, max_tokens
        self.task = task.for_model(model)
        """The task as this model is sent it (its estimates count the worked examples it carries)."""
        self.transport = JsonTransport(client, anthropic)
        self._system = system_blocks(model, self.task)
        # Sent strict, the API constrains the tool input to the schema (anthropic.types.ToolParam.strict; the task's
        # schema is already in the subset strict mode accepts, see ragpulse.judges.tool.strict_schema).
        self._tools = (task.tool, {**task.tool, "strict": True})
        # This SDK generation no longer types `temperature`; it still reaches the API through the request body.
        self._extra_body = {"temperature": temperature} if temperature is not None else None

    def first_turns(self, trace: Trace) -> list[dict[str, Any]]:
        """The trace as the one user message."""
        return [{"role": "user", "content": user_message(trace)}]

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        """One forced record_verdicts call, strict unless this API refused strict before (then once more without)."""
        key = (str(self.client.base_url), self.model)
        try:
            answer = await self._create(turns, key not in _NOT_STRICT)
        except anthropic.BadRequestError as exc:
            if key in _NOT_STRICT or "strict" not in _describe(exc):
                raise
            log.warning("judge API %s refuses strict tools for %s; sending the tool without strict from now on", *key)
            _NOT_STRICT.add(key)
            answer = await self._create(turns, strict=False)
        message = _decoded(answer.content)
        if (what := not_a_message(message)) is not None:
            text = answer.content.decode("utf-8", "replace")
            raise not_the_answer("Messages API", "RAGPULSE_JUDGE_BASE_URL", text, answer.headers, what)
        return _reply(message, answer.headers, self.model, self.task.name)

    def params(self, turns: list[dict[str, Any]], cache_ttl: str | None = None) -> dict[str, Any]:
        """The Messages API request of `turns`, as a batch request carries it (`params`): the same system prompt,
        tool and markers as an interactive call, strict unless this API refused strict before; `cache_ttl` "1h" for
        the 1-hour prompt cache."""
        key = (str(self.client.base_url), self.model)
        params = self._params(turns, key not in _NOT_STRICT, system_blocks(self.model, self.task, cache_ttl))
        return {**params, **(self._extra_body or {})}

    def _params(self, turns: list[dict[str, Any]], strict: bool, system: list[dict[str, Any]]) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.max_tokens, "system": system,
                "tools": [self._tools[strict]], "tool_choice": {"type": "tool", "name": self.task.name},
                "messages": turns}

    async def _create(self, turns: list[dict[str, Any]], strict: bool) -> Answer:
        if not self.transport.has_credentials:
            raise JudgeNotConfigured(NOT_CONFIGURED)
        body = self._params(turns, strict, self._system)
        return await self.transport.post("/v1/messages", {**body, **self._extra_body} if self._extra_body else body)

    def batch_reply(self, message: anthropic.types.Message) -> Reply:
        """The Reply of a message out of a Message Batch (no headers; billed at the batch price)."""
        as_sent = message.model_dump(mode="json", exclude_none=True)
        return dataclasses.replace(_reply(as_sent, {}, self.model, self.task.name), delivery="batch")

    def repair_turns(self, reply: Reply, problem: str) -> list[dict[str, Any]]:
        """The tool call answered by an error tool_result, or the content answered by a user message."""
        content: list[dict[str, Any]] = reply.turn["content"]
        block = next((b for b in content if b["type"] == "tool_use"), None)
        if block is None:
            return [{"role": "assistant", "content": content or "(empty)"},
                    {"role": "user", "content": self.task.repair_message(problem)}]
        return [
            {"role": "assistant", "content": [{"type": "tool_use", "id": block.get("id"), "name": block.get("name"),
                                               "input": block.get("input")}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.get("id"), "is_error": True,
                                          "content": self.task.repair_message(problem)}]},
        ]

    def failure(self, exc: Exception) -> Failure:
        """Classify an anthropic.APIError (529 is the provider's `overloaded`)."""
        response = getattr(exc, "response", None)
        return Failure(_status(exc), _describe(exc), response.headers if response is not None else {})

    def pause_hint(self, headers: Mapping[str, str]) -> float | None:
        """Seconds until an exhausted `anthropic-ratelimit-*` limit resets."""
        return pause_from_headers(headers)

    async def aclose(self) -> None:
        """Close the transport's connections and the SDK's HTTP client."""
        await self.transport.aclose()


class AnthropicJudge(StructuredJudge):
    """Judge traces with Claude; every call is kept as an auditable JudgeCall."""

    def __init__(self, client: anthropic.AsyncAnthropic, model: str, max_tokens: int, temperature: float | None = 0.0,
                 limiter: JudgeLimiter | None = None, retry: RetryPolicy = RetryPolicy(),
                 observer: JudgeObserver | None = None) -> None:
        super().__init__(AnthropicProvider(client, model, max_tokens, temperature), model, max_tokens,
                         limiter=limiter, retry=retry, observer=observer)
        self.client = client


def _decoded(content: bytes) -> Any:
    """The JSON of a 2xx body, or None when it is not JSON (a proxy's page)."""
    try:
        return msgspec.json.decode(content)
    except msgspec.DecodeError:
        return None


def not_a_message(message: object) -> str | None:
    """How a 2xx body, decoded from JSON, fails to be a Message this adapter can read, or None (a body that is not
    JSON decodes to None). Any further fields are ignored, as the SDK ignores them."""
    if not isinstance(message, dict):
        return "not a JSON object"
    content = message.get("content")
    if not isinstance(content, list) or not all(isinstance(b, dict) and isinstance(b.get("type"), str)
                                                for b in content):
        return "no list of content blocks"
    usage = message.get("usage")
    if not isinstance(usage, dict) or not all(type(usage.get(name)) is int for name in ("input_tokens",
                                                                                         "output_tokens")):
        return "no token usage"
    if not all(isinstance(usage.get(name), int | None) for name in ("cache_read_input_tokens",
                                                                    "cache_creation_input_tokens")):
        return "cache token usage that is not counts"
    return None


def _reply(message: dict[str, Any], headers: Mapping[str, str], model: str, tool_name: str) -> Reply:
    """The Reply of a Message as decoded from its JSON (not_a_message(message) is None)."""
    content: list[dict[str, Any]] = message["content"]
    tool_uses = [b for b in content if b["type"] == "tool_use"]
    block = next((b for b in tool_uses if b.get("name") == tool_name), None)
    stop_reason = message.get("stop_reason")
    problem = None
    if stop_reason == "max_tokens":
        problem = "the output was truncated at max_tokens"
    elif block is None:
        problem = f"no {tool_name} tool call in the response"
    usage = message["usage"]
    return Reply(
        output=block.get("input") if block is not None else None, problem=problem,
        raw_output=tool_input if (tool_input := tool_uses[0].get("input") if tool_uses else None) is not None
        else content,
        model=message.get("model") or model, stop_reason=stop_reason,
        usage=Usage(usage["input_tokens"], usage["output_tokens"], usage.get("cache_read_input_tokens") or 0,
                    usage.get("cache_creation_input_tokens") or 0),
        request_id=headers.get("request-id"), headers=headers, turn=message,
    )


def _status(exc: Exception) -> str:
    match exc:
        case anthropic.RateLimitError():
            return "rate_limited"
        case anthropic.APIStatusError() if exc.status_code == 529:
            return "overloaded"
        case anthropic.InternalServerError():
            return "server_error"
        case anthropic.APITimeoutError():
            return "timeout"
        case anthropic.APIConnectionError():
            return "connection_error"
        case anthropic.AuthenticationError() | anthropic.PermissionDeniedError():
            return "auth_error"
    return "bad_request"


def _describe(exc: Exception) -> str:
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        return f"{exc.status_code} {error.get('message') or exc.message}"
    return type(exc).__name__
