"""The wire schema of synthetic dataset generation and of the retrieval filter (msgspec, strict).

POST /v1/datasets/{name}/generate sends corpus chunks and a target mix of question types; the job writes candidate
questions with an LLM, rejects those general knowledge or no passage answers and near-duplicates, and leaves a draft
of the kept items with a review sample. The retrieval filter then sets aside the items whose source chunks the user's
retriever does not find in its top k.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from ragpulse.config import defaults
from ragpulse.model.dataset import ChunkId, DatasetVersion, ItemId
from ragpulse.model.results import Spend
from ragpulse.model.trace import Base, DocId

GeneratedType = Literal["single_fact", "procedural", "exact_match", "abstractive", "multi_hop", "unanswerable"]
"""The question types generation writes: four from one chunk, multi_hop from a pair of related chunks, unanswerable
near the corpus's topics with no gold."""
RejectReason = Literal["general_knowledge", "not_answered_by_passage", "answered_by_corpus", "duplicate"]
"""Why a candidate was rejected: answered closed-book, its passage does not answer it, an unanswerable candidate the
passages answer, or a (near-)duplicate of an earlier question."""
GenerationStatus = Literal["queued", "running", "finished", "finished_with_errors", "failed"]
WriterJudge = Literal["anthropic", "openai"]


class CorpusChunk(Base):
    """One chunk of the corpus, as the user's index holds it. Its text is untrusted data, never instructions."""

    doc_id: DocId
    chunk_id: ChunkId
    text: Annotated[str, Meta(min_length=1, max_length=defaults.GENERATION_MAX_CHUNK_CHARS)]


class GenerateRequest(Base):
    """Body of POST /v1/datasets/{name}/generate."""

    chunks: Annotated[list[CorpusChunk], Meta(min_length=1, max_length=defaults.GENERATION_MAX_CHUNKS)]
    mix: Annotated[dict[GeneratedType, Annotated[float, Meta(gt=0, le=defaults.GENERATION_MAX_CANDIDATES)]],
                   Meta(min_length=1)]
    """Candidates to write per question type: whole counts (`{"single_fact": 10}`), or fractions summing to 1 with
    `total` (`{"single_fact": 0.5, ...}`). Kept items are fewer: the filters reject some."""
    total: Annotated[int, Meta(ge=1, le=defaults.GENERATION_MAX_CANDIDATES)] | None = None
    test_fraction: Annotated[float, Meta(ge=0, le=1)] = defaults.GENERATION_TEST_FRACTION
    review_sample: Annotated[int, Meta(ge=0, le=1000)] = defaults.GENERATION_REVIEW_SAMPLE
    judge: WriterJudge | None = None
    """The LLM that writes and checks the questions; absent means the service's default judge (which must be one)."""
    budget_usd: Annotated[float, Meta(gt=0)] | None = None
    description: Annotated[str, Meta(max_length=2048)] | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for index, chunk in enumerate(self.chunks):
            if chunk.chunk_id in seen:
                raise ValueError(f"`chunks[{index}].chunk_id` `{chunk.chunk_id}` repeats an earlier chunk's id")
            seen.add(chunk.chunk_id)
        counts = all(float(v).is_integer() for v in self.mix.values())
        if self.total is None and not counts:
            raise ValueError("`mix` gives fractions: give `total` too, or give whole counts")
        if self.total is not None and abs(sum(self.mix.values()) - 1) > 1e-6:
            raise ValueError(f"`mix` with `total` gives fractions that must sum to 1 (they sum to "
                             f"{sum(self.mix.values()):g})")
        planned = self.total if self.total is not None else int(sum(self.mix.values()))
        if planned > defaults.GENERATION_MAX_CANDIDATES:
            raise ValueError(f"`mix` asks for {planned} candidates; at most {defaults.GENERATION_MAX_CANDIDATES}")


class GenerationReject(msgspec.Struct, kw_only=True):
    """A candidate the second pass rejected, with why."""

    reason: RejectReason
    question_type: str
    question: str
    chunk_ids: list[str]
    detail: str
    """The checker's reason, or the question it duplicates."""


class GenerationFailure(msgspec.Struct, kw_only=True):
    """An LLM call that failed: no item was made from it (never a fake one)."""

    stage: Literal["write", "closed_book", "verify"]
    question_type: str
    chunk_ids: list[str]
    error: str


