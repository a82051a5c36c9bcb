"""A paired comparison of two jobs as typed structs: what GET /v1/jobs/{candidate}/compare returns and what
`ragpulse gate` reads."""

from __future__ import annotations

from typing import Literal

import msgspec

Change = Literal["improved", "regressed", "unchanged"]


class Struct(msgspec.Struct, kw_only=True):
    """Base of every comparison struct."""


class RunInfo(Struct):
    """One side of the comparison."""

    job_id: str
    run: str | None
    variant: str


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
    """`regressed` / `improved` when the change is significant in that direction (proportions: McNemar's exact
    p < 0.05; means: the interval excludes 0), else `unchanged`."""
    mcnemar: McNemar | None = None
    """For proportions (hit rate, hallucinated...) only."""
    p_value: float = 1.0
    """Two-sided p-value of no change: McNemar's exact test for proportions, the paired bootstrap's for means."""
    p_holm: float | None = None
    """`p_value` adjusted by Holm's method over every metric of the comparison (None in slices): what a gate that
    checks ~25 metrics at once should read, so that noise alone rarely fails it."""


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
    """Metric keys whose change is `regressed`."""
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
