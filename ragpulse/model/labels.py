"""Human labels of judged traces and the review queue that picks which traces to label (issue 22).

POST /v1/labels takes a LabelRequest and answers the stored Label; GET /v1/labels lists a trace's labels
(TraceLabels); GET /v1/apps/{app}/review answers a ReviewQueue; GET /v1/apps/{app}/agreement an AppAgreement.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from ragpulse.model.agreement import JudgeAgreement
from ragpulse.model.calibration import ClaimLabel
from ragpulse.model.trace import Base, JobId, TraceId
from ragpulse.model.verdicts import Verdict

CALIBRATION_REVIEWER = "calibration"
"""The reviewer under which POST /v1/calibrations stores its labels; reserved, so no person can replace them."""

Reviewer = Annotated[str, Meta(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$",
                               description="Who labels: 1-64 letters, digits and `._@+-` (an e-mail address fits).")]
Note = Annotated[str, Meta(max_length=4000, description="Free text, at most 4,000 characters.")]
SampleKind = Literal["uniform", "targeted", "ad_hoc"]
"""How the labelled trace came to be in the review sample: `uniform` (the estimation pool: a hash of tenant, app and
judged content fell under the app's review share as first judged), `targeted` (a targeted pick: judged hallucination, repeat-judge
disagreement, app near its alert threshold), or `ad_hoc` (in neither: labelled by choice, left out of weighted
figures)."""
ReviewReason = Literal["uniform", "hallucinated", "disagreement", "near_threshold"]
"""Why the review queue serves a trace."""


class LabelRequest(Base, kw_only=True):
    """Body of POST /v1/labels: one reviewer's call on one judged trace."""

    trace_id: TraceId
    job_id: JobId | None = None
    """The batch job holding the trace; null (or absent) for an online trace (POST /v1/traces)."""
    reviewer: Reviewer
    hallucinated: bool
    """The answer asserts something its retrieved context does not support (or contradicts)."""
    abstained: bool
    """The answer declines and asserts nothing else."""
    claims: Annotated[list[ClaimLabel], Meta(max_length=1000)] | None = None
    """Per-claim verdicts, by position in the judge's claim list (ReviewItem.claims)."""
    note: Note | None = None

    def __post_init__(self) -> None:
        if self.reviewer == CALIBRATION_REVIEWER:
            raise ValueError(f"reviewer `{CALIBRATION_REVIEWER}` is reserved for POST /v1/calibrations")


class Label(msgspec.Struct, kw_only=True):
    """A stored label: the reviewer's call beside the judge's on the same trace, and how the trace was sampled."""

    trace_id: str
    job_id: str | None
    app: str
    reviewer: str
    hallucinated: bool
    abstained: bool | None
    """None only for labels stored by POST /v1/calibrations, whose labels say `faithful` and nothing of abstention."""
    claims: list[ClaimLabel] | None = None
    note: str | None = None
    labelled_at: str
    """RFC 3339, UTC."""
    judge: str
    """The judge whose verdict is compared (`anthropic`, `openai`, `heuristic`)."""
    prompt_version: str
    judge_hallucinated: bool
    judge_abstained: bool
    sample: SampleKind
    inclusion_probability: float | None
    """Probability that the review design picks this trace (uniform pool or targeted pick) when it is judged:
    q + (1 - q) x r, q = RAGPULSE_REVIEW_SAMPLE_RATE and r the targeted rate of the trace's stratum (0 when in none).
    Weighting every label by 1 / inclusion_probability estimates figures over all judged traces (Horvitz-Thompson).
    Within the uniform sample alone every trace had the same chance q: unweighted means over it are unbiased.
    None for `ad_hoc` labels."""
    uniform_probability: float | None = None
    """q when `sample` is `uniform`, else None."""
    unanswerable: bool | None = None
    """The trace is in the unanswerable-hallucination rate's population, as the judged result says (None on labels
    stored before this field)."""
    answered: bool | None = None
    """The trace is in the hallucination rate's population: the judged answer made claims (None on labels stored
    before this field)."""
    reason: ReviewReason | None = None
    """The stratum of a targeted pick (`uniform` for the uniform sample), None when `ad_hoc`."""
    replaced: bool = False
    """True when this reviewer's earlier label of the trace was replaced."""
    content_key: str | None = None
    """The judged content the label belongs to (TraceResult.content_key): it applies to every trace of that content,
    in any job; `trace_id` and `job_id` name the one it was given on. None on labels stored before this field."""


