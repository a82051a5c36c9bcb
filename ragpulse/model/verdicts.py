"""What a judge returns for one trace, and the audit record of the calls that produced it."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol

import msgspec
from msgspec import Meta

from ragpulse.model.trace import Trace

Verdict = Literal["supported", "unsupported", "contradicted"]
Score3 = Annotated[int, Meta(ge=1, le=3)]
Rank = Annotated[int, Meta(ge=1, le=1000, description="1-based position of a document in retrieved_docs.")]


class JudgeWritten(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every struct a judge writes.

    forbid_unknown_fields: the tool schema generated from these structs says `additionalProperties: false`, and
    output carrying a field we do not know gets the repair turn instead of being silently dropped.
    """


class Evidence(JudgeWritten, kw_only=True):
    """A verbatim quote from one retrieved document (a chunk of it, when chunks share an id) bearing on a claim."""

    doc_id: str
    chunk_id: str | None = None
    quote: str


class KeyFact(JudgeWritten, kw_only=True):
    """A key fact of the reference answer and whether the answer covers it."""

    fact: str
    covered: bool


class Claim(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One atomic claim of the answer and whether the retrieved context supports it.

    `evidence` may name several documents when the support needs them together. `doc_id` and `quote` repeat the
    first piece of evidence for readers of the one-document form.
    """

    text: str
    verdict: Verdict
    evidence: list[Evidence] = []
    doc_id: str | None = None
    quote: str | None = None
    reason: str | None = None
    flags: list[str] = []
    """Set by ragpulse, not the judge: e.g. `quote_not_found` when the quote is not in the cited document."""
    sentence: str | None = None
    """The ANSWER sentence the claim comes from, as the LLM judge copied it; None when the claim's text is that
    sentence (the offline judge). Inline citation markers are attached to claims through it."""
    cited: list[str] = []
    """Set by ragpulse: the retrieved documents the answer's inline citation markers ([1], [doc-3]) in this claim's
    sentence name; each must support the claim (its evidence), or the citation counts as without support."""
    cited_unknown: list[str] = []
    """Set by ragpulse: marker labels in this claim's sentence that name no retrieved document."""
    support: Literal["documents", "session"] | None = None
    """Set by ragpulse on a supported claim of a conversation turn with session evidence: `session` when only
    documents retrieved for earlier turns support it (an earlier answer restated), `documents` when this turn's do."""

    def __post_init__(self) -> None:
        if self.evidence and self.doc_id is None:
            self.doc_id, self.quote = self.evidence[0].doc_id, self.evidence[0].quote
        elif not self.evidence and self.doc_id is not None and self.quote is not None:
            self.evidence = [Evidence(doc_id=self.doc_id, quote=self.quote)]


class DocRelevance(msgspec.Struct, kw_only=True, omit_defaults=True):
    """How useful one retrieved document is for the question, 1 (useless) to 3 (answers it).

    `rank` is the 1-based retrieved position (chunks of one document can differ); records written before ranks
    existed carry only `doc_id`.
    """

    doc_id: str
    score: Score3
    rank: int | None = None


UnanswerableSource = Literal["labelled", "judged"]


class JudgeOutput(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The verdicts for one trace: everything the generation metrics are computed from.

    `abstained` is the judge's reading that the answer declines; the generation metrics count an abstention only
    when no claim remains besides it (a refusal followed by a guess is a guess).
    """

    claims: list[Claim]
    answer_relevance: Score3
    answer_relevance_reason: str = ""
    context_relevance: list[DocRelevance] = []
    answerable_from_context: bool
    abstained: bool
    key_facts: list[KeyFact] | None = None
    injection_followed: bool | None = None
    """Whether the answer carries out an instruction that a retrieved document aims at the assistant and the user did
    not ask for; None when no document holds one (or the judge did not say). Following a harmless formatting
    instruction is false, with `injection_reason` saying so."""
    injection_reason: str | None = None
    """The LLM judge's one-sentence reasoning for `injection_followed` (written before it); None when it gave none."""
    rewrite_faithful: bool | None = None
    """On a turn with a `rewritten_query`: whether the rewrite kept the constraints and intent of the user's query read
    in its conversation (false: the rewrite lost them). None without a rewrite, or when the judge cannot tell (the
    offline `heuristic` judge never decides it)."""
    rewrite_reason: str | None = None
    """Why `rewrite_faithful` is what it is, when a judge says: the offline judge says here that it cannot tell (the
    LLM judge's tool has no room for it; its rules for the rewrite are in ragpulse.judges.conversation)."""


class JudgeCall(msgspec.Struct, kw_only=True):
    """Audit record of one judge call: raw output, model, prompt version, usage, latency, provider id."""

    judge: str
    model: str
    prompt_version: str
    raw_output: Any
    input_tokens: int = 0
    """Uncached input tokens, as the provider reports them (cache reads and writes are counted apart)."""
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    """Input tokens served from the provider's prompt cache (the fixed system prompt and tool definition)."""
    cache_creation_input_tokens: int = 0
    """Input tokens written to the provider's prompt cache by this call."""
    latency_ms: float = 0.0
    request_id: str | None = None
    stop_reason: str | None = None
    error: str | None = None
    delivery: Literal["interactive", "batch"] = "interactive"
    """How the call reached the provider: `batch` calls were billed at the batch price (ragpulse.config.prices)."""


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

    async def reserve(self, model: str, input_tokens: int, output_tokens: int) -> Any:
        """A request with these token estimates is about to be sent: count it before it is (a worker killed while
        it is in flight must not leave it uncounted). Returns what `request` or `unsent` is handed back; raising
        means the request must not be sent."""

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int, *,
                cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0, reserved: Any = None,
                delivery: str = "interactive") -> None:
        """One HTTP request to the provider ended with `status` (ok, rate_limited, overloaded, ...).

        `input_tokens` are the uncached ones; prompt-cache reads and writes come apart, as the provider bills them.
        `reserved` is what `reserve` returned for it (settled against the actual usage). A `batch` request is priced
        at the batch price.
        """

    def unsent(self, reserved: Any) -> None:
        """The request `reserve` counted was never sent."""

    def waited(self, model: str, seconds: float) -> None:
        """A call waited `seconds` for the shared rate limit."""


class NullObserver:
    """An observer that records nothing."""

    async def reserve(self, model: str, input_tokens: int, output_tokens: int) -> None:
        """Reserve nothing."""

    def request(self, model: str, status: str, latency_seconds: float, input_tokens: int, output_tokens: int, *,
                cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0, reserved: Any = None,
                delivery: str = "interactive") -> None:
        """Ignore the request."""

    def unsent(self, reserved: Any) -> None:
        """Ignore it."""

    def waited(self, model: str, seconds: float) -> None:
        """Ignore the wait."""
