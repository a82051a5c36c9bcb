"""The structs of judge qualification: a labelled suite item, and the result of qualifying a judge on the suite."""

from __future__ import annotations

import datetime
from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from ragpulse.intake.estimate import Estimate
from ragpulse.model.trace import Trace

FailureClass = Literal[
    "numeric_drift", "dropped_condition", "entity_swap", "superseded_source", "unsupported_causal_claim",
    "confident_unanswerable", "invented_citation",
    "arithmetic_from_documents", "unit_conversion_from_documents", "paraphrase", "hedging", "partial_abstention",
    "quoted_injection_not_followed", "cross_document_synthesis", "faithful",
]
HALLUCINATED: dict[str, bool] = {
    "numeric_drift": True, "dropped_condition": True, "entity_swap": True, "superseded_source": True,
    "unsupported_causal_claim": True, "confident_unanswerable": True, "invented_citation": True,
    "arithmetic_from_documents": False, "unit_conversion_from_documents": False, "paraphrase": False,
    "hedging": False, "partial_abstention": False, "quoted_injection_not_followed": False,
    "cross_document_synthesis": False, "faithful": False,
}
"""Failure class -> whether its answers hallucinate: the subtle hallucinations, then the faithful answers that look
risky (and plain faithful ones)."""
Split = Literal["tune", "held_out"]
"""`tune` items may be read while writing a judge's prompt; `held_out` ones never are (see ragpulse.qualification)."""
SplitChoice = Literal["tune", "held_out", "all"]
Kind = Literal["single", "chat"]


class Struct(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """Base of the qualification structs.

    forbid_unknown_fields: a suite line or a stored result with a misspelt field fails loudly instead of losing it.
    omit_defaults: suite lines and stored results stay small.
    """


class SuiteItem(Struct):
    """One labelled item of the shipped suite: a trace and whether its answer hallucinated."""

    id: str
    domain: str
    kind: Kind
    failure_class: FailureClass
    hallucinated: bool
    split: Split
    trace: Trace

    def __post_init__(self) -> None:
        if HALLUCINATED[self.failure_class] != self.hallucinated:
            raise ValueError(f"item {self.id}: class {self.failure_class} means hallucinated="
                             f"{HALLUCINATED[self.failure_class]}")


Share = Annotated[float, Meta(ge=-1.0, le=1.0)]


class Figure(Struct):
    """One agreement figure with its 95% interval; `point` None when nothing was there to measure."""

    point: Share | None
    ci95: tuple[float, float] | None = None
    n: int = 0
    method: str = ""


class Figures(Struct):
    """Agreement of the judge with the suite's labels over one group of items."""

    items: int
    judged: int
    errors: int
    accuracy: Figure
    sensitivity: Figure
    """Hallucinations caught: judged hallucinated among those labelled hallucinated."""
    specificity: Figure
    """Faithful answers passed: judged faithful among those labelled faithful."""
    kappa: Figure


class Miss(Struct):
    """An item the judge got wrong, or could not judge."""

    id: str
    failure_class: FailureClass
    split: Split
    label: bool
    judged: bool | None
    """The judge's call (hallucinated or not); None when it failed on the item."""
    error: str | None = None


Verdict = Literal["qualified", "not_qualified"]


class Qualification(Struct):
    """The result of running a judge over the suite: figures overall, per split and per class, and the verdict."""

    judge: str
    model: str
    prompt_version: str
    suite_version: str
    split: SplitChoice
    started_at: datetime.datetime
    finished_at: datetime.datetime
    overall: Figures
    by_split: dict[str, Figures]
    by_class: dict[str, Figures]
    verdict: Verdict
    reasons: list[str] = []
    """Why it is not qualified (empty when it is)."""
    misses: list[Miss] = []
    heuristic: bool = False
    """The judge is an offline heuristic, not an LLM: its figures say how it fits the suite's own phrasings."""


JobStatus = Literal["queued", "running", "finished", "failed"]


QualifyingJudge = Literal["heuristic", "anthropic", "openai", "local"]
"""The judges a run may qualify: those that judge traces (`local`, the heuristic's deprecated name, read as it)."""


class QualificationRequest(Struct):
    """Body of POST /v1/judges/qualify."""

    judge: QualifyingJudge | None = None
    """The judge to qualify; absent: the service's default (RAGPULSE_JUDGE)."""
    limit: Annotated[int, Meta(ge=1)] | None = None
    """Judge only this many items, spread over the suite; absent: every item of the split."""
    split: SplitChoice = "all"
    dry_run: bool = False
    """true: answer the estimated judge calls, tokens and cost, and enqueue nothing."""


class QualificationJob(Struct):
    """A qualification run as stored and as GET /v1/judges/qualify/{job_id} answers it."""

    job_id: str
    tenant: str
    status: JobStatus
    judge: str
    model: str
    split: SplitChoice
    items: int
    created_at: datetime.datetime
    limit: int | None = None
    finished_at: datetime.datetime | None = None
    error: str | None = None
    result: Qualification | None = None


class QualificationPriced(Struct):
    """What a qualification run would judge and cost; with `job_id` once it is enqueued."""

    judge: str
    items: int
    estimate: Estimate
    dry_run: bool
    job_id: str | None = None
    status_url: str | None = None


class QualificationList(Struct):
    """The newest result of each judge, model and prompt version, newest first."""

    items: list[Qualification]
