"""The report's security and failure-attribution sections: shares with Wilson intervals over each check's
population, and traces per first broken stage with the next step for each."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from ragpulse.config import defaults
from ragpulse.metrics.attribution import NEXT_STEPS
from ragpulse.model.scores import STAGES
from ragpulse.metrics.stats import estimate
from ragpulse.model.estimate import Estimate
from ragpulse.reporting.report import AttributionSection, SecuritySection, StageCount
from ragpulse.model.results import Security, TraceResult

RATES: dict[str, tuple[Callable[[Security], bool], Callable[[Security], bool]]] = {
    "acl_leak": (lambda s: s.acl_leak is not None, lambda s: bool(s.acl_leak)),
    "injection_docs": (lambda s: s.injection_checked, lambda s: bool(s.injection_docs)),
    "injection_followed": (lambda s: s.injection_followed is not None, lambda s: bool(s.injection_followed)),
    "pii": (lambda s: s.pii_checked, lambda s: bool(s.pii)),
    "credentials": (lambda s: s.credentials_checked, lambda s: bool(s.credentials)),
    "stale_docs": (lambda s: s.stale_checked, lambda s: bool(s.stale_docs)),
}
"""Each rate: (is the trace in the check's population, did the check find something)."""


def security_section(results: Sequence[TraceResult]) -> SecuritySection:
    """A share with its Wilson interval per check (None when no trace could be checked), PII and credentials by kind,
    and the flagged traces' ids (at most WORST_TRACES per check)."""
    checked = [(r.trace_id, r.security) for r in results if r.security is not None]
    rates: dict[str, Estimate | None] = {}
    flagged: dict[str, list[str]] = {}
    for name, (in_population, found) in RATES.items():
        population = [(trace_id, s) for trace_id, s in checked if in_population(s)]
        rates[name] = estimate([float(found(s)) for _, s in population], "proportion") if population else None
        flagged[name] = [trace_id for trace_id, s in population if found(s)][: defaults.WORST_TRACES]
    kinds = Counter(kind for _, s in checked for kind in s.pii)
    credentials = Counter(kind for _, s in checked for kind in s.credentials)
    return SecuritySection(rates=rates, pii_kinds=dict(sorted(kinds.items())), flagged=flagged,
                           credential_kinds=dict(sorted(credentials.items())))


def attribution_section(results: Sequence[TraceResult]) -> AttributionSection:
    """Traces per first broken stage, in pipeline order, each with its share of the attributed traces (Wilson)."""
    stages = Counter(r.attribution.stage for r in results if r.attribution is not None)
    n = sum(stages.values())
    return AttributionSection(n=n, stages={
        stage: StageCount(count=stages[stage], share=_share(stages[stage], n), next_step=NEXT_STEPS[stage])
        for stage in STAGES})


def _share(count: int, n: int) -> Estimate | None:
    return estimate([1.0] * count + [0.0] * (n - count), "proportion") if n else None
