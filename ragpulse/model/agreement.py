"""Judge vs human on hallucination, as typed structs: the labelled pairs, the judge's measured agreement and a
hallucination rate corrected for the judge's error (issue 22, parts 4 and 5)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

Weight = Annotated[float, Meta(gt=0)]
"""1 / an inclusion probability: positive (and at least 1 for a true probability)."""

POPULATIONS = {"hallucination_rate": "answered traces (the answer made claims)",
               "unanswerable_hallucination_rate": "unanswerable traces"}
"""Each corrected rate's population (labels.corrections.population), as pages name it beside the judge's figures
measured on it."""

CorrectionStatus = Literal["ok", "too_few_labels", "judge_uninformative", "no_data"]
"""Why a corrected rate has a number, or why it has none."""


class Struct(msgspec.Struct, kw_only=True):
    """Base of every agreement struct: keyword-only, as each has several fields of the same type."""


class LabelledPair(Struct):
    """One trace a human labelled: the judge's call beside the human's, and how the trace was picked for review."""

    judge: bool
    """The judge said hallucinated."""
    human: bool
    """The human said hallucinated."""
    weight: Weight = 1.0
    """1 / the trace's inclusion probability in the review sample (Horvitz–Thompson weight)."""
    uniform: bool = True
    """Picked by the uniform random estimation sample (else a targeted pick)."""
    appearances: int = 1
    """Judged traces holding the labelled content (re-runs in other jobs): one pair however many."""


class Rate(Struct):
    """A share with its 95% Wilson interval."""

    value: float
    ci95: tuple[float, float]
    n: int
    """Labelled pairs in the share's denominator (unweighted count)."""


class JudgeAgreement(Struct):
    """How well the judge's hallucination call matches the humans', from weighted labelled pairs."""

    labels: int
    """All labelled pairs, uniform and targeted."""
    estimation_labels: int
    """Pairs from the uniform estimation sample."""
    sensitivity: Rate | None
    """Share of human-labelled hallucinations the judge flags (None without one)."""
    specificity: Rate | None
    """Share of human-labelled faithful answers the judge passes (None without one)."""
    kappa: float | None
    kappa_ci95: tuple[float, float] | None
    counts: dict[str, int]
    """The unweighted 2x2: `human_hallucinated_judge_hallucinated`, `human_hallucinated_judge_faithful`,
    `human_faithful_judge_hallucinated`, `human_faithful_judge_faithful`."""
    method: str
    warning: str | None
    """Set when the figures should not be trusted (kappa below the reliable level, too few labels)."""
    appearances: int = 0
    """Judged traces the pairs' contents appeared as: a content re-run in several jobs counts once in `labels` and
    once per appearance here."""


class CorrectedRate(Struct):
    """A judge-counted hallucination rate beside the rate corrected for the judge's measured error."""

    raw: float | None
    """The judge's rate: flagged / judged (None without judged traces)."""
    raw_ci95: tuple[float, float] | None
    """Wilson interval of the raw rate: sampling error only."""
    n: int
    """Judged traces in the rate's population."""
    corrected: float | None
    """Rogan–Gladen estimate of the true rate (None unless `status` is `ok`)."""
    ci95: tuple[float, float] | None
    """95% interval of the corrected rate: the raw rate's sampling error and the uncertainty of the judge's
    sensitivity and specificity together."""
    estimation_labels: int
    status: CorrectionStatus
    detail: str
    """One sentence for people: what the corrected rate rests on, or why there is none."""
    method: str
    unclipped: float | None = None
    """The Rogan–Gladen point before any clipping, whatever the status (None when se + sp <= 1 or either is
    unmeasured): outside [0, 1] it is why a judge is `judge_uninformative`."""
    youden_j: float | None = None
    """Youden's J = sensitivity + specificity - 1, the correction's denominator (None when either is unmeasured)."""
    youden_j_ci95: tuple[float, float] | None = None
    """Newcombe's 95% interval of J from the Wilson intervals of sensitivity and specificity: a corrected rate needs
    it to exclude 0."""
