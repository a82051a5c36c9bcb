"""The LLM judge: Anthropic's Messages API with forced tool use, one call per trace (plus at most one repair).

Transient failures (429 with retry-after, 529, 5xx, timeouts) are retried by the official SDK itself, with
exponential backoff and jitter that honours `retry-after`; we bound the count through `max_retries`.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic
import msgspec

from ragpulse.exceptions import JudgeAuthError, JudgeError, JudgeOutputInvalid, JudgeUnavailable
from ragpulse.judges.prompt import PROMPT_VERSION, SYSTEM, TOOL, TOOL_NAME, repair_message, user_message
from ragpulse.judges.verdicts import JudgeCall, JudgeOutput, Judgment
from ragpulse.schema import Trace

_TRANSIENT = (anthropic.RateLimitError, anthropic.InternalServerError, anthropic.APITimeoutError,
              anthropic.APIConnectionError)
_AUTH = (anthropic.AuthenticationError, anthropic.PermissionDeniedError)


class AnthropicJudge:
    """Judge traces with Claude; every call is kept as an auditable JudgeCall."""

    name = "anthropic"

    def __init__(self, client: anthropic.Anthropic, model: str, max_tokens: int, temperature: float | None = 0.0) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        # This SDK generation no longer types `temperature`; it still reaches the API through the request body.
        self._extra_body = {"temperature": temperature} if temperature is not None else None

    def judge(self, trace: Trace) -> Judgment:
        """One structured call; if its output is invalid or truncated, one repair call; then JudgeOutputInvalid."""
        messages: list[dict[str, Any]] = [{"role": "user", "content": user_message(trace)}]
        calls: list[JudgeCall] = []
        message, call = self._call(messages)
        calls.append(call)
        output, problem = _parse(message)
        if problem is not None:
            messages += _repair_turns(message, problem)
            message, call = self._call(messages)
            calls.append(call)
            output, problem = _parse(message)
        if problem is not None or output is None:
            raise JudgeOutputInvalid(f"judge output invalid after one repair: {problem}", calls)
        return Judgment(judge=self.name, model=self.model, prompt_version=PROMPT_VERSION, output=output, calls=calls)

    def _call(self, messages: list[dict[str, Any]]) -> tuple[anthropic.types.Message, JudgeCall]:
        start = time.perf_counter()
        try:
            message = self.client.messages.create(
                model=self.model, max_tokens=self.max_tokens, system=SYSTEM, tools=[TOOL],
                tool_choice={"type": "tool", "name": TOOL_NAME}, messages=messages, extra_body=self._extra_body,
            )
        except _AUTH as exc:
            raise JudgeAuthError(f"judge provider rejected the credentials: {exc.status_code} {_reason(exc)}") from None
        except _TRANSIENT as exc:
            raise JudgeUnavailable(f"judge provider unavailable after retries: {_describe(exc)}") from None
        except anthropic.APIStatusError as exc:
            raise JudgeError(f"judge request rejected: {exc.status_code} {_reason(exc)}") from None
        except TypeError as exc:
            if "authentication method" not in str(exc):
                raise
            raise JudgeAuthError("judge not configured: set ANTHROPIC_API_KEY (or use judge=local)") from None
        tool_input = next((b.input for b in message.content if b.type == "tool_use"), None)
        raw = tool_input if tool_input is not None else [b.model_dump() for b in message.content]
        return message, JudgeCall(
            judge=self.name, model=message.model or self.model, prompt_version=PROMPT_VERSION, raw_output=raw,
            input_tokens=message.usage.input_tokens, output_tokens=message.usage.output_tokens,
            latency_ms=round((time.perf_counter() - start) * 1000, 1),
            request_id=getattr(message, "_request_id", None), stop_reason=message.stop_reason,
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


def _reason(exc: anthropic.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error") if isinstance(body.get("error"), dict) else {}
    return str(error.get("message") or exc.message)


def _describe(exc: Exception) -> str:
    if isinstance(exc, anthropic.APIStatusError):
        return f"{exc.status_code} {_reason(exc)}"
    return type(exc).__name__
