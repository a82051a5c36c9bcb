"""The provider-independent LLM judge: one structured call per trace, one repair turn, bounded retries.

A provider (Anthropic's Messages API, an OpenAI-compatible chat completions server) is a thin adapter: it builds
and sends the request, reads the structured output, usage, stop reason and request id out of a response, and
classifies its SDK's errors. Everything else lives here, once: the shared rate limiter, retries with exponential
backoff and full jitter honouring `retry-after` (a 429 pauses every worker through Redis), the repair turn,
validation into RecordVerdicts and `problems()`, the JudgeCall audit records, the observer's request counts, and
the mapping of failures onto JudgeError subclasses.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import msgspec

from ragpulse.exceptions import (
    JudgeAuthError, JudgeError, JudgeNotConfigured, JudgeOutputInvalid, JudgeResponseInvalid, JudgeUnavailable,
)
from ragpulse.judges.headers import retry_after
from ragpulse.judges.ratelimit import JudgeLimiter
from ragpulse.judges.task import ToolTask
from ragpulse.judges.tool import RecordVerdicts, problems, to_output
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import JudgeCall, JudgeObserver, JudgeOutput, Judgment, NullObserver

PAUSING = frozenset({"rate_limited", "overloaded"})
"""Failure statuses that pause every worker through the shared limiter, not just this call."""
RETRIED = frozenset({"rate_limited", "overloaded", "server_error", "timeout", "connection_error"})
"""Failure statuses worth another attempt; any other (auth_error, bad_request) ends the trace at once."""
INVALID_RESPONSE = "invalid_response"
"""Observer status of a 2xx answer that is not the provider API's response (a proxy's page, a wrong base URL). Not
retried: the same address answers the same page. Billed usage is unknown, so it counts no spend."""
EXCERPT_CHARS = 80
"""How much of a body that is not the API's answer its trace's error quotes (whitespace collapsed)."""
T = TypeVar("T")
Reader = Callable[["Reply"], tuple[T | None, str | None]]
"""Reads a reply into its validated output, or the problem to send back in the repair turn."""


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


@dataclass(frozen=True)
class Usage:
    """Tokens of one response as the provider bills them (uncached input; cache reads and writes apart)."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def limited_input(self) -> int:
        """Input tokens that count against an input-token rate limit: cache reads do not, writes do."""
        return self.input_tokens + self.cache_creation_input_tokens


@dataclass(frozen=True)
class Reply:
    """One successful provider response, read by the adapter into what the loop needs."""

    output: Any
    """The structured output decoded from JSON (the tool input), or None when there is none."""
    problem: str | None
    """What the adapter already knows is wrong (truncated, no tool call, arguments not JSON); None otherwise."""
    raw_output: Any
    """What the audit record keeps: the structured output, or the whole response content when there is none."""
    model: str
    stop_reason: str | None
    usage: Usage
    request_id: str | None
    headers: Mapping[str, str]
    turn: Any = None
    """Whatever the adapter needs to write the repair turn after this reply."""
    delivery: str = "interactive"
    """`batch` for a reply that came out of the provider's batch API (billed at the batch price)."""


@dataclass(frozen=True)
class Failure:
    """A provider error, classified: `status` is an observer status (rate_limited, auth_error, ...)."""

    status: str
    description: str
    headers: Mapping[str, str]


class Provider(Protocol):
    """The adapter a StructuredJudge drives: everything that differs between provider APIs."""

    name: str
    api_error: type[Exception]
    """Base class of the SDK's errors; `failure` classifies each."""
    task: ToolTask
    """What every call asks: the fixed prompt, the one tool and the version its calls carry."""

    def first_turns(self, trace: Trace) -> list[dict[str, Any]]:
        """The conversation of the first call (the fixed system prompt and tool are added by `send`)."""
        ...

    def repair_turns(self, reply: Reply, problem: str) -> list[dict[str, Any]]:
        """The turns that answer `reply` with `problem` and ask for the output again."""
        ...

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        """One request; raises `api_error` on failure, JudgeNotConfigured when credentials are missing,
        JudgeResponseInvalid (see `not_the_answer`) when a 2xx body is not the API's response."""
        ...

    def failure(self, exc: Exception) -> Failure:
        """The classified failure of one request."""
        ...

    def pause_hint(self, headers: Mapping[str, str]) -> float | None:
        """Seconds until an exhausted provider limit resets, read from a successful response's headers."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client."""
        ...


