"""Match two jobs' traces for a paired comparison: by dataset item, else by `trace_id`, else (traces posted without
one) by query text."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ragpulse.model.results import TraceResult


@dataclass(frozen=True)
class Pairing:
    """The matched (baseline, candidate) pairs in candidate order, and what matched nothing."""

    pairs: list[tuple[TraceResult, TraceResult]]
    only_in_baseline: int
    only_in_candidate: int


def match_key(result: TraceResult) -> str:
    """`item:<item_id>` for a trace naming a dataset item, else `id:<trace_id>` for a trace posted with an id,
    `q:<query hash>` for one posted without."""
    if result.item_id is not None:
        return f"item:{result.item_id}"
    return f"q:{result.query_hash}" if result.query_hash else f"id:{result.trace_id}"


def pair_results(baseline: Sequence[TraceResult], candidate: Sequence[TraceResult]) -> Pairing:
    """Pair traces with the same key; a key repeated within a job pairs its occurrences in order."""
    waiting: dict[str, list[TraceResult]] = defaultdict(list)
    for result in sorted(baseline, key=lambda r: r.index, reverse=True):
        waiting[match_key(result)].append(result)  # reversed, so pop() yields the first occurrence
    pairs = []
    unmatched = 0
    for result in sorted(candidate, key=lambda r: r.index):
        queue = waiting.get(match_key(result))
        if queue:
            pairs.append((queue.pop(), result))
        else:
            unmatched += 1
    return Pairing(pairs=pairs, only_in_baseline=sum(len(q) for q in waiting.values()), only_in_candidate=unmatched)
