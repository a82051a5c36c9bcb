"""How far reviewers agree with each other on `hallucinated`, and the reviewers' majority call on a trace."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence

from ragpulse.metrics.agreement import cohens_kappa, fleiss_kappa
from ragpulse.model.labels import InterAnnotator, Label


def majority(labels: Sequence[Label]) -> bool | None:
    """The reviewers' majority on `hallucinated`; None on a tie (disputed) or without labels."""
    yes = sum(label.hallucinated for label in labels)
    no = len(labels) - yes
    return None if yes == no else yes > no


def among(traces: Sequence[Sequence[Label]], reviewers: Collection[str]) -> InterAnnotator:
    """Agreement of `reviewers` over the traces every one of them labelled: Cohen's kappa for two, Fleiss' for more."""
    wanted = set(reviewers)
    rows = [[lab for lab in labels if lab.reviewer in wanted] for labels in traces]
    rows = [sorted(row, key=lambda lab: lab.reviewer) for row in rows if len(row) == len(wanted)]
    return _figure(rows, len(wanted), same_raters=True)


def across(traces: Sequence[Sequence[Label]]) -> InterAnnotator:
    """Agreement over traces with several labels: those with the most common number n >= 2 of labels enter. Cohen's
    kappa when n is 2 and the same two reviewers labelled them all, else Fleiss' kappa (raters may differ by trace)."""
    sizes = Counter(len(labels) for labels in traces if len(labels) >= 2)
    if not sizes:
        return InterAnnotator(method=None, kappa=None, traces=0, reviewers=0)
    n = max(sizes, key=lambda size: (sizes[size], size))
    rows = [sorted(labels, key=lambda lab: lab.reviewer) for labels in traces if len(labels) == n]
    same = len({tuple(lab.reviewer for lab in row) for row in rows}) == 1
    return _figure(rows, n, same_raters=same)


def _figure(rows: list[list[Label]], n: int, same_raters: bool) -> InterAnnotator:
    reviewers = len({lab.reviewer for row in rows for lab in row})
    if n < 2 or not rows:
        return InterAnnotator(method=None, kappa=None, traces=len(rows), reviewers=reviewers)
    observed = sum(_pairwise(row) for row in rows) / len(rows)
    if n == 2 and same_raters:
        kappa = cohens_kappa([row[0].hallucinated for row in rows], [row[1].hallucinated for row in rows])
        return InterAnnotator(method="cohen", kappa=kappa, traces=len(rows), reviewers=reviewers,
                              observed_agreement=observed)
    counts = [[sum(lab.hallucinated for lab in row), sum(not lab.hallucinated for lab in row)] for row in rows]
    return InterAnnotator(method="fleiss", kappa=fleiss_kappa(counts), traces=len(rows), reviewers=reviewers,
                          observed_agreement=observed)


def _pairwise(row: Sequence[Label]) -> float:
    """Share of reviewer pairs that agree on the trace."""
    yes = sum(lab.hallucinated for lab in row)
    no, n = len(row) - yes, len(row)
    return (yes * (yes - 1) + no * (no - 1)) / (n * (n - 1))
