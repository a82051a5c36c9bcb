"""A paired comparison of two jobs as typed structs: what GET /v1/jobs/{candidate}/compare returns and what
`ragpulse gate` reads."""

from __future__ import annotations

from typing import Literal

import msgspec

from ragpulse.model.agreement import CorrectedRate
from ragpulse.model.dataset import DatasetBinding
from ragpulse.model.judging import Judging
from ragpulse.model.pairwise import Pairwise

Change = Literal["improved", "regressed", "unchanged", "untested"]
Correction = Literal["holm", "none"]
MismatchPolicy = Literal["warn", "refuse"]
"""What a comparison of runs on different dataset versions (or different items), or judged by different judges, does:
answer with a loud warning, or refuse (compare 409, gate exit 2)."""


class Struct(msgspec.Struct, kw_only=True):
    """Base of every comparison struct."""


class RunInfo(Struct, omit_defaults=True):
    """One side of the comparison (`dataset` left out when the job ran none)."""

    job_id: str
    run: str | None
    variant: str
    dataset: DatasetBinding | None = None
    """The dataset version the job ran, if it was bound to one."""
    judging: Judging | None = None
    """Who judged the job's traces (judge, model, prompt version) and how many of those sent to the judge were
    judged; read off its results by the comparison."""


class McNemar(Struct):
    """McNemar's exact test on a paired proportion: discordant pairs each way and the two-sided p-value."""

    worse: int
    """Pairs that moved the bad way (e.g. hallucinated in the candidate, not in the baseline)."""
    better: int
    p_value: float


class MetricDelta(Struct):
    """One metric over the matched traces where both jobs have a value."""

    n: int
    baseline: float
    candidate: float
    delta: float
    """candidate - baseline (for a `lower is better` metric a positive delta is worse)."""
    ci95: tuple[float, float]
    """Paired bootstrap 95% interval of the delta (fixed seed)."""
    excludes_zero: bool
    better: str
    """`higher` or `lower`: which direction is better for this metric."""
    change: Change
    """For a metric of the tested family: `regressed` / `improved` when its adjusted p-value (`p_adjusted`) is below
    the comparison's alpha, in that direction, else `unchanged`. `untested` for a report-only metric (and in
    slices): its delta and interval describe it, and nothing is decided on it."""
    mcnemar: McNemar | None = None
    """For proportions (hit rate, hallucinated...) only."""
    p_value: float = 1.0
    """Two-sided p-value of no change: McNemar's exact test for proportions; for means, the paired sign-flip
    permutation test (exact up to 14 pairs, else 20,000 draws) when `tested`, the paired bootstrap's (1,000
    resamples, descriptive only) otherwise."""
    p_holm: float | None = None
    """`p_value` adjusted by Holm's method over the tested family (None when untested)."""
    tested: bool = False
    """In the family the regression check tests (the gate's thresholded and `[baseline]` metrics, or the compare
    request's `metrics`)."""
    p_adjusted: float | None = None
    """The p-value the decision reads: `p_holm` under the `holm` correction, `p_value` under `none`; None when
    untested."""
    note: str | None = None
    """Why a tested metric whose interval excludes 0, or whose own p-value is below alpha, is still `unchanged`."""


class Regression(Struct):
    """A matched trace that got worse, with both sides' values."""

    trace_id: str
    baseline_index: int
    candidate_index: int
    reasons: list[str]
    """`hallucinated` (now but not before), `recall@5 -0.50`, `ndcg@5 -0.39`..."""
    severity: float
    """The largest drop among the reasons (a new hallucination counts 1.0): the sort key, worst first."""
    baseline: dict[str, float | bool | None]
    candidate: dict[str, float | bool | None]


class SliceComparison(Struct):
    """The breakdown metrics of one question type or source."""

    matched: int
    metrics: dict[str, MetricDelta]


class StageDelta(Struct):
    """Matched traces whose first broken stage is this one, in each run."""

    baseline: int
    candidate: int
    delta: int


class Gap(Struct):
    """What the baseline run bounds: the oracle gap (oracle - rag) or the lift retrieval adds (rag - no_rag)."""

    metric: str
    value: float
    ci95: tuple[float, float]
    n: int
    meaning: str


class CorrectedSides(Struct):
    """One rate of the matched traces, judge-corrected on each side."""

    baseline: CorrectedRate
    candidate: CorrectedRate


class Comparison(Struct):
    """GET /v1/jobs/{candidate}/compare?baseline={job_id}: the candidate measured against the baseline, trace by
    trace (matched by `trace_id`, else by query text)."""

    candidate: RunInfo
    baseline: RunInfo
    matched: int
    only_in_baseline: int
    only_in_candidate: int
    retrieval: dict[str, MetricDelta]
    generation: dict[str, MetricDelta]
    significant_regressions: list[str]
    """Tested metric keys whose change is `regressed` (the decision `ragpulse gate` fails on)."""
    regression_threshold: float
    """A trace's recall@k or nDCG@k must drop by at least this much to count as a regression."""
    regressions: list[Regression]
    """Worst first, at most 100; `regressions_total` counts them all."""
    regressions_total: int
    by_question_type: dict[str, SliceComparison]
    by_source: dict[str, SliceComparison]
    oracle_gap: Gap | None = None
    """When one side is an `oracle` run and the other a `rag` run: oracle - rag faithfulness."""
    rag_lift: Gap | None = None
    """When one side is a `no_rag` run and the other a `rag` run: what retrieval adds to the answers."""
    method: str = ""
    attribution: dict[str, StageDelta] = {}
    """Per failure-attribution stage, matched traces in it before and after (pipeline order)."""
    family: list[str] = []
    """The metrics tested for a change, one multiple-comparison family: every other metric is described, never
    tested."""
    correction: Correction = "holm"
    """How the family's p-values are adjusted: `holm` (Holm's step-down, family-wise error <= alpha) or `none`."""
    alpha: float = 0.05
    """A tested metric changed significantly when its adjusted p-value is below this."""
    corrected: dict[str, CorrectedSides] = {}
    """hallucination_rate and unanswerable_hallucination_rate over the matched traces, each side corrected for its
    judge's measured error (the app's human labels of that judge and prompt version); filled by the service."""
    warnings: list[str] = []
    """Why this comparison may say little (`matched: 0`: the two jobs share no trace; runs on different dataset
    versions or items); empty when nothing to say."""
    dataset_mismatch: str | None = None
    """Set when the two runs are not on the same dataset items: different dataset versions (by content hash), one
    bound to a dataset and the other not, or the same version with items only one run covered. Names both versions
    and how many items matched; None when both ran the same items (or neither ran a dataset)."""
    judge_mismatch: str | None = None
    """Set when both jobs have judged traces but not by the same judge, model and prompt version (every heuristic
    counts as one judge), naming both sides'; compare answers 409 and the gate exits 2 unless told to warn."""
    judged_refused: str | None = None
    """Set when a side's judged share is below the floor (`baseline job X: 0 of 65 traces judged (floor 90%)`): its
    judged metrics are left out of the tested family, described only."""
    refused_metrics: list[str] = []
    """The judged metrics asked to be tested that `judged_refused` left out of the family."""
    pairwise: Pairwise | None = None
    """With `pairwise=true`, once its run has ended: the judge's preference between the two runs' answers, each
    matched item asked in both orders (absent otherwise)."""
