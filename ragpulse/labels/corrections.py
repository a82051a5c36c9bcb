"""The judge-corrected hallucination rates beside the judge's own (report, monitor, compare, gate): a rate the judge
measured over n traces, corrected for the judge's error as the app's human labels measure it.

The labels are those of the same app, judge and prompt version within RAGPULSE_AGREEMENT_WINDOW_DAYS; each labelled
trace counts once (its reviewers' majority) with weight 1 / its inclusion probability (labels.agreement.pairs). Each
rate's labels are those of its population: traces whose answer made claims, unanswerable traces.
metrics.correction says how the rate is corrected (Rogan-Gladen) and why, and refuses a number below 30 labels of
the estimation sample.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragpulse.labels.agreement import pairs
from ragpulse.labels.traces import LabelledTrace
from ragpulse.metrics.correction import corrected_rate, judge_agreement
from ragpulse.model.estimate import Estimate
from ragpulse.model.agreement import CorrectedRate, JudgeAgreement

CORRECTED = ("hallucination_rate", "unanswerable_hallucination_rate")
"""The rates given a judge-corrected estimate."""


def population(traces: Sequence[LabelledTrace], rate: str) -> list[LabelledTrace]:
    """The labelled traces in `rate`'s population: the unanswerable ones, or those whose judged answer made claims
    (the hallucination rate counts only those: abstentions and claim-less answers, nearly always faithful to judge
    and human alike, would inflate the specificity its correction divides by)."""
    if rate == "unanswerable_hallucination_rate":
        return [t for t in traces if t.unanswerable]
    return [t for t in traces if t.answered]


def corrected_rates(counts: Mapping[str, tuple[int, int]], traces: Sequence[LabelledTrace]) -> dict[str, CorrectedRate]:
    """Each rate of `counts` (rate -> the judge's positives and n) corrected with the labels of its population."""
    return {rate: corrected_rate(positives, n, pairs(population(traces, rate)))
            for rate, (positives, n) in counts.items() if rate in CORRECTED}


def counts_of(estimates: Mapping[str, Estimate | None]) -> dict[str, tuple[int, int]]:
    """(positives, n) of each correctable rate that has an estimate (a proportion's mean x n is a whole count)."""
    return {rate: (round(est.mean * est.n), est.n) for rate, est in estimates.items()
            if rate in CORRECTED and est is not None}


def agreement(traces: Sequence[LabelledTrace]) -> JudgeAgreement | None:
    """The judge against the humans over these labelled traces; None without any."""
    return judge_agreement(pairs(traces)) if traces else None


def by_population(traces: Sequence[LabelledTrace]) -> dict[str, JudgeAgreement | None]:
    """The judge against the humans over each corrected rate's population: the figures its correction rests on."""
    return {rate: agreement(population(traces, rate)) for rate in CORRECTED}
