"""Judge agreement per app, judge and prompt version (GET /v1/apps/{app}/agreement): the weighted 2x2 figures of
metrics.correction over the app's labelled traces, with how many labels, how old, and how far reviewers agree.

Each labelled content counts once, however many jobs re-ran it (`appearances` says how many traces that is), with
its reviewers' majority (labels.traces); ties are left out and counted as
`disputed`. A pair's weight is 1 / the trace's inclusion probability and `uniform` says it came from the uniform
pool; traces the review design did not pick (`ad_hoc`) have no known probability and are left out, counted.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence

from ragpulse.labels import annotators
from ragpulse.labels.store import epoch
from ragpulse.labels.traces import LabelledTrace, by_judge
from ragpulse.metrics.correction import judge_agreement
from ragpulse.model.agreement import LabelledPair
from ragpulse.model.labels import AppAgreement, JudgeVersionAgreement, Label


def pairs(traces: Sequence[LabelledTrace]) -> list[LabelledPair]:
    """The weighted pairs of the traces with a majority call and a known inclusion probability."""
    return [LabelledPair(judge=t.judge_hallucinated, human=t.human, weight=1 / t.inclusion_probability,
                         uniform=t.sample == "uniform", appearances=t.appearances)
            for t in traces if t.human is not None and t.inclusion_probability]


def app_agreement(app: str, traces: Sequence[Sequence[Label]], current: Mapping[str, str],
                  window_days: int, appearances: Mapping[str, int] | None = None) -> AppAgreement:
    """The app's agreement figures, one entry per (judge, prompt version), the versions in use now first."""
    groups = by_judge(traces, appearances)
    entries = [_entry(judge, version, group, current.get(judge) == version)
               for (judge, version), group in groups.items()]
    entries.sort(key=lambda e: (not e.current, e.judge, -epoch(e.newest_label_at)))
    return AppAgreement(app=app, window_days=window_days, judges=entries)


def _entry(judge: str, version: str, group: list[LabelledTrace], current: bool) -> JudgeVersionAgreement:
    return JudgeVersionAgreement(
        judge=judge, prompt_version=version, current=current, agreement=judge_agreement(pairs(group)),
        labels=sum(len(t.labels) for t in group), traces=len(group),
        disputed=sum(t.human is None for t in group),
        ad_hoc=sum(t.inclusion_probability is None and t.human is not None for t in group),
        appearances=sum(t.appearances for t in group),
        oldest_label_at=_iso(min(t.oldest for t in group)), newest_label_at=_iso(max(t.newest for t in group)),
        inter_annotator=annotators.across([t.labels for t in group]))


def _iso(epoch: float) -> str:
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")
