"""The wire schema: traces and batches as clients post them (msgspec, strict)."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from ragpulse.config import defaults
from ragpulse.model.environment import JobEnvironment, TraceEnvironment
from ragpulse.model.metric_keys import did_you_mean, is_metric_key


class Base(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Base of every inbound struct.

    kw_only: fields are named, never positional, so adding one never shifts another.
    forbid_unknown_fields: a misspelt field (`gold_docs`) is a 422 naming it, not silently dropped data.
    omit_defaults: stored msgpack stays small; absent optional fields are not written.
    """


DocId = Annotated[str, Meta(min_length=1, max_length=512, description="Document id (document level, not chunk).")]
Grade = Annotated[int, Meta(ge=0, le=3, description="Relevance grade: 0 not relevant .. 3 highly relevant.")]
TraceId = Annotated[str, Meta(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$")]
URL_SEGMENT_PATTERN = r"^([^\x00-\x1f/.][^\x00-\x1f/]*|\.[^\x00-\x1f/.][^\x00-\x1f/]*|\.\.[^\x00-\x1f/]+)$"
"""A trace id that can name itself in a URL path (GET /v1/traces/{trace_id}): no `/`, and neither `.` nor `..`,
which every HTTP client resolves away. Written without lookahead so every JSON Schema tool can generate from it."""
PostedTraceId = Annotated[str, Meta(min_length=1, max_length=256, pattern=URL_SEGMENT_PATTERN,
                                    description="No `/`, and not `.` or `..`: GET /v1/traces/{trace_id} reads it back.")]
APP_NAME_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$"
"""1-64 letters, digits, `.`, `_` and `-`, not starting with a dot: never `.` or `..`, which no URL path can carry
(every HTTP client reads /v1/apps/../policy as /v1/policy)."""
AppName = Annotated[str, Meta(pattern=APP_NAME_PATTERN, description="RAG application or pipeline name.")]
JobId = Annotated[str, Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$",
                            description="A job id as POST /v1/batches returned it.")]
Query = Annotated[str, Meta(min_length=1, max_length=32_768)]
LongText = Annotated[str, Meta(max_length=1_048_576)]
Cutoff = Annotated[int, Meta(ge=1, le=1000)]
QuestionType = Literal[
    "single_fact", "multi_hop", "aggregation", "procedural", "exact_match",
    "abstractive", "unanswerable", "ambiguous", "out_of_scope",
]
Source = Literal["human", "synthetic", "production"]
Gain = Literal["linear", "exponential"]
JudgeName = Literal["none", "heuristic", "anthropic", "openai", "local"]
"""`local` is the deprecated name of `heuristic`, accepted for a release (with a warning) and read as it."""
RunName = Annotated[str, Meta(pattern=r"^[A-Za-z0-9._:/+-]{1,128}$",
                              description="A free name for the configuration evaluated, e.g. `reranker-v2`.")]
Delivery = Literal["interactive", "batch"]
"""How a job's judge requests reach the provider: one call at a time (`interactive`), or in the provider's batch API at
half price, within 24 hours (`batch`)."""
Variant = Literal["rag", "no_rag", "oracle"]
"""What a run measures: the system as built (`rag`), the same model without context (`no_rag`: what retrieval adds)
or with the gold passages as context (`oracle`: the ceiling better retrieval could reach)."""
MetricKey = Annotated[str, Meta(pattern=r"^[a-z_]+(@[0-9]{1,4})?$", max_length=64)]
ItemId = Annotated[str, Meta(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$",
                             description="The item's id, unique within a version; traces name it as `item_id`.")]
Split = Literal["dev", "test"]
"""`dev` is for tuning; `test` is the frozen portion nobody tunes on, reported apart."""


GroupName = Annotated[str, Meta(min_length=1, max_length=256)]
Milliseconds = Annotated[float, Meta(ge=0, le=86_400_000)]
MAX_TOKEN_COUNT = 100_000_000
"""The largest token count a trace's `usage` holds."""
TokenCount = Annotated[int, Meta(ge=0, le=MAX_TOKEN_COUNT)]


def check_utc_range(field: str, moment: datetime.datetime | None) -> None:
    """A time with an offset is stored in UTC: `0001-01-01T03:00:00+16:00` (or `9999-12-31T23:00:00-05:00`) is a valid
    RFC 3339 time whose UTC falls outside years 1-9999, which no datetime holds (the store's write failed: a 500)."""
    if moment is not None and moment.tzinfo is not None:
        try:
            moment.astimezone(datetime.UTC)
        except OverflowError:
            raise ValueError(f"`{field}` {moment.isoformat()} is out of range once converted to UTC "
                             "(years 1 to 9999)") from None


class RetrievedDoc(Base):
    """One retrieved passage, in the rank order the generator received it."""

    id: DocId
    text: LongText | None = None
    chunk_id: Annotated[str, Meta(max_length=512)] | None = None
    score: float | None = None
    metadata: dict[str, Any] | None = None
    acl: Annotated[list[GroupName], Meta(max_length=1000)] | None = None
    """Groups allowed to read the document; absent means the app does not say (never a leak), `[]` nobody."""
    updated_at: datetime.datetime | None = None
    """When the document last changed (RFC 3339): older than the app's `max_source_age_days` is stale."""

    def __post_init__(self) -> None:
        check_utc_range("updated_at", self.updated_at)


class Principal(Base):
    """Who asked: the groups whose documents they may read."""

    id: Annotated[str, Meta(max_length=256)] | None = None
    groups: Annotated[list[GroupName], Meta(max_length=1000)] = []


class StageLatency(Base):
    """The app's own latency per pipeline stage, in milliseconds."""

    retrieval: Milliseconds | None = None
    rerank: Milliseconds | None = None
    generation: Milliseconds | None = None
    total: Milliseconds | None = None


class Usage(Base):
    """The app's own generation usage and cost for this query."""

    prompt_tokens: TokenCount | None = None
    completion_tokens: TokenCount | None = None
    cost_usd: Annotated[float, Meta(ge=0, le=1_000)] | None = None


ChatRole = Literal["user", "assistant"]
SessionId = Annotated[str, Meta(min_length=1, max_length=256, pattern=URL_SEGMENT_PATTERN,
                                description="The conversation this turn belongs to; GET /v1/sessions/{session_id} "
                                            "reads it back (no `/`, and not `.` or `..`).")]
MAX_HISTORY_TURNS = 200
"""Earlier turns a trace may carry in `history`; the judge sees a bounded tail of them (judge input caps)."""


class ChatTurn(Base):
    """One earlier message of the conversation, oldest first."""

    role: ChatRole
    content: Annotated[str, Meta(max_length=1_048_576)]


class Trace(Base):
    """One RAG interaction: query, retrieved passages, answer, and labels where known."""

    query: Query
    trace_id: TraceId | None = None
    app: AppName = "default"
    retrieved_docs: Annotated[list[RetrievedDoc], Meta(max_length=1000)] = []
    answer: LongText | None = None
    gold_doc_ids: Annotated[list[DocId], Meta(max_length=10_000)] | None = None
    relevance: dict[DocId, Grade] | None = None
    reference_answer: LongText | None = None
    answerable: bool | None = None
    question_type: QuestionType | None = None
    source: Source | None = None
    generator_model: Annotated[str, Meta(max_length=256)] | None = None
    citations: Annotated[list[DocId], Meta(max_length=1000)] | None = None
    timestamp: datetime.datetime | None = None
    metadata: dict[str, Any] | None = None
    principal: Principal | None = None
    """The user the query ran for; with documents' `acl`, what the ACL-leak check reads."""
    candidates: Annotated[list[DocId], Meta(max_length=10_000)] | None = None
    """Ranked document ids before reranking or truncation: tells "never retrieved" from "dropped by the reranker"."""
    latency_ms: StageLatency | None = None
    usage: Usage | None = None
    item_id: ItemId | None = None
    """The item of the batch's `dataset` this trace answers: its labels, reference answer, answerable flag, question
    type, source and split come from the item (a trace repeating them must agree), and its `query` may be left out."""
    split: Split | None = None
    """The item's split, set from the dataset (`dev` or `test`)."""
    retrieval_answerable: bool | None = None
    """The item's retrieval-filter flag, set from the dataset: false sets the trace aside from judging (it measures
    retrieval failure, not generation), its retrieval metrics kept."""
    environment: TraceEnvironment | None = None
    """Absent: `production` for POST /v1/traces and OTLP, the batch's `options.environment` in a batch (where a trace
    naming another is refused)."""
    session_id: SessionId | None = None
    """The conversation (chat session) this trace is a turn of."""
    turn: Annotated[int, Meta(ge=0, le=100_000)] | None = None
    """The turn's index in its session: 0 for the first question, 1 for the first follow-up, ... (needs `session_id`)."""
    history: Annotated[list[ChatTurn], Meta(max_length=MAX_HISTORY_TURNS)] | None = None
    """The conversation before this turn, oldest first: context that resolves references ("it", "the Pro plan"),
    never evidence for new facts."""
    rewritten_query: Query | None = None
    """What the retriever was actually asked: the app's standalone rewrite of a follow-up `query`."""
    session_evidence: Annotated[list[RetrievedDoc], Meta(max_length=1000)] | None = None
    """Documents retrieved for earlier turns of the session, which may support this turn's claims (sent by the app, or
    gathered from the session's stored earlier turns when absent)."""

    def __post_init__(self) -> None:
        if self.retrieval_answerable is not None and self.item_id is None:
            raise ValueError("`retrieval_answerable` is set from a dataset item (the retrieval filter's flag); a trace "
                             "naming no `item_id` cannot give it")
        if self.turn is not None and self.session_id is None:
            raise ValueError("`turn` needs `session_id`: a turn index means nothing outside its session")
        if self.gold_doc_ids is not None and self.relevance is not None:
            raise ValueError("`gold_doc_ids` and `relevance` are mutually exclusive; give one")
        check_utc_range("timestamp", self.timestamp)

    @property
    def has_labels(self) -> bool:
        """True when the trace carries gold labels of either form (possibly with no relevant document)."""
        return self.gold_doc_ids is not None or self.relevance is not None

    def qrels(self) -> dict[str, int]:
        """Document-level relevance grades; `gold_doc_ids` count as grade 1."""
        if self.relevance is not None:
            return dict(self.relevance)
        return dict.fromkeys(self.gold_doc_ids or (), 1)


class BatchOptions(Base):
    """How a batch is evaluated."""

    k: Annotated[list[Cutoff], Meta(min_length=1, max_length=20)] = msgspec.field(
        default_factory=lambda: list(defaults.DEFAULT_KS)
    )
    gain: Gain = "linear"
    judge: JudgeName | None = None
    """Judge for generation metrics; absent means the service's configured default. `none` skips judging."""
    repeats: Annotated[int, Meta(ge=1, le=2)] = 1
    """2 judges every trace twice and flags disagreements for human review."""
    queue: Literal["online", "batch"] | None = None
    """Priority queue; absent means `online` for a `production` job whose every trace has source `production`, else
    `batch` (an evaluation run of production traces is judged whole)."""
    sample: Literal["policy", "all"] | None = None
    """`policy` judges a sample per the app's sampling policy; `all` judges every trace. Absent: `policy` on the
    online queue, `all` on the batch queue."""
    callback_url: Annotated[str, Meta(max_length=2048)] | None = None
    """POSTed a signed summary when the job ends (the host must be in RAGPULSE_CALLBACK_ALLOWLIST)."""
    budget_usd: Annotated[float, Meta(gt=0)] | None = None
    """Judge spend cap of this job; traces left when it is reached are `skipped_budget` (re-runnable)."""
    run: RunName | None = None
    """A free name for what this job evaluates (`reranker-v2`); shown in the job's status, report and comparisons."""
    variant: Variant = "rag"
    """`rag` (default), `no_rag` or `oracle`: comparing against a `no_rag` or `oracle` job names the gap."""
    delivery: Annotated[Delivery, Meta(description=(
        "interactive (default): judge calls are made one by one as the job runs. batch: the judge requests go to "
        "the provider's batch API (Anthropic Message Batches for judge anthropic, OpenAI's Batch API for judge "
        "openai where the server offers it) at half price; results come within 24 hours, most within one. The "
        "heuristic and none judges make no provider calls and ignore it; a judge whose server offers no batch API is "
        "refused with 422."))] = "interactive"
    """`interactive` (default) or `batch`: the judge requests go through the provider's batch API at half price."""
    targets: Annotated[dict[MetricKey, float], Meta(max_length=64)] | None = None
    """Targets this job is held to, by report metric key (`recall@5`, `hallucination_rate`); the report shows each
    metric against its target. Metrics not named keep the documented defaults."""
    environment: JobEnvironment = "evaluation"
    """The environment of the job and of every trace in it. `evaluation` (default) and `staging` runs are counted under
    their own label and never reach the production monitor or alerts; `production` is for production traffic sent as
    a batch (a replay or backfill of traces never posted to /v1/traces, else they are counted twice)."""

    def __post_init__(self) -> None:
        self.k = sorted(set(self.k))
        for key in self.targets or ():
            if not is_metric_key(key):
                raise ValueError(f"`targets` names an unknown metric `{key}`{did_you_mean(key)}")
            cutoff = key.partition("@")[2]
            if cutoff and int(cutoff) not in self.k:
                raise ValueError(f"`targets` names `{key}` but `k` is {self.k}")


DATASET_NAME_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$"
"""1-64 letters, digits, `.`, `_` and `-`, not starting with a dot (a URL path segment, as app names are)."""
DatasetName = Annotated[str, Meta(pattern=DATASET_NAME_PATTERN, description="Dataset name, e.g. `nimbus-support`.")]
VersionNumber = Annotated[int, Meta(ge=1, description="A dataset version, numbered from 1 in push order.")]


class DatasetRef(Base):
    """Names one version of a dataset (on a batch, a compare, a gate)."""

    name: DatasetName
    version: VersionNumber


class BatchRequest(Base):
    """Body of POST /v1/batches."""

    traces: Annotated[list[Trace], Meta(min_length=1)]
    options: BatchOptions = msgspec.field(default_factory=BatchOptions)
    dataset: DatasetRef | None = None
    """The dataset version the batch runs: its traces name items by `item_id` (model.dataset)."""


class PostedTrace(Trace):
    """A trace of POST /v1/traces: as in a batch, but its `trace_id` is read back as a URL path segment."""

    trace_id: PostedTraceId | None = None


class TracesPost(Base):
    """Body of POST /v1/traces: production traces as they happen (1 to 1,000), judged per the apps' sampling
    policies. No options: online traces are always evaluated with the service's defaults."""

    traces: Annotated[list[PostedTrace], Meta(min_length=1)]
