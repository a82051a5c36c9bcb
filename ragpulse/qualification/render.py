"""The text of a qualification: the verdict and its reasons, a table per split and per failure class, the misses."""

from __future__ import annotations

from ragpulse.qualification.model import Figure, Figures, Qualification

MISSES_SHOWN = 20
"""Misses listed in the text (the JSON result keeps them all)."""


def cell(figure: Figure) -> str:
    """`0.71 [0.63, 0.78]`, or `n/a`."""
    if figure.point is None:
        return "n/a"
    if figure.ci95 is None:
        return f"{figure.point:.2f}"
    return f"{figure.point:.2f} [{figure.ci95[0]:.2f}, {figure.ci95[1]:.2f}]"


def row(name: str, f: Figures) -> str:
    return (f"  {name:<31} {f.items:>5} {f.errors:>6}  {cell(f.accuracy):<19} {cell(f.sensitivity):<19} "
            f"{cell(f.specificity):<19} {cell(f.kappa)}")


HEADER = (f"  {'':<31} {'items':>5} {'errors':>6}  {'accuracy':<19} {'sensitivity':<19} {'specificity':<19} kappa")


def summary(q: Qualification) -> str:
    """One line for a report or a page: `qualified on the shipped suite: kappa 0.71 [0.63, 0.78], 2026-12-08`."""
    when = q.finished_at.date().isoformat()
    if q.verdict == "qualified":
        return f"qualified on the shipped suite: kappa {cell(q.overall.kappa)}, {when}"
    return f"not qualified on the shipped suite (kappa {cell(q.overall.kappa)}, {when})"


def render(q: Qualification) -> str:
    """The whole text, as `ragpulse judge qualify` prints it."""
    lines = [f"JUDGE QUALIFICATION: {q.judge} (model {q.model or 'n/a'}, prompt {q.prompt_version}, suite "
             f"{q.suite_version}, split {q.split})"]
    if q.heuristic:
        lines.append("  an offline heuristic, not an LLM: these figures say how it fits the suite's own phrasings")
    lines += ["", "BY SPLIT", HEADER, row("all", q.overall)]
    lines += [row(name, f) for name, f in q.by_split.items()]
    lines += ["", "BY FAILURE CLASS (hallucinated: sensitivity; faithful: specificity)", HEADER]
    lines += [row(name, f) for name, f in q.by_class.items()]
    if q.misses:
        lines += ["", f"MISSES ({len(q.misses)}, first {min(MISSES_SHOWN, len(q.misses))})"]
        for miss in q.misses[:MISSES_SHOWN]:
            said = "error: " + (miss.error or "") if miss.judged is None else \
                ("hallucinated" if miss.judged else "faithful")
            lines.append(f"  {miss.id} ({miss.failure_class}, {miss.split}): labelled "
                         f"{'hallucinated' if miss.label else 'faithful'}, judged {said}")
    lines += ["", f"VERDICT: {q.verdict.replace('_', ' ')}"]
    lines += [f"  - {reason}" for reason in q.reasons]
    return "\n".join(lines)
