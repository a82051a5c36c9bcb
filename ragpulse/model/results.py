"""What a job is and what it returns: status, progress, warnings and per-trace results."""

from __future__ import annotations

from typing import Literal

import msgspec

from ragpulse.model.dataset import DatasetBinding
from ragpulse.model.environment import StoredEnvironment
from ragpulse.model.verdicts import Claim, Judgment, JudgeCall
from ragpulse.model.scores import Attribution
from ragpulse.model.scores import GenerationScores

BY_RULE = "always:"
"""The prefix of the sample reason of a trace judged by an always-judge rule only (outside the uniform sample)."""


def judged_by_rule(reason: str | None) -> str | None:
    """The always-judge rule a trace was judged for when the uniform sample did not pick it, else None. Such a trace is
    judged for its own sake and picked for looking bad (negative feedback, a miscitation, an injection document):
    counted in a rate it would bias it, so every quality rate (monitor, metrics, report) counts it apart."""
    return reason[len(BY_RULE):] if reason is not None and reason.startswith(BY_RULE) else None


JobStatus = Literal["queued", "running", "finished", "finished_with_errors", "failed"]
ENDED_WITH_REPORT: tuple[JobStatus, ...] = ("finished", "finished_with_errors")
"""Statuses of a job that has a report, so can be a comparison's baseline or calibrated."""
TraceStatus = Literal["ok", "failed", "judge_error", "skipped_budget", "awaiting_judge"]
"""`awaiting_judge`: batch delivery, the judge request waits on the provider; the retrieval metrics and checks are
in, the result is replaced once the batch has answered (never in a report)."""
LabelState = Literal["labelled", "no_relevant", "unlabelled"]
TERMINAL: frozenset[str] = frozenset({"finished", "finished_with_errors", "failed"})
"""Statuses a job never leaves."""
TRUNCATED_ANSWER = "answer"
TRUNCATED_DOCUMENTS = "documents"
TRUNCATED_HISTORY = "history"
TRUNCATED_SESSION_EVIDENCE = "session_evidence"
TRUNCATED_PARTS = (TRUNCATED_ANSWER, TRUNCATED_DOCUMENTS, TRUNCATED_HISTORY, TRUNCATED_SESSION_EVIDENCE)
"""What `TraceResult.judge_input_truncated` may name: the `part` label values of ragpulse_judge_input_truncated_total."""


class DataWarning(msgspec.Struct, kw_only=True):
    """A data-quality problem the client should fix; the job still runs."""

    code: str
    message: str
    count: int
    total: int


class Progress(msgspec.Struct, kw_only=True):
    """How many traces of the job are evaluated so far; done + failed + skipped reaches total at the end."""

    total: int
    done: int
    failed: int
    skipped: int = 0
    """Traces skipped because a budget ran out; POST /v1/jobs/{id}/retry runs them."""


class Spend(msgspec.Struct, kw_only=True):
    """Judge usage and cost of a job, counting every call of every judge (retries and repairs included; the
    offline `heuristic` judge's calls count too, at no cost), as the report's `generation.cost.calls` does."""

    judge_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float


class CallbackState(msgspec.Struct, kw_only=True):
    """Delivery state of the job's completion callback."""

    status: Literal["pending", "delivered", "failed"]
    attempts: int
    last_error: str | None


OUTCOMES = ("processing", "succeeded", "errored", "expired", "canceled")
"""Request counts of a provider batch, as Anthropic names them."""


class ProviderProgress(msgspec.Struct, kw_only=True):
    """Batch delivery: where the job's judge requests stand at the provider's batch API."""

    waiting: bool
    """True while a part of the job waits on a provider batch (results within 24 hours, most within one)."""
    batch_ids: list[str]
    """The provider's ids of the job's batches."""
    counts: dict[str, int]
    """The batches' request counts summed: processing, succeeded, errored, expired, canceled (the provider says how
    each request ended only once its whole batch has ended)."""
    awaiting_judge: int = 0
    """Traces whose retrieval metrics and checks are stored while their judge request waits on the provider: in the
    job's results with status `awaiting_judge` until the batch answers."""


class JobView(msgspec.Struct, kw_only=True):
    """GET /v1/jobs/{job_id}."""

    job_id: str
    status: JobStatus
    progress: Progress
    created_at: str
    started_at: str | None
    finished_at: str | None
    warnings: list[DataWarning]
    error: str | None
    queue: str = "batch"
    spend: Spend | None = None
    callback: CallbackState | None = None
    run: str | None = None
    """The batch's `options.run`."""
    variant: str = "rag"
    """The batch's `options.variant`: `rag`, `no_rag` or `oracle`."""
    dataset: DatasetBinding | None = None
    """The dataset version the batch ran (name, version, content hash) and its traces per split and source; None for
    a batch bound to none."""
    environment: StoredEnvironment = "evaluation"
    """The batch's `options.environment`: only a `production` job's traces count in the production monitor."""
    delivery: str = "interactive"
    """The batch's `options.delivery`."""
    provider: ProviderProgress | None = None
    """Batch delivery: the provider batches and their request counts; None before any is submitted."""