class GenerationStatusFields(msgspec.Struct, kw_only=True):
    """What a generation job's view and its line in the list share: its status and counts."""

    job_id: str
    status: GenerationStatus
    created_at: str
    finished_at: str | None = None
    error: str | None = None
    judge: str
    model: str
    planned: dict[str, int]
    """Candidates planned per question type (fewer than the mix asks when the corpus has too few related pairs)."""
    kept: dict[str, int] = {}
    """Items kept per question type."""
    failed_calls: int = 0
    version: int | None = None
    """The draft version the kept items were stored as, once the job has ended."""


class GenerationView(GenerationStatusFields, kw_only=True):
    """GET /v1/datasets/{name}/generations/{job_id}: the job's status and, once it ended, its outcome."""

    dataset: str
    rejected_by_reason: dict[str, int] = {}
    rejects: list[GenerationReject] = []
    failures: list[GenerationFailure] = []
    review_sample: list[str] = []
    """Item ids a person should review before the draft is published (deterministic: the smallest hashes)."""
    spend: Spend | None = None


class GenerationSummary(GenerationStatusFields, kw_only=True):
    """One generation job of GET /v1/datasets/{name}/generations: its status and counts; `status_url` has the rest
    (rejects, failures, the review sample, spend)."""

    rejected: int = 0
    """Candidates rejected, all reasons together."""
    status_url: str


class GenerationsPage(msgspec.Struct, kw_only=True):
    """GET /v1/datasets/{name}/generations: the dataset's generation jobs, newest first."""

    items: list[GenerationSummary]


class RetrievedRef(Base):
    """One retrieved result of the user's retriever, by rank."""

    doc_id: DocId
    chunk_id: ChunkId | None = None


class RetrieverRun(Base):
    """What the user's retriever returned for one item's query, best first."""

    item_id: ItemId
    retrieved: Annotated[list[RetrievedRef], Meta(max_length=1000)]


class RetrievalFilterPost(Base):
    """Body of POST /v1/datasets/{name}/versions/{version}/retrieval-filter: the retriever's results over the draft,
    posted as `runs`, or named as `job_id`, a batch bound to the draft whose traces carry `item_id` and
    `retrieved_docs`. One of the two."""

    runs: Annotated[list[RetrieverRun], Meta(min_length=1, max_length=100_000)] | None = None
    job_id: Annotated[str, Meta(max_length=64)] | None = None
    k: Annotated[int, Meta(ge=1, le=100)] = defaults.RETRIEVAL_FILTER_K

    def __post_init__(self) -> None:
        if (self.runs is None) == (self.job_id is None):
            raise ValueError("give `runs` (the retriever's results) or `job_id` (a batch bound to the draft), one")
        seen: set[str] = set()
        for index, run in enumerate(self.runs or ()):
            if run.item_id in seen:
                raise ValueError(f"`runs[{index}].item_id` `{run.item_id}` repeats an earlier run's item")
            seen.add(run.item_id)


class RetrievalFilterOutcome(msgspec.Struct, kw_only=True):
    """What the retrieval filter did to a draft."""

    k: int
    checked: int
    """Answerable items with gold chunks that had a retriever run."""
    found: int
    set_aside: list[str]
    """Item ids set aside as retrieval-unanswerable: a source chunk was not in the top k."""
    not_run: list[str]
    """Answerable items with gold that the runs did not cover (left as they were)."""
    unknown_items: list[str]
    """Run item ids the draft does not hold."""


class GenerationAccepted(msgspec.Struct, kw_only=True):
    """202 answer to POST /v1/datasets/{name}/generate."""

    job_id: str
    status_url: str
    """Poll it (GET) until `status` is finished, finished_with_errors or failed."""
    planned: dict[str, int]


class RetrievalFiltered(msgspec.Struct, kw_only=True):
    """Answer of POST /v1/datasets/{name}/versions/{version}/retrieval-filter: the new draft with the flags set."""

    version: DatasetVersion
    filtered_from: int
    """The draft version the filter read (versions are immutable: the flagged items are a new draft)."""
    outcome: RetrievalFilterOutcome
