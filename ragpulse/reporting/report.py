"""The report of a job as typed structs: what GET /v1/jobs/{id}/report returns and what the renderer reads.

The generation section holds one field per metric of the registry (ragpulse.metrics.registry), so a metric declared
there appears in the JSON report, its OpenAPI schema and the rendered report without further edits. That is why
these structs live here, above the registry, and not in model/, which sits below metrics/ (tests/test_layout.py).
"""

from __future__ import annotations

from typing import Union

import msgspec

from ragpulse.model.agreement import CorrectedRate, JudgeAgreement
from ragpulse.model.calibration import Calibration
from ragpulse.model.dataset import DatasetBinding
from ragpulse.metrics.registry import GENERATION
from ragpulse.metrics.operational import Operations
from ragpulse.model.environment import StoredEnvironment
from ragpulse.model.estimate import Estimate
from ragpulse.model.judging import Judging, QualificationNote


class Struct(msgspec.Struct, kw_only=True):
    """Base of every report struct."""


class CiMethods(Struct):
    """How the 95% intervals were computed."""

    means: str
    proportions: str


class Method(Struct):
    """How the report's numbers were computed."""

    k: list[int]
    gain: str
    ndcg: str
    relevant_grade_at_least: int
    duplicates: str
    no_relevant: str
    ci95: CiMethods


class Counts(Struct):
    """Traces by outcome and by label state."""

    total: int
    ok: int
    failed: int
    """Every trace not `ok`: failed, judge_error and skipped_budget."""
    labelled: int
    """This and the next two: label states of the traces whose retrieval was evaluated (every status but failed,
    so a judge_error or skipped_budget trace keeps its labels), matching the retrieval means' n."""
    no_relevant: int
    unlabelled: int
    judge_input_truncated: int = 0
    """Judged traces whose answer or documents the judge saw cut (RAGPULSE_JUDGE_MAX_*_CHARS): verdicts on part."""


class UnanswerableCounts(Struct):
    """Where the unanswerable rate's n and numerator come from: labels or the judge, and what the answers did."""

    n: int
    labelled: int
    judged: int
    abstained: int
    hallucinated: int
    answered_supported: int


class Abstention(Struct):
    """Precision and recall of abstaining against the `answerable` labels."""

    n: int
    precision: Estimate | None
    recall: Estimate | None


class Citations(Struct):
    """Citation checks over traces that cite documents."""

    traces_with_citations: int
    cited: int
    cited_not_retrieved: int
    traces_citing_unretrieved: int
    cited_without_support: int
    citation_accuracy: float | None
    """(cited - wrong) / cited, pooled over every citation: a point figure, as citations cluster within traces."""
    citation_accuracy_by_trace: Estimate | None = None
    """The mean over citing traces of each trace's own (cited - wrong) / cited, with its bootstrap interval (traces
    are resampled whole, so citations of one trace stay together): how far the pooled figure can be trusted."""


class RepeatAgreement(Struct):
    """Agreement between repeated judgments of the same trace."""

    n: int
    agreement_rate: Estimate | None
    flagged_for_review: list[str]


class JudgeCost(Struct):
    """Judge calls and tokens, in total and per judged trace (the target is exactly one call per trace)."""

    traces: int
    calls: int
    repair_calls: int
    judge_errors: int
    calls_per_trace: float | None
    input_tokens: int
    output_tokens: int
    input_tokens_per_trace: float | None
    output_tokens_per_trace: float | None
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    batch_calls: int = 0
    """Calls answered through the provider's batch API (options.delivery batch), billed at the batch price."""
    cost_usd: float | None = None
    """What the calls were billed: batch calls at the batch price, cache reads and writes at their rates; None when
    the report was built without the price table."""
    interactive_cost_usd: float | None = None
    """What the same calls would have cost delivered interactively (5-minute cache writes)."""
    saving_usd: float | None = None
    """interactive_cost_usd - cost_usd: what batch delivery saved."""


class JudgeFailure(Struct):
    """A judge that was handed traces and ended some of them judge_error: who it was and what went wrong, so a
    report whose judge failed names it instead of reading like one where judging was off."""

    judge: str
    model: str | None
    """The model its calls named; None when none of its calls got an answer."""
    traces: int
    """Traces handed to this judge."""
    failed: int
    """Of those, traces that ended judge_error."""
    repair_calls: int
    """Repair turns the failed traces took: a repair after which the output was still invalid is a repair too."""
    reasons: dict[str, int]
    """The most frequent errors (at most FAILURE_REASONS), each with its number of traces, most frequent first."""


