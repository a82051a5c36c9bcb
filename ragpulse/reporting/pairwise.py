"""The pairwise section: which matched items are sent to the judge, and what their verdicts add up to (win rate and
position consistency with Wilson intervals, a sign test, the failures listed)."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

from ragpulse.config import defaults
from ragpulse.metrics.stats import mcnemar_exact, wilson_interval
from ragpulse.model.pairwise import PairFailure, Pairwise, PairVerdict
from ragpulse.model.results import TraceResult
from ragpulse.reporting.pairing import match_key

Pair = tuple[TraceResult, TraceResult]
METHOD = ("each matched item asked twice, the candidate's answer as ANSWER 1 then as ANSWER 2, both against the "
          "documents either run retrieved and the reference; an item's outcome is the winner both orders name, a tie "
          "when they disagree; win_rate = (wins + ties / 2) / (judged + identical) with a Wilson 95% interval (ties "
          "counting half); position_consistency = items whose two orders agree / judged, Wilson 95% interval; "
          "p_value: two-sided exact sign test of wins against losses, ties left out; identical answers are ties "
          "without a judge call; failed items have no outcome and are left out of every rate")
FAILURES_SHOWN = defaults.COMPARE_REGRESSIONS_MAX
"""Failed items listed with their reasons (all are counted)."""


def choose(pairs: Sequence[Pair], limit: int) -> tuple[list[Pair], int]:
    """The pairs to judge, at most `limit`, and how many are left over. Over the limit, the pairs whose match key
    hashes lowest: the same pairs every time, and neither the first nor the last of the file."""
    if len(pairs) <= limit:
        return list(pairs), 0
    ranked = sorted(pairs, key=lambda pair: hashlib.sha256(match_key(pair[1]).encode()).digest())
    chosen = sorted(ranked[:limit], key=lambda pair: pair[1].index)
    return chosen, len(pairs) - limit


def summarize(base: Pairwise, verdicts: Sequence[PairVerdict], identical: int,
              failures: Sequence[PairFailure]) -> Pairwise:
    """`base` (the run's judge, model, counts of what was not judged...) completed with the figures of `verdicts`,
    `identical` items and `failures`."""
    outcomes = Counter(v.outcome for v in verdicts)
    wins, losses = outcomes["candidate"], outcomes["baseline"]
    ties = outcomes["tie"] + identical
    decided = len(verdicts) + identical
    consistent = sum(v.consistent for v in verdicts)
    preferring = [order.preferred for v in verdicts for order in v.orders if order.preferred != "tie"]
    score = wins + ties / 2
    p_value = mcnemar_exact(losses, wins) if wins + losses else None
    better = None
    if p_value is not None and p_value < base.alpha:
        better = "candidate" if wins > losses else "baseline"
    base.judged, base.identical, base.wins, base.losses, base.ties = len(verdicts), identical, wins, losses, ties
    base.win_rate = score / decided if decided else None
    base.win_rate_ci95 = wilson_interval(score, decided) if decided else None
    base.consistent, base.inconsistent = consistent, len(verdicts) - consistent
    base.position_consistency = consistent / len(verdicts) if verdicts else None
    base.position_consistency_ci95 = wilson_interval(consistent, len(verdicts)) if verdicts else None
    base.first_position_rate = preferring.count("1") / len(preferring) if preferring else None
    base.p_value, base.better = p_value, better
    base.failed, base.failures = len(failures), list(failures[:FAILURES_SHOWN])
    base.pairs = list(verdicts)
    base.method = METHOD
    return base
