"""The report's conversation figures: per-session hallucination, turns to the first hallucination, and the per-turn
hallucination and abstention rates, over the traces that carry a `session_id`.

Populations follow the per-trace metrics: a turn counts for hallucination when it is in hallucination_rate's
population (judged, made claims), for abstention when it was judged. A session is (app, session_id)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from ragpulse.metrics.registry import GENERATION_BY_NAME
from ragpulse.metrics.stats import estimate
from ragpulse.model.estimate import Estimate
from ragpulse.model.results import TraceResult
from ragpulse.model.turns import TURN_INDEX_BUCKETS, turn_index_bucket
from ragpulse.reporting.report import SessionsSection

_HALLUCINATED = GENERATION_BY_NAME["hallucination_rate"].per_trace


def sessions_section(results: Sequence[TraceResult]) -> SessionsSection | None:
    """The conversation figures of a job; None when no trace names a session."""
    sessions = _sessions(results)
    if not sessions:
        return None
    per_session: list[float] = []
    first_at: list[int] = []
    for turns in sessions.values():
        flags = [(position, _HALLUCINATED(r)) for position, r in turns]
        scored = [(position, value) for position, value in flags if value is not None]
        if not scored:
            continue
        per_session.append(max(value for _, value in scored))
        first = next((position for position, value in scored if value == 1.0), None)
        if first is not None:
            first_at.append(first)
    positions = [(position, r) for turns in sessions.values() for position, r in turns]
    turn_range = (float(min(p for p, _ in positions)), float(max(p for p, _ in positions)))
    return SessionsSection(
        n_sessions=len(sessions),
        n_turns=len(positions),
        session_hallucination_rate=_rate(per_session),
        turns_to_first_hallucination=estimate([float(p) for p in first_at], "mean", turn_range) if first_at else None,
        first_hallucination_at=_counted(first_at),
        hallucination_by_turn=_by_turn(positions, lambda r: _HALLUCINATED(r)),
        abstention_by_turn=_by_turn(positions, lambda r: None if r.generation is None
                                    else float(r.generation.abstained)),
    )


def _sessions(results: Sequence[TraceResult]) -> dict[tuple[str, str], list[tuple[int, TraceResult]]]:
    """Each session's evaluated turns in order, with their 1-based position: the turn index + 1 where the app gave
    it, else the trace's place among the session's traces in the job."""
    grouped: dict[tuple[str, str], list[TraceResult]] = defaultdict(list)
    for result in results:
        if result.session_id is not None and result.status != "failed":
            grouped[(result.app, result.session_id)].append(result)
    ordered = {}
    for key, turns in grouped.items():
        turns.sort(key=lambda r: (r.turn is None, r.turn or 0, r.index))
        ordered[key] = [(r.turn + 1 if r.turn is not None else rank + 1, r) for rank, r in enumerate(turns)]
    return ordered


def _rate(values: list[float]) -> Estimate | None:
    return estimate(values, "proportion") if values else None


def _counted(first_at: list[int]) -> dict[str, int]:
    counts = dict.fromkeys(TURN_INDEX_BUCKETS, 0)
    for position in first_at:
        counts[turn_index_bucket(position - 1)] += 1
    return {bucket: n for bucket, n in counts.items() if n}


def _by_turn(positions: list[tuple[int, TraceResult]],
             value_of: Callable[[TraceResult], float | None]) -> dict[str, Estimate]:
    columns: dict[str, list[float]] = defaultdict(list)
    for position, result in positions:
        value = value_of(result)
        if value is not None:
            columns[turn_index_bucket(position - 1)].append(value)
    return {bucket: estimate(columns[bucket], "proportion") for bucket in TURN_INDEX_BUCKETS if columns[bucket]}
