"""/v1/datasets/{name}: generate a synthetic draft, follow the generation job, filter a draft by the user's retriever,
and publish a draft."""

from __future__ import annotations

import uuid
from typing import Annotated

from litestar import Controller, get, post
from litestar.params import Parameter

from dispatch.generation import enqueue_generation
from ragpulse.config import defaults
from ragpulse.exceptions import Conflict, DatasetNotFound, InvalidBody, JobNotFound
from ragpulse.generation.plan import type_counts
from ragpulse.generation.retrieval_filter import retrieval_filter, runs_from_traces
from ragpulse.intake.decode import decode_body
from ragpulse.judges import kinds
from ragpulse.model.dataset import DatasetItem, DatasetVersion, DatasetVersionPost
from ragpulse.model.generation import (
    GenerateRequest, GenerationAccepted, GenerationsPage, GenerationSummary, GenerationView, RetrievalFiltered,
    RetrievalFilterPost, RetrieverRun,
)
from ragpulse.config.settings import Settings
from ragpulse.store.clock import utcnow
from ragpulse.store.datasets import DatasetStore
from ragpulse.store.generations import GenerationRecord, Generations
from service.context import Call
from service.datasets import Name, Version

GenerationJobId = Annotated[str, Parameter(max_length=64, description=(
    "Job id answered by POST /v1/datasets/{name}/generate."))]
GenerationsLimit = Annotated[int, Parameter(ge=1, le=defaults.GENERATIONS_LISTED, description=(
    "Generation jobs to list (1 to 100)."))]
READ_PAGE = 1000
"""Items read per round trip when the retrieval filter reads a whole draft."""


def writer_judge(named: str | None, settings: Settings) -> str:
    """The judge that writes the questions: the request's, else the service's default; 422 naming `$.judge` when it
    is not an LLM (generation needs one) or is not configured here."""
    judge = named or settings.default_judge
    whose = "" if named else f"the service's default judge (RAGPULSE_JUDGE) is {judge}, and "
    if not kinds.takes_tasks(judge):
        reason = (f"{whose}judge {judge} cannot write questions: generation needs an LLM; set `judge` to one of "
                  f"{', '.join(kinds.task_judges())}")
        raise InvalidBody("generation needs an LLM judge", [{"path": "$.judge", "message": reason}])
    missing = kinds.unconfigured(judge, settings)
    if missing is not None:
        raise InvalidBody("the judge is not configured", [{"path": "$.judge", "message": whose + missing}])
    return judge


def _all_items(store: DatasetStore, tenant: str, version: DatasetVersion) -> list[DatasetItem]:
    items: list[DatasetItem] = []
    while len(items) < version.counts.items:
        page = store.read_items(tenant, version.name, version.version, len(items), READ_PAGE)
        if not page:
            break
        items += page
    return items


def _bound_runs(call: Call, job_id: str, draft: DatasetVersion) -> list[RetrieverRun]:
    """The retriever runs of a batch bound to `draft`: 404 naming `$.job_id` when the tenant has no such job, 422
    naming it when the job ran another dataset version."""
    store = call.store
    try:
        record = store.jobs.get(job_id, call.tenant)
    except JobNotFound:
        raise JobNotFound(job_id, path="$.job_id", role="retriever run") from None
    bound = record.dataset
    if bound is None or (bound.name, bound.version) != (draft.name, draft.version):
        ran = "no dataset" if bound is None else f"version {bound.version} of {bound.name!r}"
        raise InvalidBody("the job did not run this draft", [{"path": "$.job_id", "message": (
            f"job {job_id} ran {ran}, not version {draft.version} of {draft.name!r}: run the retriever over the draft "
            "as a batch bound to it (dataset {name, version}, traces naming item_id)")}])
    traces = [trace for chunk in range(record.n_chunks) for trace in store.chunks.load(job_id, chunk)]
    return runs_from_traces(traces)


def generation_summary(view: GenerationView) -> GenerationSummary:
    """One job of the list: its status and counts, and where its whole view is."""
    return GenerationSummary(
        job_id=view.job_id, status=view.status, created_at=view.created_at, finished_at=view.finished_at,
        error=view.error, judge=view.judge, model=view.model, planned=view.planned, kept=view.kept,
        rejected=sum(view.rejected_by_reason.values()), failed_calls=view.failed_calls, version=view.version,
        status_url=f"/v1/datasets/{view.dataset}/generations/{view.job_id}")