FAILURE_REASONS = 3
"""Errors listed per failed judge: enough to tell one systematic failure from a mix, short enough to read."""


GenerationSection = msgspec.defstruct(
    "GenerationSection",
    [
        ("judges", dict[str, int]),
        ("heuristic", bool),
        ("n_judged", int),
        ("n_abstained", int),
        *[(m.name, Union[Estimate, None], None) for m in GENERATION],  # noqa: UP007 - a runtime type expression
        ("unanswerable", UnanswerableCounts),
        ("abstention", Abstention),
        ("citations", Citations),
        ("repeat_agreement", RepeatAgreement),
        ("cost", JudgeCost),
        ("n_judged_by_rule", int, 0),
        ("judge_failures", list[JudgeFailure], []),
        ("not_judged", Union[str, None], None),  # noqa: UP007 - a runtime type expression
    ],
    kw_only=True,
    module=__name__,
)
"""Judged generation metrics (one field per registry metric, null when no trace is in its population), the
judge's abstention, citation, agreement and cost figures, and each judge that failed on some traces. `not_judged`
says why there are none and what to configure when the job's judge judges nothing (`none`, the default without an
LLM judge)."""

GroupGeneration = msgspec.defstruct(
    "GroupGeneration",
    [("n_judged", int), *[(m.name, Union[Estimate, None], None) for m in GENERATION if m.breakdown]],  # noqa: UP007
    kw_only=True,
    module=__name__,
)
"""The breakdown metrics of the registry for one group of traces."""


class Group(Struct):
    """One question type, source, split or subset."""

    n: int
    n_labelled: int
    retrieval: dict[str, Estimate]
    generation: GroupGeneration  # type: ignore[valid-type]


class Cell(Struct):
    """One cell of the diagnostic matrix."""

    count: int
    share: float | None


class DiagnosticMatrix(Struct):
    """Retrieval (good or poor) crossed with generation (faithful or hallucinating), and the primary issue."""

    retrieval_good_means: str
    cells: dict[str, Cell]
    n: int
    excluded: dict[str, int]
    primary_issue: str
    """`retrieval`, `generation`, `none` (no problem cell dominates) or `insufficient_data` (no trace to cross)."""
    next_step: str


class Failure(Struct):
    """A trace that did not evaluate."""

    trace_id: str
    index: int
    error: str | None


WorstTrace = dict[str, Union[str, int, float, list[str]]]  # noqa: UP007
"""`trace_id`, `index`, `metric` (e.g. `recall@5`), `value`, the same value under the metric's name, and
`missed_doc_ids`. Only traces that fail the metric (below its best value) are listed, worst first."""


class SecuritySection(Struct):
    """Security checks over the traces each could run on (in code; injection and phone-number detection are
    heuristics)."""

    rates: dict[str, Estimate | None]
    """`acl_leak` (of traces with a principal and documents with an acl), `injection_docs` (of traces with document
    text), `injection_followed` (of judged traces with injection documents), `pii` and `credentials` (of answers),
    `stale_docs` (of traces with dated documents under a max_source_age_days policy); Wilson intervals; None when
    none could run."""
    pii_kinds: dict[str, int]
    """Answers with each kind of personal data the documents do not hold (kinds and counts only)."""
    flagged: dict[str, list[str]]
    """Per check, the trace ids it flagged (at most 20)."""
    credential_kinds: dict[str, int] = {}
    """Answers with each kind of credential the documents do not hold (kinds and counts only)."""


class StageCount(Struct):
    """Traces whose first broken stage is this one."""

    count: int
    share: Estimate | None
    next_step: str


class AttributionSection(Struct):
    """Failure attribution: traces per first broken pipeline stage (`ok` when none; `unknown` without labels or a
    verdict), in pipeline order."""

    n: int
    stages: dict[str, StageCount]


class SessionsSection(Struct):
    """Conversations: traces with a `session_id`, grouped by app and session, in turn order (`turn`, else their order
    in the job). A turn's position is its `turn` + 1. Rates are Wilson intervals, the mean a percentile bootstrap."""

    n_sessions: int
    n_turns: int
    """Turns evaluated (every status but failed)."""
    session_hallucination_rate: Estimate | None
    """Share of sessions with at least one hallucinated turn, among sessions with a turn in hallucination_rate's
    population (judged, made claims)."""
    turns_to_first_hallucination: Estimate | None
    """Over sessions that hallucinated: the position of the first hallucinated turn (1 = the opening question)."""
    first_hallucination_at: dict[str, int]
    """Sessions by the turn index of their first hallucination (`0`, `1`, `2`, `3+`)."""
    hallucination_by_turn: dict[str, Estimate]
    """hallucination_rate by turn index (`0`, `1`, `2`, `3+`)."""
    abstention_by_turn: dict[str, Estimate]
    """Share of judged turns whose answer abstained, by turn index (`0`, `1`, `2`, `3+`)."""