class InterAnnotator(msgspec.Struct, kw_only=True):
    """Agreement between reviewers on `hallucinated`: Cohen's kappa for two, Fleiss' for three or more."""

    method: Literal["cohen", "fleiss"] | None
    """None when fewer than two reviewers labelled the same traces."""
    kappa: float | None
    traces: int
    """Traces with at least two labels that entered the figure."""
    reviewers: int
    observed_agreement: float | None = None


class TraceLabels(msgspec.Struct, kw_only=True):
    """GET /v1/labels?trace_id=...: every reviewer's label of one trace, and how far they agree."""

    trace_id: str
    job_id: str | None
    labels: list[Label]
    agreement: InterAnnotator
    majority: bool | None
    """The reviewers' majority call on `hallucinated`; None on a tie or without labels."""


class DocumentText(msgspec.Struct, kw_only=True):
    """One retrieved document as a reviewer reads it (cut like the judge's input)."""

    doc_id: str
    text: str | None


class ClaimText(msgspec.Struct, kw_only=True):
    """One claim of the answer, without the judge's verdict."""

    index: int
    text: str


class JudgeClaim(msgspec.Struct, kw_only=True, omit_defaults=True):
    """The judge's verdict on one claim."""

    index: int
    verdict: Verdict
    reason: str | None = None
    quote: str | None = None


class JudgeView(msgspec.Struct, kw_only=True):
    """What the judge said about the trace; a review page shows it only after the reviewer answered."""

    judge: str
    prompt_version: str
    hallucinated: bool
    abstained: bool
    claims: list[JudgeClaim]
    unanswerable: bool = False
    """The trace is in the unanswerable-hallucination rate's population (labelled unanswerable, else judged so)."""


class ReviewItem(msgspec.Struct, kw_only=True):
    """One trace to label."""

    trace_id: str
    job_id: str | None
    app: str
    reason: ReviewReason
    inclusion_probability: float
    query: str
    answer: str | None
    documents: list[DocumentText]
    claims: list[ClaimText]
    judge: JudgeView
    labels: int
    """Labels the trace has so far (any reviewer)."""
    content_key: str | None = None
    """The judged content the item stands for: a label of it applies to every trace of that content."""
    appearances: int = 1
    """Traces (in jobs or online) that judged this same content; the queue serves it once."""


class Estimation(msgspec.Struct, kw_only=True):
    """Progress of the uniform estimation sample: corrected rates need `needed` labels in it."""

    pool: int
    """Judged traces of the app in the uniform pool that can still be reviewed (their text is kept)."""
    labelled: int
    """Of the app's labels in the agreement window, those from the uniform pool."""
    needed: int = 30


class ReviewQueue(msgspec.Struct, kw_only=True):
    """GET /v1/apps/{app}/review: the next traces to label."""

    app: str
    items: list[ReviewItem]
    estimation: Estimation


class JudgeVersionAgreement(msgspec.Struct, kw_only=True):
    """The agreement of one judge and prompt version with the reviewers, over the app's labels in the window."""

    judge: str
    prompt_version: str
    current: bool
    """True when this is the prompt version the judge uses now."""
    agreement: JudgeAgreement
    """Sensitivity, specificity and kappa with intervals, from the labelled traces weighted by 1 / inclusion
    probability (`uniform` pairs: the estimation sample)."""
    labels: int
    """Labels (every reviewer's) of these traces."""
    traces: int
    """Labelled traces, each distinct judged content once; those in `agreement` are the ones neither disputed nor ad
    hoc."""
    disputed: int
    """Traces whose reviewers tie: left out."""
    ad_hoc: int
    """Traces the review design did not pick (no known inclusion probability): left out."""
    appearances: int = 0
    """Judged traces (across jobs and online) holding the labelled contents: `traces` counts each content once however
    many jobs re-ran it; this says how many appearances those labels stand for."""
    oldest_label_at: str
    newest_label_at: str
    inter_annotator: InterAnnotator
    """How far the reviewers agree with each other on these traces."""


class AppAgreement(msgspec.Struct, kw_only=True):
    """GET /v1/apps/{app}/agreement."""

    app: str
    window_days: int
    """Labels younger than this count (RAGPULSE_AGREEMENT_WINDOW_DAYS)."""
    judges: list[JudgeVersionAgreement]
    """The versions judges use now first."""
