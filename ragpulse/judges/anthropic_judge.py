"""The Anthropic judge: Messages API with forced tool use, as a provider adapter of the structured judge loop.

Calls go through the official async SDK with its own retries off (ragpulse.judges.structured retries, so that a 429
can pause every worker). The fixed prefix (tool definition and system prompt) is marked for the provider's prompt
cache when it is long enough to be cached (with the task's worked examples, for a model whose minimum the short prefix
misses: `ToolTask.for_model`); cache reads and writes are reported apart.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import anthropic

from ragpulse.exceptions import JudgeNotConfigured
from ragpulse.judges.headers import pause_from_headers
from ragpulse.judges.prompt import JUDGE_TASK, user_message
from ragpulse.judges.ratelimit import JudgeLimiter
from ragpulse.judges.structured import Failure, Reply, RetryPolicy, StructuredJudge, Usage, not_the_answer
from ragpulse.judges.task import ToolTask
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import JudgeObserver

__all__ = ["AnthropicJudge", "AnthropicProvider", "RetryPolicy", "system_blocks"]

log = logging.getLogger(__name__)
NOT_CONFIGURED = "judge not configured: set ANTHROPIC_API_KEY (or use judge=local)"
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
            raw = await self._create(turns, key not in _NOT_STRICT)
        except anthropic.BadRequestError as exc:
            if key in _NOT_STRICT or "strict" not in _describe(exc):
                raise
            log.warning("judge API %s refuses strict tools for %s; sending the tool without strict from now on", *key)
            _NOT_STRICT.add(key)
            raw = await self._create(turns, strict=False)
        message = await raw.parse()
        if (what := not_a_message(message)) is not None:
            raise not_the_answer("Messages API", "RAGPULSE_JUDGE_BASE_URL", await raw.text(), raw.headers, what)
        return _reply(message, raw.headers, self.model, self.task.name)

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

    async def _create(self, turns: list[dict[str, Any]], strict: bool) -> Any:
        try:
            return await self.client.messages.with_raw_response.create(
                **self._params(turns, strict, self._system), extra_body=self._extra_body,
            )
        except TypeError as exc:  # how this SDK says that no API key or token is configured at all
            if "authentication method" not in str(exc):
                raise
            raise JudgeNotConfigured(NOT_CONFIGURED) from None

    def batch_reply(self, message: anthropic.types.Message) -> Reply:
        """The Reply of a message out of a Message Batch (no headers; billed at the batch price)."""
        return dataclasses.replace(_reply(message, {}, self.model, self.task.name), delivery="batch")

    def repair_turns(self, reply: Reply, problem: str) -> list[dict[str, Any]]:
        """The tool call answered by an error tool_result, or the content answered by a user message."""
        message: anthropic.types.Message = reply.turn
        block = next((b for b in message.content if b.type == "tool_use"), None)
        if block is None:
            return [{"role": "assistant", "content": [b.model_dump() for b in message.content] or "(empty)"},
                    {"role": "user", "content": self.task.repair_message(problem)}]
        return [
            {"role": "assistant", "content": [{"type": "tool_use", "id": block.id, "name": block.name,
                                               "input": block.input}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id, "is_error": True,
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
        """Close the SDK's HTTP client."""
        await self.client.close()


class AnthropicJudge(StructuredJudge):
    """Judge traces with Claude; every call is kept as an auditable JudgeCall."""

    def __init__(self, client: anthropic.AsyncAnthropic, model: str, max_tokens: int, temperature: float | None = 0.0,
                 limiter: JudgeLimiter | None = None, retry: RetryPolicy = RetryPolicy(),
                 observer: JudgeObserver | None = None) -> None:
        super().__init__(AnthropicProvider(client, model, max_tokens, temperature), model, max_tokens,
                         limiter=limiter, retry=retry, observer=observer)
        self.client = client


def not_a_message(message: object) -> str | None:
    """How a 2xx body fails to be a Message this adapter can read, or None. The SDK hands back whatever came: the text
    of a body that is not JSON, the JSON itself when it is not an object, and an object of any shape as a Message."""
    if not isinstance(message, anthropic.types.Message):
        return "not a JSON object"
    if not isinstance(message.content, list) or not all(isinstance(getattr(b, "type", None), str)
                                                        for b in message.content):
        return "no list of content blocks"
    usage = message.usage
    if not all(isinstance(getattr(usage, name, None), int) for name in ("input_tokens", "output_tokens")):
        return "no token usage"
    return None


def _reply(message: anthropic.types.Message, headers: Mapping[str, str], model: str, tool_name: str) -> Reply:
    block = next((b for b in message.content if b.type == "tool_use" and b.name == tool_name), None)
    tool_input = next((b.input for b in message.content if b.type == "tool_use"), None)
    problem = None
    if message.stop_reason == "max_tokens":
        problem = "the output was truncated at max_tokens"
    elif block is None:
        problem = f"no {tool_name} tool call in the response"
    usage = message.usage
    return Reply(
        output=block.input if block is not None else None, problem=problem,
        raw_output=tool_input if tool_input is not None else [b.model_dump() for b in message.content],
        model=message.model or model, stop_reason=message.stop_reason,
        usage=Usage(usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens or 0,
                    usage.cache_creation_input_tokens or 0),
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
