"""Provider batch APIs behind one interface: a chunk's judge requests submitted as batches (split at the provider's
limits), their state and results read, cancelled; and the provider adapter that answers a judge's first call of a
trace from its batch result, so batch delivery runs the very judge loop interactive delivery runs.

Only the first call of each trace goes through the batch. Whatever follows it goes through the interactive API: the
repair turn of invalid tool output, and (RAGPULSE_BATCH_RETRY=interactive) one more try of a request that expired,
errored or was canceled.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ragpulse.exceptions import JudgeError, JudgeResponseInvalid
from ragpulse.judges.structured import EXCERPT_CHARS, Failure, Reply

from ragpulse.model.results import OUTCOMES

__all__ = ["OUTCOMES", "BatchApi", "BatchLookup", "BatchOutcome", "BatchRequest", "BatchState", "ReplayProvider",
           "created_id", "custom_id", "index_of", "keyed", "replaying", "split_requests", "turns_key", "unreadable"]


@dataclass(frozen=True)
class BatchRequest:
    """One request of a provider batch: its id within the batch and the Messages API body."""

    custom_id: str
    params: dict[str, Any]


@dataclass(frozen=True)
class BatchLookup:
    """What a resumed submission knows of the batch its dead worker may have created."""

    key: str
    """The idempotency key: in the batch's metadata (OpenAI) and at the end of each request's custom_id."""
    requests: int
    """How many requests it carries."""
    after: float
    """Created after this (epoch seconds, the provider's clock skew allowed for)."""
    before: float
    """Created before this."""
    known: frozenset[str]
    """Ids of the batches this deployment created and saved (the other chunks'): never the one looked for."""


@dataclass(frozen=True)
class BatchState:
    """A provider batch as last retrieved: `in_progress`, `canceling` or `ended`, and its request counts."""

    id: str
    status: str
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchOutcome:
    """The result of one request: `succeeded` with its message, else `errored`, `expired` or `canceled`; or
    `unreadable`, a results line that names no request it could be the result of (its custom_id is then "")."""

    custom_id: str
    kind: str
    message: Any = None
    error: str | None = None


class BatchApi(Protocol):
    """A provider's batch API: what a judge kind with batch delivery offers (judges.kinds)."""

    max_requests: int
    """Most requests in one batch."""
    max_bytes: int
    """Largest body of one batch."""

    async def create(self, requests: Sequence[BatchRequest], key: str) -> str:
        """Submit one batch (within the provider's limits) under the client-side idempotency `key` (kept in its
        metadata where the provider keeps some; the requests' custom_ids end with it already); its id."""
        ...

    async def find(self, lookup: BatchLookup) -> str | None:
        """The id of the batch created under `lookup.key` (by a worker that died before saving it), or None when it
        was not created or cannot be told apart from another."""
        ...

    async def retrieve(self, batch_id: str) -> BatchState:
        """The batch's processing status and request counts."""
        ...

    def results(self, batch_id: str) -> AsyncIterator[BatchOutcome]:
        """Every request's outcome, once the batch has ended."""
        ...

    async def cancel(self, batch_id: str) -> None:
        """Ask the provider to stop the batch (requests not yet processed end `canceled`)."""
        ...

    async def aclose(self) -> None:
        """Close the HTTP client."""
        ...


def split_requests(requests: Sequence[BatchRequest], most_requests: int,
                   most_bytes: int) -> list[list[BatchRequest]]:
    """Consecutive parts of `requests`, each within the provider's request count and body size (JSON bytes plus a
    little framing per request). Deterministic, so a resumed submission finds the parts already sent by number."""
    parts: list[list[BatchRequest]] = []
    part: list[BatchRequest] = []
    size = 0
    for request in requests:
        weight = len(json.dumps(request.params)) + len(request.custom_id) + 64
        if part and (len(part) >= most_requests or size + weight > most_bytes):
            parts.append(part)
            part, size = [], 0
        part.append(request)
        size += weight
    return [*parts, part] if part else parts


def custom_id(index: int, repeat: int) -> str:
    """The id of trace `index`'s `repeat`-th request within its batch (Anthropic: 1-64 of [a-zA-Z0-9_-])."""
    return f"t{index}-{repeat}"


def keyed(custom: str, key: str) -> str:
    """`custom` tagged with the idempotency key of the batch that carries it (`t3-0-<key>`)."""
    return f"{custom}-{key}"


def index_of(custom: str) -> int | None:
    """The trace index a custom_id names (keyed or not); None when it is not one custom_id() makes."""
    head = custom[1:].partition("-")[0]
    return int(head) if custom[:1] == "t" and head.isascii() and head.isdigit() else None


def unreadable(line: str, why: str) -> BatchOutcome:
    """The outcome of a results line that cannot be read as any request's result, quoting its beginning."""
    return BatchOutcome("", "unreadable", error=f"{why}: {' '.join(line.split())[:EXCERPT_CHARS]!r}")


def read_line(line: str, outcome: Callable[[dict[str, Any]], BatchOutcome]) -> BatchOutcome:
    """One results line as its request's outcome, read by the provider's `outcome`: `errored` when the line names a
    request but its result cannot be read, `unreadable` when it names none (one bad line fails only what it touches)."""
    try:
        value = json.loads(line)
    except ValueError as exc:
        return unreadable(line, f"not JSON ({exc})")
    custom = value.get("custom_id") if isinstance(value, dict) else None
    if not isinstance(custom, str):
        return unreadable(line, "no custom_id")
    try:
        return outcome(value)
    except (AttributeError, TypeError, ValueError) as exc:
        return BatchOutcome(custom, "errored", error=f"unreadable result line ({type(exc).__name__}: {exc})")


def created_id(answer: Any, api: str, base_url_setting: str) -> str:
    """The id of the batch (or file) a create call answered; JudgeResponseInvalid when the 200 held none (an HTML
    page from a proxy comes back from the SDK as a string), so the job records what came, not an AttributeError."""
    found = getattr(answer, "id", None)
    if isinstance(found, str) and found:
        return found
    text = answer if isinstance(answer, str) else repr(answer)
    raise JudgeResponseInvalid(f"the {api} answered 200 with no id: {' '.join(text.split())[:EXCERPT_CHARS]!r}; "
                               f"check {base_url_setting} and any proxy in between")


def turns_key(turns: list[dict[str, Any]]) -> str:
    """What matches a judge's first turns to the batch request built from the same trace."""
    return hashlib.blake2b(json.dumps(turns, sort_keys=True).encode(), digest_size=16).hexdigest()


def replaying(judge: Any, outcomes: Mapping[str, deque[BatchOutcome]], retry: bool) -> Any:
    """`judge` (a StructuredJudge) answering first calls from `outcomes`; a judge without a provider as it is."""
    if hasattr(judge, "provider"):
        judge.provider = ReplayProvider(judge.provider, outcomes, retry)
    return judge


class ReplayProvider:
    """A judge provider whose first call of each trace is answered by the trace's batch outcome; everything else
    (repairs; retries of requests that did not succeed, when `retry`) goes to the interactive provider `inner`."""

    def __init__(self, inner: Any, outcomes: Mapping[str, deque[BatchOutcome]], retry: bool) -> None:
        self.inner, self.outcomes, self.retry = inner, outcomes, retry
        self.name, self.api_error, self.task = inner.name, inner.api_error, inner.task

    def first_turns(self, trace: Any) -> list[dict[str, Any]]:
        """The interactive provider's."""
        return self.inner.first_turns(trace)

    def holds(self, turns: list[dict[str, Any]]) -> bool:
        """True when the reply to `turns` is a succeeded batch result (paid for: no rate limit applies)."""
        waiting = self.outcomes.get(turns_key(turns)) if len(turns) == 1 else None
        return bool(waiting) and waiting[0].kind == "succeeded"

    async def send(self, turns: list[dict[str, Any]]) -> Reply:
        """The batch result of a first call, else one interactive call."""
        waiting = self.outcomes.get(turns_key(turns)) if len(turns) == 1 else None
        if waiting:
            outcome = waiting.popleft()
            if outcome.kind == "succeeded":
                return self.inner.batch_reply(outcome.message)
            if not self.retry:
                raise JudgeError(f"batch request {outcome.kind}" + (f": {outcome.error}" if outcome.error else "")
                                 + " (RAGPULSE_BATCH_RETRY=none)")
        return await self.inner.send(turns)

    def repair_turns(self, reply: Reply, problem: str) -> list[dict[str, Any]]:
        """The interactive provider's."""
        return self.inner.repair_turns(reply, problem)

    def failure(self, exc: Exception) -> Failure:
        """The interactive provider's."""
        return self.inner.failure(exc)

    def pause_hint(self, headers: Mapping[str, str]) -> float | None:
        """The interactive provider's."""
        return self.inner.pause_hint(headers)

    async def aclose(self) -> None:
        """Close the interactive provider."""
        await self.inner.aclose()
