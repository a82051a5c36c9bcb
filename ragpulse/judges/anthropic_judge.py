"""The LLM judge: Anthropic's Messages API with forced tool use, one call per trace (plus at most one repair).

Calls go through the official async SDK. Transient failures (429, 529, 5xx, timeouts, connection errors) are
retried here, not in the SDK, so that a 429 can pause every worker through the shared limiter: exponential
backoff with full jitter, `retry-after` honoured, a bounded number of attempts.
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

from ragpulse.exceptions import JudgeAuthError, JudgeError, JudgeOutputInvalid, JudgeUnavailable
from ragpulse.judges.headers import pause_from_headers, retry_after
from ragpulse.judges.prompt import (
    PROMPT_VERSION, SYSTEM, TOOL, TOOL_NAME, estimate_input_tokens, repair_message, user_message,
)
from ragpulse.judges.verdicts import JudgeCall, JudgeObserver, JudgeOutput, Judgment, NullObserver
from ragpulse.ratelimit import JudgeLimiter
from ragpulse.schema import Trace



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
        self._output_estimate = min(600, max_tokens)
        self._input_scale = 1.0
        """Learned ratio of reported input tokens to our character-based estimate (EMA), so token limits fill."""
        # This SDK generation no longer types `temperature`; it still reaches the API through the request body.
        self._extra_body = {"temperature": temperature} if temperature is not None else None

    async def aclose(self) -> None:
        """Close the HTTP client and the limiter's Redis connections (call before the event loop ends)."""
        await self.client.close()
        if self.limiter is not None:
            await self.limiter.aclose()

    async def ajudge(self, trace: Trace) -> Judgment:
        """One structured call; if its output is invalid or truncated, one repair call; then JudgeOutputInvalid."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": user_message(trace)}]
        calls: list[JudgeCall] = []
        message = await self._call(messages, calls)
        output, problem = _parse(message)
        if problem is not None:
            messages += _repair_turns(message, problem)
            message = await self._call(messages, calls)
            output, problem = _parse(message)
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
                    model=self.model, max_tokens=self.max_tokens, system=SYSTEM, tools=[TOOL],
                    tool_choice={"type": "tool", "name": TOOL_NAME}, messages=messages, extra_body=self._extra_body,
                )
            except anthropic.APIError as exc:
                await self._failed(exc, attempt, time.perf_counter() - start, calls)
                continue
            except TypeError as exc:  # how this SDK says that no API key or token is configured at all
                if "authentication method" not in str(exc):
                    raise
                raise JudgeAuthError("judge not configured: set ANTHROPIC_API_KEY (or use judge=local)", calls) from None
            message = await raw.parse()
            calls.append(self._record(message, raw.headers.get("request-id"), time.perf_counter() - start))
            await self._settle(raw.headers, estimate, message)
            observed = min(2.0, max(0.25, message.usage.input_tokens / max(raw_input, 1.0)))
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
        usage = (message.usage.input_tokens, message.usage.output_tokens)
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
        self.observer.request(self.model, "ok", latency, usage.input_tokens, usage.output_tokens)
        return JudgeCall(
            judge=self.name, model=message.model or self.model, prompt_version=PROMPT_VERSION, raw_output=raw,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, latency_ms=round(latency * 1000, 1),
            request_id=request_id, stop_reason=message.stop_reason,
        )


def _parse(message: anthropic.types.Message) -> tuple[JudgeOutput | None, str | None]:
    """The validated output, or the problem to send back in a repair turn."""
    if message.stop_reason == "max_tokens":
        return None, "the output was truncated at max_tokens"
    block = next((b for b in message.content if b.type == "tool_use" and b.name == TOOL_NAME), None)
    if block is None:
        return None, f"no {TOOL_NAME} tool call in the response"
    try:
        output = msgspec.convert(block.input, JudgeOutput)
    except msgspec.ValidationError as exc:
        return None, str(exc)
    for claim in output.claims:
        claim.flags = []
    return output, None


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
