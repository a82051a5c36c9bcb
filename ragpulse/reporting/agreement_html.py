"""The report page's judge-agreement section: the hallucination rates corrected for the judge's measured error,
beside the judge's own, and how far the judge agrees with the app's reviewers."""

from __future__ import annotations

from html import escape

from ragpulse.model.agreement import CorrectedRate, JudgeAgreement, Rate
from ragpulse.reporting.report import Report


def corrected_section(report: Report) -> str:
    """A table of the corrected rates (or why there is none) and a line on the judge's agreement."""
    if not report.corrected:
        return ("<p class=note>No judged rate to correct. Label traces (the review page, or POST /v1/labels) to "
                "measure the judge's error.</p>")
    rows = "".join(_row(name, rate) for name, rate in report.corrected.items())
    return ("<p class=note>Each rate as the judge measured it, and corrected for the judge's error as human labels "
            "of this app measure it (Rogan–Gladen; the interval carries both sampling error and the uncertainty of "
            "the judge's sensitivity and specificity).</p><div class=scroll><table><tr><th>rate</th><th class=num>judge</th>"
            "<th class=num>corrected</th><th class=num>95% CI</th><th class=num>labels</th><th>status</th></tr>"
            f"{rows}</table></div>{_agreement(report.judge_agreement)}")


def _row(name: str, rate: CorrectedRate) -> str:
    raw = "-" if rate.raw is None else f"{rate.raw:.3f}"
    value = "-" if rate.corrected is None else f"{rate.corrected:.3f}"
    interval = "-" if rate.ci95 is None else f"[{rate.ci95[0]:.3f}, {rate.ci95[1]:.3f}]"
    return (f"<tr><td>{escape(name)}</td><td class=num>{raw}</td><td class=num>{value}</td><td class=num>{interval}"
            f"</td><td class=num>{rate.estimation_labels}</td><td>{escape(rate.detail)}</td></tr>")


def _agreement(agreement: JudgeAgreement | None) -> str:
    if agreement is None:
        return "<p class=note>No human label of this app's traces for this judge yet.</p>"
    kappa = "-" if agreement.kappa is None else f"{agreement.kappa:.2f}"
    return (f"<p class=note>Judge against {agreement.labels} labelled traces ({agreement.estimation_labels} in the "
            f"estimation sample): sensitivity {_rate(agreement.sensitivity)}, specificity "
            f"{_rate(agreement.specificity)}, kappa {kappa}."
            + (f" {escape(agreement.warning)}" if agreement.warning else "") + "</p>")


def _rate(rate: Rate | None) -> str:
    return "-" if rate is None else f"{rate.value:.2f} [{rate.ci95[0]:.2f}, {rate.ci95[1]:.2f}]"
