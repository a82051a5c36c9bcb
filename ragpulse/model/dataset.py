"""The wire schema of eval datasets: items as clients push them, and the versions that hold them (msgspec, strict).

A dataset is a named, tenant-scoped eval set; each push makes a new immutable version, content-hashed, so two runs
can say exactly which questions they measured. Items carry what a trace would otherwise repeat: gold documents with
grades, a reference answer or key facts, and whether the query is answerable at all.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from ragpulse.config import defaults
# DATASET_NAME_PATTERN, DatasetName, DatasetRef, ItemId, Split and VersionNumber live beside BatchRequest and Trace,
# which use them, and are re-exported here with the rest of the dataset schema.
from ragpulse.model.trace import (  # noqa: F401
    DATASET_NAME_PATTERN, Base, BatchRequest, DatasetName, DatasetRef, DocId, Grade, ItemId, LongText, Query,
    QuestionType, Source, Split, Trace, VersionNumber,
)
ChunkId = Annotated[str, Meta(min_length=1, max_length=512)]
VersionStatus = Literal["draft", "published"]
"""A pushed version is `published`; a generated one is a `draft` until its review sample is done and it is published."""
Origin = Literal["pushed", "generated"]
"""How a version was made: pushed by a client, or written by a generation job."""
MAX_ITEMS_PER_VERSION = defaults.MAX_ITEMS_PER_VERSION


class DatasetItem(Base):
    """One eval question with everything known about its right answer."""

    item_id: ItemId
    query: Query
    gold_doc_ids: Annotated[list[DocId], Meta(max_length=10_000)] | None = None
    relevance: dict[DocId, Grade] | None = None
    gold_chunk_ids: Annotated[list[ChunkId], Meta(max_length=100)] | None = None
    """The corpus chunks the item was written from (a synthetic item keeps its source chunk as gold)."""
    reference_answer: LongText | None = None
    key_facts: Annotated[list[Annotated[str, Meta(min_length=1, max_length=4096)]], Meta(max_length=100)] | None = None
    """Facts a correct answer states, where a full reference answer is not written."""
    answerable: bool = True
    question_type: QuestionType | None = None
    source: Source = "human"
    split: Split = "dev"
    retrieval_answerable: bool | None = None
    """Set by the retrieval filter on a generated draft: false when the user's retriever did not find the item's source
    chunks in its top k. Such an item is kept and counted, but measures retrieval failure, not generation: meant to be
    left out of generation metrics: a run bound to the dataset does not judge it. None when no retriever run covered
    it."""
    metadata: dict[str, str | int | float | bool | None] | None = None

    def __post_init__(self) -> None:
        if self.gold_doc_ids is not None and self.relevance is not None:
            raise ValueError("`gold_doc_ids` and `relevance` are mutually exclusive; give one")

    def qrels(self) -> dict[str, int]:
        """Document-level relevance grades; `gold_doc_ids` count as grade 1."""
        if self.relevance is not None:
            return dict(self.relevance)
        return dict.fromkeys(self.gold_doc_ids or (), 1)


class DatasetVersionPost(Base):
    """Body of POST /v1/datasets/{name}/versions: the whole item set of a new version."""

    items: Annotated[list[DatasetItem], Meta(min_length=1, max_length=MAX_ITEMS_PER_VERSION)]
    description: Annotated[str, Meta(max_length=2048)] | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for index, item in enumerate(self.items):
            if item.item_id in seen:
                raise ValueError(f"`items[{index}].item_id` `{item.item_id}` repeats an earlier item's id")
            seen.add(item.item_id)


class DatasetCounts(msgspec.Struct, kw_only=True):
    """A version's item counts by question type, source and split (what makes two versions comparable at a glance)."""

    items: int
    by_question_type: dict[str, int]
    by_source: dict[str, int]
    by_split: dict[str, int]
    answerable: int
    unanswerable: int


class DatasetVersion(msgspec.Struct, kw_only=True):
    """One immutable version as the API answers it (without its items, which are paginated apart)."""

    name: str
    version: int
    content_hash: str
    """sha256 of the canonical item set: two versions with the same items have the same hash."""
    status: VersionStatus
    created_at: str
    counts: DatasetCounts
    description: str | None = None
    origin: Origin = "pushed"
    job_id: str | None = None
    """The generation job that wrote a generated version."""


class DatasetSummary(msgspec.Struct, kw_only=True):
    """One dataset of GET /v1/datasets: its name, how many versions it holds, and its latest version."""

    name: str
    versions: int
    latest: DatasetVersion


class DatasetList(msgspec.Struct, kw_only=True):
    """GET /v1/datasets: the tenant's datasets, by name."""

    items: list[DatasetSummary]


class DatasetVersionList(msgspec.Struct, kw_only=True):
    """GET /v1/datasets/{name}/versions: every version of one dataset, newest first."""

    name: str
    items: list[DatasetVersion]


class DatasetDeleted(msgspec.Struct, kw_only=True):
    """DELETE /v1/datasets/{name}[/versions/{version}]: what was removed and the room it freed."""

    name: str
    versions: list[int]
    """The version numbers removed, newest first."""
    items: int
    """Items freed from the tenant's RAGPULSE_DATASET_ITEMS_PER_TENANT allowance."""


class DatasetVersionPage(msgspec.Struct, kw_only=True):
    """GET /v1/datasets/{name}/versions/{version}: the version and one page of its items, in push order."""

    version: DatasetVersion
    items: list[DatasetItem]
    offset: int
    """Position of the first item of this page."""
    next_offset: int | None
    """Pass as `offset` for the next page; null on the last page."""


class BoundTrace(Trace):
    """A trace of a batch bound to a dataset: as any trace, but its `query` may be left out when it names an item
    (intake fills it in from the item, and 422s a trace that names neither)."""

    query: Query = ""


class BoundBatchRequest(BatchRequest, kw_only=True):
    """Body of POST /v1/batches when it names a `dataset` (decoded so only when it does, so unbound batches keep
    msgspec's own error for a missing query)."""

    traces: Annotated[list[BoundTrace], Meta(min_length=1)]
    dataset: DatasetRef


class DatasetBinding(msgspec.Struct, kw_only=True):
    """What a job bound to a dataset measured: the version (with its content hash, so a re-push is told apart) and
    how its traces spread over the version's items."""

    name: str
    version: int
    content_hash: str
    status: VersionStatus
    items: int
    """Traces that named an item (`item_id`)."""
    unbound: int = 0
    """Traces of the batch that named no item: measured with their own labels, not the dataset's."""
    version_items: int
    """Items the version holds; `items` below it means the run covered part of the dataset."""
    splits: dict[str, int]
    """Bound traces per split (`dev`, `test`)."""
    sources: dict[str, int]
    """Bound traces per item source (`human`, `synthetic`, `production`)."""
    retrieval_unanswerable: int = 0
    """Bound traces whose item the retrieval filter flagged (`retrieval_answerable: false`): set aside from judging,
    so out of every generation metric, their retrieval metrics kept."""
