"""The judge's agreement with the suite's labels: accuracy, sensitivity, specificity and Cohen's kappa, each with a
95% interval (Wilson for the three shares, a percentile bootstrap over items for kappa)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragpulse.metrics.agreement import cohens_kappa, kappa_interval
from ragpulse.metrics.stats import wilson_interval
from ragpulse.model.estimate import BOOTSTRAP_METHOD, WILSON_METHOD
from ragpulse.qualification.model import Figure, Figures


@dataclass(frozen=True)
class Outcome:
    """One item as judged: its label, and the judge's call (None: the judge failed on it)."""

    label: bool
    judged: bool | None


def share(successes: int, n: int) -> Figure:
    """A proportion with its Wilson interval; no point when n is 0."""
    if n == 0:
        return Figure(point=None, n=0, method=WILSON_METHOD)
    return Figure(point=successes / n, ci95=wilson_interval(successes, n), n=n, method=WILSON_METHOD)


def kappa(labels: Sequence[bool], calls: Sequence[bool]) -> Figure:
    """Cohen's kappa of the judge against the labels with its bootstrap interval; no point unless the labels hold
    both values (within one failure class every label is the same, and kappa means nothing there)."""
    if len(set(labels)) < 2:
        return Figure(point=None, n=len(labels), method=BOOTSTRAP_METHOD)
    return Figure(point=cohens_kappa(labels, calls), ci95=kappa_interval(labels, calls), n=len(labels),
                  method=BOOTSTRAP_METHOD)


def figures(outcomes: Sequence[Outcome]) -> Figures:
    """Every figure of a group of items; the items the judge failed on count as errors, outside every figure (a
    failure is not a verdict either way)."""
    judged = [o for o in outcomes if o.judged is not None]
    labels, calls = [o.label for o in judged], [bool(o.judged) for o in judged]
    positives = [c for lab, c in zip(labels, calls) if lab]
    negatives = [c for lab, c in zip(labels, calls) if not lab]
    return Figures(
        items=len(outcomes), judged=len(judged), errors=len(outcomes) - len(judged),
        accuracy=share(sum(lab == c for lab, c in zip(labels, calls)), len(judged)),
        sensitivity=share(sum(positives), len(positives)),
        specificity=share(len(negatives) - sum(negatives), len(negatives)),
        kappa=kappa(labels, calls))
