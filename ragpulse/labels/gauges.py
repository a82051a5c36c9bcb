"""The judge-agreement gauges' values (monitoring.catalog.AGREEMENT_GAUGES), read from the label store.

Label values stay in small fixed sets: `tenant` and `app` are the configured ones or `other` (as every per-app
family), `judge` a judging judge or `other`, `prompt_version` a version some judge of this deployment uses now or
`other` (labels of retired prompts), `sample` uniform | targeted | ad_hoc, `human` and `judge_verdict` hallucinated |
faithful, `answered` true | false (the judged answer made claims: the hallucination rate's population, whose labels
alone correct that rate, as labels.corrections does). Each labelled trace counts once, with its reviewers' majority (labels.traces); disputed traces are left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ragpulse.labels.store import LabelStore
from ragpulse.labels.traces import LabelledTrace, reduce
from ragpulse.monitoring.counters import OTHER

Series = tuple[str, ...]


def verdict(hallucinated: bool) -> str:
    return "hallucinated" if hallucinated else "faithful"


@dataclass
class AgreementSamples:
    """Samples of ragpulse_judge_agreement_labels (counts) and ragpulse_judge_labels_last_timestamp_seconds (last)."""

    counts: Counter[Series] = field(default_factory=Counter)
    last: dict[Series, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Bounds:
    """The label values the gauges may carry; anything else is `other`."""

    tenants: frozenset[str]
    apps: frozenset[str]
    current: Mapping[str, str]
    """Judge name -> the prompt version it uses now."""

    def series(self, tenant: str, app: str, trace: LabelledTrace) -> Series:
        judge = trace.judge if trace.judge in self.current else OTHER
        version = trace.prompt_version if trace.prompt_version in self.current.values() else OTHER
        return (tenant if tenant in self.tenants else OTHER, app if app in self.apps else OTHER, judge, version)


def read(store: LabelStore, bounds: Bounds, since: float) -> AgreementSamples:
    """Every labelled trace of every (tenant, app) with labels since `since`, counted into the gauges' series."""
    samples = AgreementSamples()
    for tenant, app in store.apps():
        add(samples, bounds, tenant, app, (reduce(labels) for labels in store.of_app(tenant, app, since)))
    return samples


def add(samples: AgreementSamples, bounds: Bounds, tenant: str, app: str, traces: Iterable[LabelledTrace]) -> None:
    """Count one app's labelled traces."""
    for trace in traces:
        series = bounds.series(tenant, app, trace)
        samples.last[series] = max(samples.last.get(series, 0.0), trace.newest)
        if trace.human is not None:
            samples.counts[(*series, trace.sample, verdict(trace.human), verdict(trace.judge_hallucinated),
                            "true" if trace.answered else "false")] += 1
