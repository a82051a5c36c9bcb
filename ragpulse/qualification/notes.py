"""The qualification line every rate carries: the judge configuration's latest result on the shipped suite.

The figure shown is kappa on the `held_out` split where the run judged it (items no prompt was tuned on), else over
the items it judged. A configuration never qualified here is `not_run`: its rates are shown as unmeasured."""

from __future__ import annotations

from ragpulse.model.judging import QualificationNote
from ragpulse.qualification.model import Figures, Qualification
from ragpulse.qualification.render import cell
from ragpulse.qualification.store import Qualifications

NOT_RUN = ("not qualified: this judge configuration was never run on the shipped suite (run ragpulse judge qualify "
           "or POST /v1/judges/qualify to measure it)")


def qualification_note(store: Qualifications, tenant: str, judge: str, model: str | None,
                       prompt_version: str | None) -> QualificationNote:
    """The latest qualification of (judge, model, prompt version) for `tenant`; `model` None matches any model (a
    heuristic names none in settings)."""
    found = next((q for q in store.latest(tenant) if _matches(q, judge, model, prompt_version)), None)
    if found is None:
        return QualificationNote(judge=judge, model=model, prompt_version=prompt_version, verdict="not_run",
                                 summary=NOT_RUN)
    figures, split = _shown(found)
    kappa = found_kappa(figures)
    when = found.finished_at.date().isoformat()
    said = "qualified" if found.verdict == "qualified" else "not qualified"
    summary = f"{said} on the shipped suite: kappa {cell(figures.kappa)} ({split}), {when}"
    if found.verdict != "qualified" and found.reasons:
        summary += f": {found.reasons[0]}"
    return QualificationNote(judge=judge, model=found.model, prompt_version=found.prompt_version,
                             verdict=found.verdict, kappa=kappa, finished_at=found.finished_at.isoformat(),
                             summary=summary)


def found_kappa(figures: Figures) -> tuple[float, tuple[float, float]] | None:
    """Kappa and its interval, when both were measured."""
    point, interval = figures.kappa.point, figures.kappa.ci95
    return None if point is None or interval is None else (point, (interval[0], interval[1]))


def _shown(result: Qualification) -> tuple[Figures, str]:
    held_out = result.by_split.get("held_out")
    if held_out is not None and held_out.items:
        return held_out, "held-out split"
    return result.overall, f"{result.split} items"


def _matches(result: Qualification, judge: str, model: str | None, prompt_version: str | None) -> bool:
    return (result.judge == judge and (model is None or result.model == model)
            and (prompt_version is None or result.prompt_version == prompt_version))
