"""The LLM judge: Anthropic's Messages API with forced tool use, one call per trace (plus at most one repair).

Calls go through the official async SDK. Transient failures (429, 529, 5xx, timeouts, connection errors) are
retried here, not in the SDK, so that a 429 can pause every worker through the shared limiter: exponential
backoff with full jitter, `retry-after` honoured, a bounded number of attempts. The fixed prefix (tool definition
and system prompt) is marked for the provider's prompt cache when it is long enough to be cached.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass
from typing import Any

import anthropic
import msgspec

from ragpulse.config import defaults
from ragpulse.exceptions import JudgeAuthError, JudgeError, JudgeNotConfigured, JudgeOutputInvalid, JudgeUnavailable
from ragpulse.judges.headers import pause_from_headers, retry_after
from ragpulse.judges.prompt import (
    FIXED_PROMPT_TOKENS, PROMPT_VERSION, SYSTEM, TOOL, TOOL_NAME, estimate_input_tokens, repair_message, user_message,
)
from ragpulse.judges.tool import RecordVerdicts, problems, to_output
from ragpulse.model.verdicts import JudgeCall, JudgeObserver, JudgeOutput, Judgment, NullObserver
from ragpulse.judges.ratelimit import JudgeLimiter
from ragpulse.model.trace import Trace


def min_cacheable_tokens(model: str) -> int:
    """The provider's minimum cacheable prompt length for `model`."""
    return next((n for key, n in defaults.MIN_CACHEABLE_TOKENS.items() if key in model),
                defaults.DEFAULT_MIN_CACHEABLE_TOKENS)


def system_blocks(model: str) -> list[dict[str, Any]]:
    """The system prompt as one text block, marked `cache_control` when the fixed prefix can be cached for `model`.

    The marker caches the whole prefix before it, the tool definition included (tools come first). A prefix shorter
    than the model's minimum is never cached: the API accepts the marker, silently caches nothing and bills the
    tokens as plain input, so a marker there would only suggest savings that cannot happen. The estimate is
    chars / 3.5, an over-estimate, so near the minimum the marker may still be a no-op; it never costs extra.
    """
    block: dict[str, Any] = {"type": "text", "text": SYSTEM}
    if FIXED_PROMPT_TOKENS >= min_cacheable_tokens(model):
        block["cache_control"] = {"type": "ephemeral"}
    return [block]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff with full jitter."""

    max_retries: int = 4
    base_seconds: float = 0.5
    cap_seconds: float = 30.0

    def delay(self, attempt: int, hinted: float | None) -> float:
        """retry-after when the provider gave one, else a jittered exponential delay."""
        if hinted is not None:
            return hinted
        return random.uniform(0, min(self.cap_seconds, self.base_seconds * 2**attempt))


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


class AnthropicJudge:
    """Judge traces with Claude; every call is kept as an auditable JudgeCall."""

    name = "anthropic"

    def __init__(self, client: anthropic.AsyncAnthropic, model: str, max_tokens: int, temperature: float | None = 0.0,
                 limiter: JudgeLimiter | None = None, retry: RetryPolicy = RetryPolicy(),
                 observer: JudgeObserver | None = None) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.limiter = limiter
        self.retry = retry
        self.observer = observer or NullObserver()
        self._system = system_blocks(model)
        self._output_estimate = min(600, max_tokens)
        self._input_scale = 1.0
        """Learned ratio of reported input tokens to our character-based estimate (EMA), so token limits fill."""
        # This SDK generation no longer types `temperature`; it still reaches the API through the request body.
        self._extra_body = {"temperature": temperature} if temperature is not None else None
        self._not_configured: str | None = None
        """Set once the SDK has said it has no credentials: later traces fail at once, without the rate limiter."""

    async def aclose(self) -> None:
        """Close the HTTP client and the limiter's Redis connections (call before the event loop ends)."""
        await self.client.close()
        if self.limiter is not None:
            await self.limiter.aclose()

    async def ajudge(self, trace: Trace) -> Judgment:
        """One structured call; if its output is invalid or truncated, one repair call; then JudgeOutputInvalid."""
        if self._not_configured is not None:
            raise JudgeNotConfigured(self._not_configured)
        messages: list[dict[str, Any]] = [{"role": "user", "content": user_message(trace)}]
        calls: list[JudgeCall] = []
        message = await self._call(messages, calls)
        output, problem = _parse(message, trace)
        if problem is not None:
            messages += _repair_turns(message, problem)
            message = await self._call(messages, calls)
            output, problem = _parse(message, trace)
        if problem is not None or output is None:
            raise JudgeOutputInvalid(f"judge output invalid after one repair: {problem}", calls)
        return Judgment(judge=self.name, model=self.model, prompt_version=PROMPT_VERSION, output=output, calls=calls)

    async def _call(self, messages: list[dict[str, Any]], calls: list[JudgeCall]) -> anthropic.types.Message:
        raw_input = estimate_input_tokens(len(json.dumps(messages)))
        estimate = (int(raw_input * self._input_scale), self._output_estimate)
        for attempt in range(self.retry.max_retries + 1):
            if self.limiter is not None:
                self.observer.waited(self.model, await self.limiter.acquire(*estimate))
            start = time.perf_counter()
            try:
                raw = await self.client.messages.with_raw_response.create(
                    model=self.model, max_tokens=self.max_tokens, system=self._system, tools=[TOOL],
                    tool_choice={"type": "tool", "name": TOOL_NAME}, messages=messages, extra_body=self._extra_body,
                )
            except anthropic.APIError as exc:
                await self._failed(exc, attempt, time.perf_counter() - start, calls)
                continue
            except TypeError as exc:  # how this SDK says that no API key or token is configured at all
                if "authentication method" not in str(exc):
                    raise
                self._not_configured = "judge not configured: set ANTHROPIC_API_KEY (or use judge=local)"
                raise JudgeNotConfigured(self._not_configured, calls) from None
            message = await raw.parse()
            calls.append(self._record(message, raw.headers.get("request-id"), time.perf_counter() - start))
            await self._settle(raw.headers, estimate, message)
            observed = min(2.0, max(0.25, _limited_input(message.usage) / max(raw_input, 1.0)))
            self._input_scale = 0.8 * self._input_scale + 0.2 * observed
            return message
        raise AssertionError("unreachable: the last failed attempt raises")

    async def _failed(self, exc: anthropic.APIError, attempt: int, latency: float, calls: list[JudgeCall]) -> None:
        status = _status(exc)
        self.observer.request(self.model, status, latency, 0, 0)
        response = getattr(exc, "response", None)
        hinted = retry_after(response.headers) if response is not None else None
        if status == "auth_error":
            raise JudgeAuthError(f"judge provider rejected the credentials: {_describe(exc)}", calls)
        if status == "bad_request":
            raise JudgeError(f"judge request rejected: {_describe(exc)}", calls)
        if attempt >= self.retry.max_retries:
            raise JudgeUnavailable(f"judge provider unavailable after {attempt + 1} attempts: {_describe(exc)}", calls)
        delay = self.retry.delay(attempt, hinted)
        if status in ("rate_limited", "overloaded") and self.limiter is not None:
            await self.limiter.pause(delay)
        await asyncio.sleep(delay)

    async def _settle(self, headers: Any, estimate: tuple[int, int], message: anthropic.types.Message) -> None:
        usage = (_limited_input(message.usage), message.usage.output_tokens)
        self._output_estimate = max(64, min(self.max_tokens, int(0.8 * self._output_estimate + 0.2 * usage[1])))
        if self.limiter is not None:
            await self.limiter.settle(estimate, usage)
            pause = pause_from_headers(headers)
            if pause:
                await self.limiter.pause(pause)

    def _record(self, message: anthropic.types.Message, request_id: str | None, latency: float) -> JudgeCall:
        tool_input = next((b.input for b in message.content if b.type == "tool_use"), None)
        raw = tool_input if tool_input is not None else [b.model_dump() for b in message.content]
        usage = message.usage
        cache_read, cache_creation = usage.cache_read_input_tokens or 0, usage.cache_creation_input_tokens or 0
        self.observer.request(self.model, "ok", latency, usage.input_tokens, usage.output_tokens,
                              cache_read_input_tokens=cache_read, cache_creation_input_tokens=cache_creation)
        return JudgeCall(
            judge=self.name, model=message.model or self.model, prompt_version=PROMPT_VERSION, raw_output=raw,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cache_read_input_tokens=cache_read,
            cache_creation_input_tokens=cache_creation, latency_ms=round(latency * 1000, 1), request_id=request_id,
            stop_reason=message.stop_reason,
        )


