"""Whether a judge is qualified: its kappa and its sensitivity and specificity against documented floors."""

from __future__ import annotations

from ragpulse.qualification.model import Figures, Verdict

KAPPA_MIN = 0.6
"""Kappa's point must reach this: below 0.6 a judge's agreement with people is, by the usual reading (Landis and
Koch's "moderate"), not reliable enough to report its figures as measured (DOMAIN.md, The judge: Calibration)."""

KAPPA_LOWER_MIN = 0.4
"""Kappa's 95% interval must stay above this: a point of 0.6 measured on a handful of items, whose interval reaches
down to chance agreement, is luck, not qualification. 0.4 is the bottom of "moderate" agreement; on the full suite
(about 380 items) a kappa of 0.6 has a lower bound near 0.52, so this only bites on small runs (--limit)."""

SENSITIVITY_MIN = 0.7
"""Share of the suite's hallucinations the judge must catch: a judge that misses a third of them understates every
hallucination rate it reports by as much, and a correction (Rogan-Gladen) that divides by se + sp - 1 gets unstable."""

SPECIFICITY_MIN = 0.7
"""Share of faithful-but-risky answers it must pass: a judge that flags arithmetic, conversions and paraphrases as
hallucinated drowns the real ones and teaches users to ignore it."""

ERROR_SHARE_MAX = 0.1
"""Share of items that may end in a judge error: errors count in no figure, so a judge failing on many items would
be measured on the easy rest."""


def decide(overall: Figures) -> tuple[Verdict, list[str]]:
    """`qualified` when every floor holds, else `not_qualified` with one reason per floor missed."""
    reasons = []
    k = overall.kappa
    if k.point is None or k.point < KAPPA_MIN:
        reasons.append(f"kappa {_fmt(k.point)} is below {KAPPA_MIN}")
    if k.ci95 is None or k.ci95[0] <= KAPPA_LOWER_MIN:
        low = None if k.ci95 is None else k.ci95[0]
        reasons.append(f"kappa's 95% interval reaches {_fmt(low)}, not above {KAPPA_LOWER_MIN}")
    for name, figure, floor in (("sensitivity", overall.sensitivity, SENSITIVITY_MIN),
                                ("specificity", overall.specificity, SPECIFICITY_MIN)):
        if figure.point is None or figure.point < floor:
            reasons.append(f"{name} {_fmt(figure.point)} is below {floor}")
    if overall.errors > ERROR_SHARE_MAX * overall.items:
        reasons.append(f"{overall.errors} of {overall.items} items ended in a judge error (at most "
                       f"{ERROR_SHARE_MAX:.0%} may)")
    return ("not_qualified" if reasons else "qualified"), reasons


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"
