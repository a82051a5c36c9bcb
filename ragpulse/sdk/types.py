"""The shapes of what the SDK's helpers return: TypedDicts over the service's JSON (plain dicts at run time, so
importing them costs nothing). Each lists the service struct's fields; tests/test_sdk.py checks they stay in step
with the service's structs (JobView, OnlineTrace, SessionView, SessionTurnView, Report, Comparison)."""

from __future__ import annotations

from typing import Any, TypedDict


class Progress(TypedDict):
    total: int
    done: int
    failed: int
    skipped: int


class Job(TypedDict):
    """GET /v1/jobs/{id}."""

    job_id: str
    status: str
    """queued, running, finished, finished_with_errors or failed."""
    progress: Progress
    created_at: str
    started_at: str | None
    finished_at: str | None
    warnings: list[dict[str, Any]]
    error: str | None
    queue: str
    spend: dict[str, Any] | None
    callback: dict[str, Any] | None
    run: str | None
    variant: str
    environment: str
    """production, staging or evaluation (a batch's default); only production counts in the monitor and alerts."""
    dataset: dict[str, Any] | None
    """The dataset version a bound batch ran: name, version, content_hash, items covered."""
    delivery: str
    """interactive or batch (the provider's batch API)."""
    provider: dict[str, Any] | None
    """While judge requests wait in a provider batch: its ids and counts."""


class TraceRecord(TypedDict):
    """GET /v1/traces/{id}."""

    trace_id: str
    app: str
    status: str
    """pending, done, failed, incomplete or invalid."""
    sampled: bool
    sample_reason: str
    checks: list[str]
    received_at: str
    processed_at: str | None
    error: str | None
    result: dict[str, Any] | None
    environment: str
    session_id: str | None
    turn: int | None


class SessionTurn(TypedDict):
    """One sampled turn of GET /v1/sessions/{session_id}."""

    turn: int | None
    trace_id: str
    app: str
    trace: TraceRecord | None
    """The turn's record (None once expired)."""


class Session(TypedDict):
    """GET /v1/sessions/{session_id}: a conversation's sampled turns, ordered by turn."""

    session_id: str
    turns: list[SessionTurn]


class Report(TypedDict):
    """GET /v1/jobs/{id}/report (sections as dicts)."""

    job_id: str
    method: dict[str, Any]
    counts: dict[str, int]
    retrieval: dict[str, dict[str, Any]]
    generation: dict[str, Any]
    diagnostic_matrix: dict[str, Any]
    by_question_type: dict[str, Any]
    by_source: dict[str, Any]
    worst: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    calibration: dict[str, Any] | None
    run: str | None
    variant: str
    targets: dict[str, dict[str, Any]]
    security: dict[str, Any] | None
    attribution: dict[str, Any] | None
    operations: dict[str, Any] | None
    judge_agreement: dict[str, Any] | None
    """The job's judge against human labels of the app's traces: sensitivity, specificity, kappa."""
    corrected: dict[str, dict[str, Any]]
    """Hallucination rates corrected for the judge's measured error (status says why there is no number)."""
    environment: str
    dataset: dict[str, Any] | None
    """The dataset version a bound batch ran."""
    by_split: dict[str, Any]
    by_turn: dict[str, Any]
    """Turns of sessions apart: first (turn 0), follow_up, unknown (no turn index)."""
    sessions: dict[str, Any] | None
    """Per-session hallucination, turns to first hallucination, hallucination and abstention by turn index."""
    subsets: dict[str, Any]
    """The human-written subset and the test split reported apart."""
    judging: dict[str, Any] | None
    """Judge, model and prompt version of most judged traces, and judged of the traces sent to the judge."""
    qualification: dict[str, Any] | None
    """That judge configuration's latest qualification on the shipped suite: verdict, kappa, date and summary."""


class Comparison(TypedDict):
    """GET /v1/jobs/{candidate}/compare?baseline=..."""

    candidate: dict[str, Any]
    baseline: dict[str, Any]
    matched: int
    only_in_baseline: int
    only_in_candidate: int
    retrieval: dict[str, dict[str, Any]]
    generation: dict[str, dict[str, Any]]
    significant_regressions: list[str]
    regression_threshold: float
    regressions: list[dict[str, Any]]
    regressions_total: int
    by_question_type: dict[str, Any]
    by_source: dict[str, Any]
    oracle_gap: dict[str, Any] | None
    rag_lift: dict[str, Any] | None
    method: str
    attribution: dict[str, dict[str, int]]
    family: list[str]
    """The metrics tested for a change; the others are described, not tested."""
    correction: str
    alpha: float
    corrected: dict[str, dict[str, Any]]
    """Hallucination rates of the matched traces, judge-corrected on each side."""
    warnings: list[str]
    """Why the comparison may mislead (no trace matched, say)."""
    dataset_mismatch: dict[str, Any] | None
    """The two runs' dataset versions and the items matched, when they differ."""
    judge_mismatch: str | None
    """Both sides' judge, model and prompt version, when they differ (a 409 unless on_judge_mismatch=warn)."""
    judged_refused: str | None
    """A side judged under the floor (`baseline job X: 0 of 65 traces judged (floor 90%)`)."""
    refused_metrics: list[str]
    """The judged metrics that left the tested family for it."""
    pairwise: dict[str, Any] | None
    """With pairwise=true: the A/B judge's win rate, ties and position consistency."""