def _limited_input(usage: anthropic.types.Usage) -> int:
    """Input tokens that count against the provider's input-token rate limit: cache reads do not, writes do."""
    return usage.input_tokens + (usage.cache_creation_input_tokens or 0)


def _parse(message: anthropic.types.Message, trace: Trace) -> tuple[JudgeOutput | None, str | None]:
    """The validated output, or the problem to send back in a repair turn.

    Validation is strict (an unknown field is a problem), and output that validates must still score every
    retrieved document (tool.problems).
    """
    if message.stop_reason == "max_tokens":
        return None, "the output was truncated at max_tokens"
    block = next((b for b in message.content if b.type == "tool_use" and b.name == TOOL_NAME), None)
    if block is None:
        return None, f"no {TOOL_NAME} tool call in the response"
    try:
        verdicts = msgspec.convert(block.input, RecordVerdicts)
    except msgspec.ValidationError as exc:
        return None, str(exc)
    problem = problems(verdicts, trace)
    if problem is not None:
        return None, problem
    return to_output(verdicts), None


def _repair_turns(message: anthropic.types.Message, problem: str) -> list[dict[str, Any]]:
    block = next((b for b in message.content if b.type == "tool_use"), None)
    if block is None:
        return [{"role": "assistant", "content": [b.model_dump() for b in message.content] or "(empty)"},
                {"role": "user", "content": repair_message(problem)}]
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": block.id, "name": block.name,
                                           "input": block.input}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id, "is_error": True,
                                      "content": repair_message(problem)}]},
    ]


def _describe(exc: anthropic.APIError) -> str:
    if isinstance(exc, anthropic.APIStatusError):
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        return f"{exc.status_code} {error.get('message') or exc.message}"
    return type(exc).__name__
