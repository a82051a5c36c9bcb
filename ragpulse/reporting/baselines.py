"""What a no-RAG or oracle baseline says about a RAG run (shared/DOMAIN.md, "Baselines").

An oracle run answers with the gold passages as context: the ceiling better retrieval could reach. Its faithfulness
minus the RAG run's is the oracle gap: under 0.05 retrieval is not the bottleneck (improve the generator); over 0.15
fix retrieval first. A no-RAG run answers without context: what the RAG run gains over it is what retrieval adds.
"""

from __future__ import annotations

from collections.abc import Mapping

from ragpulse.model.compare import Gap, MetricDelta, RunInfo

ORACLE_GAP_SMALL = 0.05
"""An oracle gap below this: retrieval is not the bottleneck."""
ORACLE_GAP_LARGE = 0.15
"""An oracle gap above this: fix retrieval first."""
ORACLE_METRIC = "faithfulness"
LIFT_METRICS = ("correctness", "answer_relevance")
"""What retrieval's lift over a no-RAG run is measured on, the first one both runs have (correctness needs
reference answers)."""


def baseline_gaps(baseline: RunInfo, candidate: RunInfo, generation: Mapping[str, MetricDelta]) -> dict[str, Gap]:
    """`oracle_gap` when one run is `oracle` and the other `rag`; `rag_lift` when one is `no_rag` and the other
    `rag`; neither otherwise (or when the metric has no paired values)."""
    variants = {baseline.variant, candidate.variant}
    if variants == {"oracle", "rag"} and ORACLE_METRIC in generation:
        gap = _oriented(generation[ORACLE_METRIC], high="oracle", candidate=candidate)
        return {"oracle_gap": Gap(metric=ORACLE_METRIC, value=gap[0], ci95=gap[1], n=generation[ORACLE_METRIC].n,
                                  meaning=_oracle_meaning(gap[0]))}
    if variants == {"no_rag", "rag"}:
        for name in LIFT_METRICS:
            if name in generation:
                lift = _oriented(generation[name], high="rag", candidate=candidate)
                return {"rag_lift": Gap(metric=name, value=lift[0], ci95=lift[1], n=generation[name].n,
                                        meaning=_lift_meaning(name, lift[1]))}
    return {}


def _oriented(delta: MetricDelta, high: str, candidate: RunInfo) -> tuple[float, tuple[float, float]]:
    """The paired difference as `high` run minus the other (the comparison's delta is candidate - baseline)."""
    if candidate.variant == high:
        return delta.delta, delta.ci95
    return -delta.delta, (-delta.ci95[1], -delta.ci95[0])


def _oracle_meaning(gap: float) -> str:
    if gap < ORACLE_GAP_SMALL:
        return (f"oracle gap {gap:.3f} < {ORACLE_GAP_SMALL}: better retrieval would add little; retrieval is not the "
                "bottleneck, improve the generator (prompt, model, context use)")
    if gap > ORACLE_GAP_LARGE:
        return (f"oracle gap {gap:.3f} > {ORACLE_GAP_LARGE}: answers would be much more grounded with the right "
                "passages; fix retrieval first")
    return (f"oracle gap {gap:.3f} between {ORACLE_GAP_SMALL} and {ORACLE_GAP_LARGE}: both retrieval and generation "
            "leave room")


def _lift_meaning(metric: str, interval: tuple[float, float]) -> str:
    if interval[0] > 0:
        return f"retrieval adds to {metric} (the interval is above 0)"
    if interval[1] < 0:
        return f"answers are worse on {metric} with retrieval than without: the context misleads the generator"
    return (f"no measurable lift on {metric} (the interval holds 0): check that retrieved passages are relevant "
            "and that the generator uses them")