class Target(Struct):
    """The target a metric is held to, and whether the report's mean meets it."""

    target: float
    better: str
    """`higher` (a floor) or `lower` (a ceiling)."""
    source: str
    """`options` (the batch's `options.targets`, e.g. from a gate config) or `default` (shared/DOMAIN.md's typical
    thresholds, the registry's starting targets)."""
    met: bool | None
    """None when the metric has no value in this report (no trace in its population)."""


class Report(Struct):
    """GET /v1/jobs/{job_id}/report: retrieval and generation apart, then crossed, then breakdowns."""

    job_id: str
    method: Method
    counts: Counts
    retrieval: dict[str, Estimate]
    """Macro-averages over labelled traces with at least one relevant document, keyed `recall@5`, `mrr`..."""
    generation: GenerationSection  # type: ignore[valid-type]
    diagnostic_matrix: DiagnosticMatrix
    by_question_type: dict[str, Group]
    by_source: dict[str, Group]
    worst: list[WorstTrace]
    """Labelled traces whose recall at the largest k is below 1, worst first (at most 20); empty when none fails."""
    failures: list[Failure]
    calibration: Calibration | None = None
    """The judge's agreement with human labels, once POST /v1/calibrations has been called for this job."""
    run: str | None = None
    """The batch's `options.run`: a free name for the configuration evaluated."""
    variant: str = "rag"
    """The batch's `options.variant`: `rag`, `no_rag` or `oracle`."""
    environment: StoredEnvironment = "evaluation"
    """The batch's `options.environment`: where its traces were produced (only `production` reaches the monitor)."""
    targets: dict[str, Target] = {}
    """Each reported metric that has a target, keyed like `retrieval` and `generation`: its target, direction and
    whether the mean meets it."""
    security: SecuritySection | None = None
    attribution: AttributionSection | None = None
    operations: Operations | None = None
    """The app's own latency per stage, cost and context length per query, from the traces' latency_ms and usage."""
    judge_agreement: JudgeAgreement | None = None
    """How far the job's judge agrees with human labels of the app's traces (same judge and prompt version):
    sensitivity, specificity, kappa, each with its interval; None until such labels exist. Read when the report is
    read, so labels given after the job finished count."""
    corrected: dict[str, CorrectedRate] = {}
    """`hallucination_rate` and `unanswerable_hallucination_rate` corrected for the judge's measured error
    (Rogan-Gladen from human labels; the interval carries both sampling error and the error of the judge's measured
    sensitivity and specificity); `status` says why there is no number (fewer than 30 labels in the estimation
    sample, a judge no better than chance)."""
    dataset: DatasetBinding | None = None
    """The dataset version the job measured (name, version, content hash), and its traces per split and source;
    None for a batch bound to no dataset."""
    by_split: dict[str, Group] = {}
    """Traces per dataset split (`dev`, `test`, `unspecified` for traces naming no item); empty when no trace has a
    split."""
    by_turn: dict[str, Group] = {}
    """Turns of sessions by position: `first` (turn 0), `follow_up` (later turns), `unknown` (a session's trace
    without `turn`); empty when no trace has a `session_id`. Follow-ups read earlier turns: their figures apart."""
    sessions: SessionsSection | None = None
    """Per-session hallucination, turns to the first hallucination, hallucination and abstention by turn index; None
    when no trace has a `session_id`."""
    judging: Judging | None = None
    """The judge, model and prompt version of most judged traces, and how many traces sent to the judge were judged:
    what compare and gate check before reading two jobs' judged metrics side by side."""
    qualification: QualificationNote | None = None
    """That judge configuration's latest qualification on the suite shipped with ragpulse (`not_run` when it never
    ran here), added when the report is served; None when no trace was judged."""
    subsets: dict[str, Group] = {}
    """For a job bound to a dataset, the two subsets the seeds report apart: `human` (human-written items) and `test`
    (the frozen test split nobody tunes on), each with its own figures; empty otherwise."""