class GenerationController(Controller):
    """Synthetic generation, the retrieval filter and publishing; a tenant sees its own only (others get 404)."""

    path = "/v1/datasets"
    tags = ["datasets"]

    @post("/{name:str}/generate", status_code=202, sync_to_thread=True,
          summary="Generate a synthetic draft version from corpus chunks")
    def generate(self, name: Name, body: bytes, call: Call) -> GenerationAccepted:
        """Enqueue a generation job: the judge's LLM writes candidate questions per the mix, rejects those general
        knowledge answers, those their passage does not answer and near-duplicates, and stores the kept items as a
        draft version (origin generated) with a review sample. Corpus text leaves the machine for the judge's
        provider, as trace text does when an external judge is configured.

        400 on malformed JSON; 422 naming every failing path, and `$.judge` when the judge is not an LLM (the offline
        local judge cannot write questions) or is not configured; 429 (with Retry-After) when the tenant already has
        GENERATION_QUEUED_PER_TENANT (4) jobs queued, or their requests hold GENERATION_QUEUED_BYTES_PER_TENANT
        (64 MiB): each keeps its corpus in Redis until a worker starts it."""
        request = decode_body(body, GenerateRequest)
        judge = writer_judge(request.judge, call.settings)
        job_id = uuid.uuid4().hex
        planned = type_counts(request)
        view = GenerationView(job_id=job_id, dataset=name, status="queued", created_at=utcnow(), judge=judge,
                              model=kinds.model_for(judge, call.settings) or "", planned=planned)
        store = call.store
        generations = Generations(store.redis, call.settings.result_ttl_seconds)
        generations.queue_request(call.tenant, job_id, request)
        try:
            with store.redis.pipeline(transaction=True) as pipe:
                generations.stage(pipe, GenerationRecord(tenant=call.tenant, view=view))
                enqueue_generation(pipe, store.redis, call.settings, job_id)
                pipe.execute()
        except BaseException:
            generations.forget_request(call.tenant, job_id)   # never enqueued: free its place in the queued cap
            raise
        return GenerationAccepted(job_id=job_id, status_url=f"/v1/datasets/{name}/generations/{job_id}",
                                  planned=planned)

    @get("/{name:str}/generations", sync_to_thread=True, summary="The dataset's generation jobs, newest first")
    def generations(self, name: Name, call: Call,
                    limit: GenerationsLimit = defaults.GENERATIONS_PAGE_DEFAULT) -> GenerationsPage:
        """The calling tenant's generation jobs for this dataset name, newest first: the GENERATIONS_LISTED (100)
        newest within their retention (RAGPULSE_RESULT_TTL_SECONDS), each with its status, counts and `status_url`.
        A dataset of the tenant's with none answers an empty list.

        400 naming `query.limit` for a value that cannot be one; 404 naming `path.name` when the tenant has neither
        a dataset of this name nor a generation job for one (another tenant's are not found either)."""
        views = Generations(call.store.redis, call.settings.result_ttl_seconds).recent(call.tenant, name, limit)
        if not views and not call.services.datasets.exists(call.tenant, name):
            raise DatasetNotFound(name, path="path.name")
        return GenerationsPage(items=[generation_summary(view) for view in views])

    @get("/{name:str}/generations/{job_id:str}", sync_to_thread=True, summary="A generation job and its outcome")
    def generation(self, name: Name, job_id: GenerationJobId, call: Call) -> GenerationView:
        """Status, then the outcome: items kept and planned per type, rejects with reasons (counted by reason),
        failed calls, the draft version and its review sample."""
        record = Generations(call.store.redis, call.settings.result_ttl_seconds).get(job_id, call.tenant)
        if record.view.dataset != name:
            raise JobNotFound(job_id)
        return record.view

    @post("/{name:str}/versions/{version:int}/retrieval-filter", status_code=201, sync_to_thread=True,
          summary="Set aside draft items the retriever cannot find")
    def filter_by_retrieval(self, name: Name, version: Version, body: bytes, call: Call) -> RetrievalFiltered:
        """Post the user's retriever results over a draft's queries (`runs`: per item id, the retrieved document and
        chunk ids, best first), or name a batch bound to the draft (`job_id`) whose traces carry them. Items whose
        gold chunks are not all in the top `k` (default 5) get `retrieval_answerable` false: kept and counted, and
        meant to be left out of generation metrics. Versions are immutable, so the flagged items are stored as a new
        draft, answered with 201.

        409 when the version is published (filter the draft before publishing); 404 naming `$.job_id` for an unknown
        job; 422 naming every failing path, and `$.job_id` for a job that ran another version."""
        post = decode_body(body, RetrievalFilterPost)
        store = call.services.datasets
        draft = store.get_version(call.tenant, name, version)
        if draft.status != "draft":
            raise Conflict("the retrieval filter applies to drafts", [{
                "path": "path.version", "message": f"version {version} of {name!r} is published; versions are "
                                                   "immutable, so filter a draft before publishing it"}])
        runs = post.runs if post.runs is not None else _bound_runs(call, post.job_id or "", draft)
        items, outcome = retrieval_filter(_all_items(store, call.tenant, draft), runs, post.k)
        description = f"version {version} after the retrieval filter at k={post.k}"
        filtered = store.create_version(call.tenant, name, DatasetVersionPost(items=items, description=description),
                                        status="draft", origin="generated", job_id=draft.job_id)
        return RetrievalFiltered(version=filtered, filtered_from=version, outcome=outcome)

    @post("/{name:str}/versions/{version:int}/publish", status_code=200, sync_to_thread=True,
          summary="Publish a draft version")
    def publish(self, name: Name, version: Version, call: Call) -> DatasetVersion:
        """Mark a draft published (its items unchanged), once its review sample is done; runs then use it. A
        published version is answered as it is."""
        return call.services.datasets.publish(call.tenant, name, version)
