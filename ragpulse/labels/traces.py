"""One labelled content as agreement figures count it: the reviewers' majority call beside the judge's.

A judged content counts once however many jobs re-ran it (its `appearances` say how many) and however many reviewers
labelled it, with their majority; a tie is left out of every figure and counted as disputed. Its judge and prompt
version are its newest label's. It is in the uniform estimation sample when any of its labels says so: whether a
content lies in the uniform pool is fixed by its draw and its share as first judged, not by the path that brought a
reviewer to it, so a label taken as a targeted pick (or stored under a share since changed) does not keep it out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
    content_key: str | None = None
    appearances: int = 1
    """Judged traces (jobs, online) known to hold this content."""


def reduce(labels: Sequence[Label], appearances: int = 1) -> LabelledTrace:
    """A content's labels (oldest first) as one LabelledTrace."""
    last = labels[-1]
    placed = next((label for label in reversed(labels) if label.sample == "uniform"), last)
    return LabelledTrace(judge=last.judge, prompt_version=last.prompt_version,
                         judge_hallucinated=last.judge_hallucinated, human=majority(labels), sample=placed.sample,
                         inclusion_probability=placed.inclusion_probability, oldest=epoch(labels[0].labelled_at),
                         newest=epoch(last.labelled_at), labels=tuple(labels),
                         unanswerable=bool(last.unanswerable), answered=last.answered is not False,
                         content_key=last.content_key, appearances=max(1, appearances))


def by_judge(traces: Iterable[Sequence[Label]], appearances: Mapping[str, int] | None = None
             ) -> dict[tuple[str, str], list[LabelledTrace]]:
    """Labelled contents grouped by (judge, prompt version); `appearances`: content key -> judged traces holding it."""
    groups: dict[tuple[str, str], list[LabelledTrace]] = {}
    for labels in traces:
        key = labels[-1].content_key
        trace = reduce(labels, (appearances or {}).get(key, 1) if key else 1)
        groups.setdefault((trace.judge, trace.prompt_version), []).append(trace)
    return groups
