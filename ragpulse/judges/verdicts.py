"""What a judge returns for one trace, and the audit record of the calls that produced it."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

import msgspec
from msgspec import Meta

from ragpulse.schema import Trace

Verdict = Literal["supported", "unsupported", "contradicted"]
Score3 = Annotated[int, Meta(ge=1, le=3)]


class Claim(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One atomic claim of the answer and whether the retrieved context supports it."""

    text: str
    verdict: Verdict
    doc_id: str | None = None
    quote: str | None = None
    reason: str | None = None
    flags: list[str] = []
    """Set by ragpulse, not the judge: e.g. `quote_not_found` when the quote is not in the cited document."""


class DocRelevance(msgspec.Struct, kw_only=True):
    """How useful one retrieved document is for the question, 1 (useless) to 3 (answers it)."""

    doc_id: str
    score: Score3


class KeyFact(msgspec.Struct, kw_only=True):
    """A key fact of the reference answer and whether the answer covers it."""

    fact: str
    covered: bool


class JudgeOutput(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The verdicts for one trace: everything the generation metrics are computed from."""

    claims: list[Claim]
    answer_relevance: Score3
    answer_relevance_reason: str = ""
    context_relevance: list[DocRelevance] = []
    answerable_from_context: bool
    abstained: bool
    key_facts: list[KeyFact] | None = None


class JudgeCall(msgspec.Struct, kw_only=True):
    """Audit record of one judge call: raw output, model, prompt version, usage, latency, provider id."""

    judge: str
    model: str
    prompt_version: str
    raw_output: Any
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    request_id: str | None = None
    stop_reason: str | None = None
    error: str | None = None


class Judgment(msgspec.Struct, kw_only=True):
    """A judge's output for one trace plus every call made for it (a repair adds a second call)."""

    judge: str
    model: str
    prompt_version: str
    output: JudgeOutput
    calls: list[JudgeCall]


class Judge(Protocol):
    """Anything that turns a trace into a Judgment with one structured call (plus at most one repair)."""

    name: str
    model: str

    async def ajudge(self, trace: Trace) -> Judgment:
        """Judge one trace; raise ragpulse.exceptions.JudgeError subclasses on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections before the event loop that used them ends."""
        ...


class JudgeObserver(Protocol):
    """Receives every judge request's outcome, for metrics and cost accounting."""

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int) -> None:
        """One HTTP request to the provider ended with `status` (ok, rate_limited, overloaded, ...)."""

    def waited(self, model: str, seconds: float) -> None:
        """A call waited `seconds` for the shared rate limit."""


class NullObserver:
    """An observer that records nothing."""

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int) -> None:
        """Ignore the request."""

    def waited(self, model: str, seconds: float) -> None:
        """Ignore the wait."""