class StructuredJudge:
    """Judge traces through one provider adapter; every call is kept as an auditable JudgeCall."""

    def __init__(self, provider: Provider, model: str, max_tokens: int, limiter: JudgeLimiter | None = None,
                 retry: RetryPolicy = RetryPolicy(), observer: JudgeObserver | None = None) -> None:
        self.provider = provider
        self.name = provider.name
        self.model = model
        self.max_tokens = max_tokens
        self.limiter = limiter
        self.retry = retry
        self.observer = observer or NullObserver()
        self._output_estimate = min(600, max_tokens)
        self._input_scale = 1.0
        """Learned ratio of reported input tokens to our character-based estimate (EMA), so token limits fill."""
        self._not_configured: str | None = None
        """Set once the adapter said it has no credentials: later traces fail at once, without the rate limiter."""

    async def aclose(self) -> None:
        """Close the HTTP client and the limiter's Redis connections (call before the event loop ends)."""
        await self.provider.aclose()
        if self.limiter is not None:
            await self.limiter.aclose()

    @property
    def prompt_version(self) -> str:
        """The version of the task this judge sends (stored with every call and judgment)."""
        return self.provider.task.version

    async def ajudge(self, trace: Trace) -> Judgment:
        """Judge one trace (the judge's task, prompt.JUDGE_TASK): see `ask`."""
        output, calls = await self.ask(self.provider.first_turns(trace), lambda reply: parse(reply, trace))
        return Judgment(judge=self.name, model=self.model, prompt_version=self.prompt_version, output=output,
                        calls=calls)

    async def ask(self, turns: list[dict[str, Any]], check: Reader[T]) -> tuple[T, list[JudgeCall]]:
        """One structured call of the provider's task; `check` reads its output or names the problem, which one
        repair call is asked to fix; then JudgeOutputInvalid. Every call is returned (and raised) as a JudgeCall."""
        if self._not_configured is not None:
            raise JudgeNotConfigured(self._not_configured)
        calls: list[JudgeCall] = []
        reply = await self._call(turns, calls)
        output, problem = check(reply)
        if problem is not None:
            turns = [*turns, *self.provider.repair_turns(reply, problem)]
            reply = await self._call(turns, calls)
            output, problem = check(reply)
        if problem is not None or output is None:
            raise JudgeOutputInvalid(f"judge output invalid after one repair: {problem}", calls)
        return output, calls

    async def _call(self, turns: list[dict[str, Any]], calls: list[JudgeCall]) -> Reply:
        raw_input = self.provider.task.estimate_input_tokens(len(json.dumps(turns)))
        estimate = (int(raw_input * self._input_scale), self._output_estimate)
        for attempt in range(self.retry.max_retries + 1):
            if self.limiter is not None and not self._prepaid(turns):
                self.observer.waited(self.model, await self.limiter.acquire(*estimate))
            reserved = await self.observer.reserve(self.model, *estimate)
            start = time.perf_counter()
            try:
                reply = await self.provider.send(turns)
            except JudgeNotConfigured as exc:
                self.observer.unsent(reserved)
                self._not_configured = exc.reason
                raise JudgeNotConfigured(exc.reason, calls) from None
            except JudgeResponseInvalid as exc:
                self.observer.request(self.model, INVALID_RESPONSE, time.perf_counter() - start, 0, 0,
                                      reserved=reserved)
                raise JudgeResponseInvalid(exc.reason, calls) from None
            except JudgeError as exc:  # a batch request that did not succeed, and is not retried: nothing was sent
                self.observer.unsent(reserved)
                raise JudgeError(exc.reason, calls) from None
            except self.provider.api_error as exc:
                await self._failed(self.provider.failure(exc), attempt, time.perf_counter() - start, calls, reserved)
                continue
            calls.append(self._record(reply, time.perf_counter() - start, reserved))
            await self._settle(reply, estimate)
            observed = min(2.0, max(0.25, reply.usage.limited_input / max(raw_input, 1.0)))
            self._input_scale = 0.8 * self._input_scale + 0.2 * observed
            return reply
        raise AssertionError("unreachable: the last failed attempt raises")

    def _prepaid(self, turns: list[dict[str, Any]]) -> bool:
        """True when the provider already holds the reply to `turns` (a batch result): no rate limit to wait for."""
        holds = getattr(self.provider, "holds", None)
        return holds is not None and holds(turns)

    async def _failed(self, failure: Failure, attempt: int, latency: float, calls: list[JudgeCall],
                      reserved: Any) -> None:
        self.observer.request(self.model, failure.status, latency, 0, 0, reserved=reserved)
        if failure.status == "auth_error":
            raise JudgeAuthError(f"judge provider rejected the credentials: {failure.description}", calls)
        if failure.status not in RETRIED:
            raise JudgeError(f"judge request rejected: {failure.description}", calls)
        if attempt >= self.retry.max_retries:
            raise JudgeUnavailable(f"judge provider unavailable after {attempt + 1} attempts: "
                                   f"{failure.description}", calls)
        delay = self.retry.delay(attempt, retry_after(failure.headers))
        if failure.status in PAUSING and self.limiter is not None:
            await self.limiter.pause(delay)
        await asyncio.sleep(delay)

    async def _settle(self, reply: Reply, estimate: tuple[int, int]) -> None:
        usage = (reply.usage.limited_input, reply.usage.output_tokens)
        self._output_estimate = max(64, min(self.max_tokens, int(0.8 * self._output_estimate + 0.2 * usage[1])))
        if self.limiter is not None:
            await self.limiter.settle(estimate, usage)
            pause = self.provider.pause_hint(reply.headers)
            if pause:
                await self.limiter.pause(pause)

    def _record(self, reply: Reply, latency: float, reserved: Any) -> JudgeCall:
        usage = reply.usage
        self.observer.request(self.model, "ok", latency, usage.input_tokens, usage.output_tokens,
                              cache_read_input_tokens=usage.cache_read_input_tokens,
                              cache_creation_input_tokens=usage.cache_creation_input_tokens, reserved=reserved,
                              delivery=reply.delivery)
        return JudgeCall(
            judge=self.name, model=reply.model or self.model, prompt_version=self.prompt_version,
            raw_output=reply.raw_output, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_input_tokens=usage.cache_read_input_tokens,
            cache_creation_input_tokens=usage.cache_creation_input_tokens, latency_ms=round(latency * 1000, 1),
            request_id=reply.request_id, stop_reason=reply.stop_reason, delivery=reply.delivery,  # type: ignore[arg-type]
        )