class Security(msgspec.Struct, kw_only=True):
    """The security checks of one trace (in code, no judge; heuristics where said)."""

    acl_leak: bool | None = None
    """A retrieved document's `acl` shares no group with the principal's; None when not checkable (no principal,
    or no retrieved document carries an `acl`)."""
    leaked_doc_ids: list[str] = []
    injection_checked: bool = False
    """True when a retrieved document has text to scan."""
    injection_docs: list[str] = []
    """Retrieved documents whose text carries instructions aimed at the model (a heuristic pattern check)."""
    injection_cues: list[str] = []
    """Which cues were found (`override_instructions`, `role_marker`, `hidden_html`...)."""
    injection_followed: bool | None = None
    """The judge's verdict on whether the answer carried out such an instruction; None when not judged or when no
    document carries one."""
    pii_checked: bool = False
    """True when the trace has an answer to scan."""
    pii: dict[str, int] = {}
    """Personal data in the answer that no retrieved document holds: kinds and counts, never the values."""
    credentials_checked: bool = False
    """True when the trace has an answer to scan."""
    credentials: dict[str, int] = {}
    """Credentials (API keys, tokens, private keys, passwords) in the answer that no retrieved document holds: kinds
    and counts, never the values (ragpulse.security.credentials; `password` is a heuristic)."""
    stale_checked: bool = False
    """True when the app's policy sets `max_source_age_days` and a retrieved document has `updated_at`."""
    stale_docs: list[str] = []
    skipped: dict[str, str] = {}
    """Checks (`injection`, `pii`, `credentials`) that did not read all their input, and why (`time budget`: the
    trace's checks ran out of time): what such a check reports is what it found before it stopped, never a pass."""


class Pipeline(msgspec.Struct, kw_only=True):
    """The app's own operational figures for this query."""

    latency_ms: dict[str, float] = {}
    """Per stage: retrieval, rerank, generation, total (what the trace gave)."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    context_tokens: int = 0
    """Estimated tokens of the retrieved documents' text (characters / 4): an estimate, not a tokenizer count."""


class TraceResult(msgspec.Struct, kw_only=True):
    """Evaluation of one trace, as returned by GET /v1/jobs/{job_id}/results."""

    trace_id: str
    index: int
    status: TraceStatus
    app: str
    question_type: str | None = None
    source: str | None = None
    answerable: bool | None = None
    item_id: str | None = None
    """The dataset item the trace answered (a batch bound to a dataset); comparisons match traces by it first."""
    split: str | None = None
    """The item's split (`dev`, `test`)."""
    session_id: str | None = None
    """The conversation the trace is a turn of (the trace's `session_id`)."""
    turn: int | None = None
    """The turn's index in its session (the trace's `turn`): the report's `by_turn` and the session metrics read it."""
    environment: StoredEnvironment = "production"
    """Where the trace was produced: only `production` results count in the monitor and the series alerts read."""
    labels: LabelState
    retrieval: dict[str, float] | None
    missed_doc_ids: list[str] = []
    judge: str | None = None
    """Which judge produced `generation`: `anthropic` (an LLM) or `heuristic` (an offline heuristic)."""
    generation: GenerationScores | None = None
    claims: list[Claim] = []
    """Per-claim verdicts of the (first) judgment, after the quote check."""
    sampled: bool | None = None
    """Whether the sampling policy sent this trace to the judge (None: no judge was asked for)."""
    sample_reason: str | None = None
    """`sampled`, `not_sampled`, `all` (offline batch), `always:<rule>`, or `set_aside:retrieval_unanswerable` (a
    dataset item the retrieval filter flagged: never judged)."""
    checks: list[str] = []
    """Cheap programmatic checks that flagged this trace (run on every trace, judged or not)."""
    judge_input_truncated: list[str] = []
    """What the judge was handed cut short (`answer`, `documents`, `history`, `session_evidence`) by
    RAGPULSE_JUDGE_MAX_ANSWER_CHARS, _DOC_CHARS, _CONTEXT_CHARS, _HISTORY_TURNS, _HISTORY_CHARS or
    _SESSION_EVIDENCE_CHARS: the verdicts are on the text that was left. Empty when the judge saw it all."""
    needs_review: bool = False
    """True when repeated judgments disagreed; a human should look."""
    judgments: list[Judgment] = []
    """Every judgment with its raw calls: raw output, model, prompt version, tokens, latency, request id."""
    failed_calls: list[JudgeCall] = []
    """Judge calls of a trace that ended in judge_error, kept for audit."""
    error: str | None = None
    query_hash: str | None = None
    """For a trace posted without a `trace_id`: a hash of its query, so comparisons can match it by query text."""
    security: Security | None = None
    attribution: Attribution | None = None
    """The first pipeline stage that broke (`ok` when none, `unknown` without labels or a verdict)."""
    pipeline: Pipeline | None = None
    content_key: str | None = None
    """A hash of what the judge was handed (app, query, history, documents, answer): re-runs of the same content in
    other jobs share it, and with it one review slot and one set of labels."""
    review_share: float | None = None
    """The uniform review share q in force for the app when the trace was judged (its policy's
    `review_sample_rate`, else RAGPULSE_REVIEW_SAMPLE_RATE); None when not judged."""
    review_draw: float | None = None
    """The trace's review draw u in [0, 1), a hash of its tenant, app and content key: u < q puts its content in the
    uniform estimation pool."""


class ResultsPage(msgspec.Struct, kw_only=True):
    """One page of results; pass next_cursor back to get the next one."""

    items: list[TraceResult]
    next_cursor: str | None


class Accepted(msgspec.Struct, kw_only=True):
    """202 answer to POST /v1/batches."""

    job_id: str
    status_url: str
    trace_count: int
    warnings: list[DataWarning]
