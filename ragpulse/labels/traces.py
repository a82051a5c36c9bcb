"""One labelled trace as agreement figures count it: the reviewers' majority call beside the judge's.

A trace with several reviewers counts once, with their majority; a tie is left out of every figure and counted as
disputed. Its judge, prompt version, sample and inclusion probability are its newest label's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragpulse.labels.annotators import majority
from ragpulse.labels.store import epoch
from ragpulse.model.labels import Label, SampleKind


@dataclass(frozen=True)
class LabelledTrace:
    """A labelled trace reduced to what agreement needs."""

    judge: str
    prompt_version: str
    judge_hallucinated: bool
    human: bool | None
    """The reviewers' majority on hallucinated; None when they tie (disputed)."""
    sample: SampleKind
    inclusion_probability: float | None
    oldest: float
    newest: float
    """Unix times of its oldest and newest label."""
    labels: tuple[Label, ...]
    unanswerable: bool = False
    """In the unanswerable-hallucination rate's population (its newest label says so)."""
    answered: bool = True
    """In the hallucination rate's population: the judged answer made claims (its newest label says so; a label stored
    before the field counts as answered, as it did)."""


def reduce(labels: Sequence[Label]) -> LabelledTrace:
    """A trace's labels (oldest first) as one LabelledTrace."""
    last = labels[-1]
    return LabelledTrace(judge=last.judge, prompt_version=last.prompt_version,
                         judge_hallucinated=last.judge_hallucinated, human=majority(labels), sample=last.sample,
                         inclusion_probability=last.inclusion_probability, oldest=epoch(labels[0].labelled_at),
                         newest=epoch(last.labelled_at), labels=tuple(labels),
                         unanswerable=bool(last.unanswerable), answered=last.answered is not False)


def by_judge(traces: Iterable[Sequence[Label]]) -> dict[tuple[str, str], list[LabelledTrace]]:
    """Labelled traces grouped by (judge, prompt version)."""
    groups: dict[tuple[str, str], list[LabelledTrace]] = {}
    for labels in traces:
        trace = reduce(labels)
        groups.setdefault((trace.judge, trace.prompt_version), []).append(trace)
    return groups