def parse(reply: Reply, trace: Trace) -> tuple[JudgeOutput | None, str | None]:
    """The validated output, or the problem to send back in a repair turn.

    Validation is strict (an unknown field is a problem), and output that validates must still score every
    retrieved document (tool.problems).
    """
    if reply.problem is not None:
        return None, reply.problem
    try:
        verdicts = msgspec.convert(reply.output, RecordVerdicts)
    except msgspec.ValidationError as exc:
        return None, str(exc)
    problem = problems(verdicts, trace)
    if problem is not None:
        return None, problem
    return to_output(verdicts), None


def not_the_answer(api: str, base_url_setting: str, body: Any, headers: Mapping[str, str],
                   what: str) -> JudgeResponseInvalid:
    """The error for a 2xx whose body is not `api`'s response (`what` says how it fails to be one), quoting the body's
    content-type and its beginning, so whoever reads the trace's error sees the proxy page or the wrong service, and
    naming the setting that points at it."""
    text = body if isinstance(body, str) else json.dumps(body, default=str)
    excerpt = " ".join(text.split())[:EXCERPT_CHARS]
    return JudgeResponseInvalid(
        f"the judge answered 200 with a {headers.get('content-type') or 'body without content-type'} body that is "
        f"not a {api} response ({what}): {excerpt!r}; check {base_url_setting} and any proxy in between")


class UnconfiguredJudge:
    """A judge that cannot run here (its server is not configured): every trace fails at once, nothing is sent."""

    def __init__(self, name: str, model: str, reason: str) -> None:
        self.name, self.model, self.reason = name, model, reason

    async def ajudge(self, trace: Trace) -> Judgment:
        """Fail with JudgeNotConfigured: the trace becomes judge_error and keeps its retrieval metrics."""
        raise JudgeNotConfigured(self.reason)

    async def aclose(self) -> None:
        """Nothing to close."""
