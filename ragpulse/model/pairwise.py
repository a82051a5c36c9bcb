"""Pairwise A/B judging of two jobs as typed structs: each matched item judged twice with the order swapped, and the
section GET /v1/jobs/{candidate}/compare?baseline=...&pairwise=true adds to the comparison."""

from __future__ import annotations

from typing import Literal

import msgspec

from ragpulse.model.results import Spend

Preferred = Literal["1", "2", "tie"]
Side = Literal["candidate", "baseline", "tie"]
PairwiseStatus = Literal["queued", "running", "finished", "failed"]
PAIRWISE_STATUSES: tuple[str, ...] = ("queued", "running", "finished", "failed")


class Struct(msgspec.Struct, kw_only=True):
    """Base of every pairwise struct."""


class OrderVerdict(Struct):
    """The judge's answer in one order."""

    candidate_position: Literal[1, 2]
    """Where the candidate's answer stood: ANSWER 1 or ANSWER 2."""
    preferred: Preferred
    """What the judge wrote: the position it preferred, or tie."""
    winner: Side
    """`preferred` read back through the order: which run's answer it preferred."""
    reasoning: str


class PairVerdict(Struct):
    """One matched item, judged in both orders."""

    trace_id: str
    candidate_index: int
    baseline_index: int
    orders: list[OrderVerdict]
    """Candidate first, then baseline first."""
    consistent: bool
    """Both orders named the same winner (or both a tie)."""
    outcome: Side
    """The agreed winner; a tie when the orders disagree (a verdict that flips with the order says nothing)."""


class PairFailure(Struct):
    """A matched item without an outcome, and why: counted and listed, never given a verdict."""

    trace_id: str
    candidate_index: int
    baseline_index: int
    reason: str


class PairwiseProgress(Struct):
    """Items of the run so far."""

    total: int
    """Items sent to the judge (each asked twice)."""
    done: int
    failed: int


class Pairwise(Struct):
    """Which run's answers the judge prefers over the matched items, position bias measured and cancelled."""

    status: PairwiseStatus
    judge: str
    model: str
    prompt_version: str
    matched: int
    """Items of the two jobs matched (by trace_id, else by query text), as in the comparison."""
    judged: int
    """Items with a verdict in both orders."""
    identical: int = 0
    """Items whose two answers are the same text: a tie without asking the judge (not in position_consistency)."""
    wins: int = 0
    """Items where both orders preferred the candidate."""
    losses: int = 0
    """Items where both orders preferred the baseline."""
    ties: int = 0
    """Items judged a tie in both orders, whose two orders disagreed, or whose answers are identical."""
    win_rate: float | None = None
    """(wins + ties / 2) / (judged + identical): the candidate's share; 0.5 is no difference. None with no item."""
    win_rate_ci95: tuple[float, float] | None = None
    """Wilson 95% interval of win_rate (ties counting half a win)."""
    consistent: int = 0
    inconsistent: int = 0
    """Items whose verdict flipped with the order: counted as ties."""
    position_consistency: float | None = None
    """consistent / judged: how often the two orders agree. Low means the verdicts follow the position, not the
    answers."""
    position_consistency_ci95: tuple[float, float] | None = None
    """Wilson 95% interval of position_consistency."""
    first_position_rate: float | None = None
    """Of the single verdicts that preferred an answer, the share that preferred ANSWER 1 (0.5 without position
    bias)."""
    p_value: float | None = None
    """Two-sided sign test (exact binomial) of wins against losses, ties left out; None with neither."""
    better: Literal["candidate", "baseline"] | None = None
    """The run the judge prefers when p_value < alpha; None when neither is."""
    alpha: float = 0.05
    failed: int = 0
    """Items with no outcome (a judge call failed after retries and its repair, or a budget ran out)."""
    failures: list[PairFailure] = []
    """The failed items with their reasons, at most 100."""
    not_judged: dict[str, int] = {}
    """Matched items not sent to the judge, by reason: `over_limit` (beyond RAGPULSE_PAIRWISE_MAX_PAIRS, chosen by a
    hash of their match key), `no_answer` (a side has no answer)."""
    pairs: list[PairVerdict] = []
    """Every judged item with both orders' verdicts and reasoning."""
    spend: Spend | None = None
    """The run's judge calls, tokens and cost (repairs and retries included)."""
    self_preference: dict[str, int] = {}
    """Judged items whose `candidate` or `baseline` answer the judge model itself generated (the traces'
    generator_model): a judge is too kind to its own answers, so a run written by it is favoured."""
    warnings: list[str] = []
    """Why these figures may mislead (self-preference); empty when nothing to say."""
    length_bias_control: str = ""
    """The length-bias instruction the judge was given, word for word."""
    position_bias_control: str = ""
    method: str = ""
    error: str | None = None
    """Why the run failed (credentials refused, no judge here); its items are not judged."""
    created_at: str | None = None
    finished_at: str | None = None


class PairwisePending(Struct):
    """GET /v1/jobs/{candidate}/compare?pairwise=true while the pairwise run is queued or running (202)."""

    candidate: str
    baseline: str
    judge: str
    status: PairwiseStatus
    progress: PairwiseProgress
    poll: str
    """The same URL: GET it again until it answers 200 with the comparison and its `pairwise` section."""
    detail: str = "the pairwise judging runs as a job; poll again"
