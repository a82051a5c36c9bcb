"""Turn buckets of a conversation: the bounded groups that the report's breakdowns and the Prometheus series put a
turn in (a turn index itself is unbounded)."""

from __future__ import annotations

from typing import Literal

TurnBucket = Literal["first", "follow_up", "unknown"]
TURN_BUCKETS: tuple[TurnBucket, ...] = ("first", "follow_up", "unknown")
"""`first`: turn 0, the opening question; `follow_up`: any later turn; `unknown`: a turn of a session posted without
its `turn` index. The `turn` label of ragpulse_session_turns_judged_total and the keys of the report's `by_turn`."""

TURN_INDEX_BUCKETS = ("0", "1", "2", "3+")
"""The finer buckets of the report's per-turn rates (`sessions.hallucination_by_turn`, `abstention_by_turn`)."""


def turn_bucket(turn: int | None) -> TurnBucket:
    """The bucket of a session's turn index."""
    if turn is None:
        return "unknown"
    return "first" if turn == 0 else "follow_up"


def turn_index_bucket(turn: int) -> str:
    """The report's finer bucket of a turn index: 0, 1, 2 or 3+."""
    return str(turn) if turn < 3 else "3+"
