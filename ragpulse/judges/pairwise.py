"""Judge one matched item of two runs pairwise: the same item asked twice, the candidate's answer first and then
second, each verdict read back to the run it prefers; a verdict that flips with the order is a tie.

Asked once, a judge that prefers whatever stands first would hand every item to the run shown first: a false win.
Asked in both orders, its verdicts disagree on every item, the item is a tie, and the position consistency (how often
the two orders agree) shows the judge followed the position.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import msgspec

from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.judges.markers import cite_by_id
from ragpulse.judges.pairwise_prompt import Document, PairwiseItem, RecordPreference, comparison_message
from ragpulse.judges.structured import Reader, Reply
from ragpulse.model.pairwise import OrderVerdict, PairVerdict, Preferred, Side
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import JudgeCall

ORDERS: tuple[bool, bool] = (True, False)
"""Candidate first, then baseline first: every item is asked in both."""


class Asks(Protocol):
    """A judge that sends one structured task (StructuredJudge.ask)."""

    async def ask(self, turns: list[dict[str, Any]], read: Reader[Any]) -> tuple[Any, list[JudgeCall]]:
        ...


def item_from(candidate: Trace, baseline: Trace, limits: JudgeInputLimits) -> PairwiseItem:
    """The item both answers are judged on: the candidate's question and reference (the baseline's when the candidate
    has none), the documents either run retrieved (once each, by rank, then id), each answer's citation markers
    rewritten to the ids of the documents they name in its own ranking. Answers and documents are cut as the trace
    judge's are (RAGPULSE_JUDGE_MAX_*_CHARS), per run."""
    cut = [for_judging(trace, limits)[0] for trace in (candidate, baseline)]
    ranked: dict[tuple[str, str | None], tuple[int, Document]] = {}
    for trace in cut:
        for rank, doc in enumerate(trace.retrieved_docs, start=1):
            key = (doc.id, doc.chunk_id)
            updated = doc.updated_at.date().isoformat() if doc.updated_at is not None else None
            if key not in ranked or rank < ranked[key][0]:
                ranked[key] = (rank, Document(doc.id, doc.text or "", updated))
    documents = [doc for _, doc in sorted(ranked.values(), key=lambda entry: (entry[0], entry[1].id))]

    def answer(trace: Trace) -> str:
        return cite_by_id(trace.answer or "", [doc.id for doc in trace.retrieved_docs])

    return PairwiseItem(question=candidate.query, documents=documents,
                        reference=candidate.reference_answer or baseline.reference_answer,
                        candidate=answer(cut[0]), baseline=answer(cut[1]))


def read_preference(reply: Reply) -> tuple[RecordPreference | None, str | None]:
    """The validated record_preference output, or the problem to send back in the repair turn."""
    if reply.problem is not None:
        return None, reply.problem
    try:
        return msgspec.convert(reply.output, RecordPreference), None
    except msgspec.ValidationError as exc:
        return None, str(exc)


def winner(preferred: Preferred, candidate_first: bool) -> Side:
    """The run a verdict prefers, given where the candidate's answer stood."""
    if preferred == "tie":
        return "tie"
    return "candidate" if (preferred == "1") == candidate_first else "baseline"


def combine(orders: list[OrderVerdict]) -> tuple[bool, Side]:
    """(consistent, outcome): the orders' shared winner, or a tie when they disagree."""
    winners = {order.winner for order in orders}
    if len(winners) == 1:
        return True, orders[0].winner
    return False, "tie"


async def judge_both_orders(judge: Asks, item: PairwiseItem) -> tuple[list[OrderVerdict], list[JudgeCall]]:
    """Ask the judge about `item` in both orders at once; the two verdicts (candidate first, then second) and every
    call made. A JudgeError of either order propagates: the item has no outcome."""

    async def one(candidate_first: bool) -> tuple[OrderVerdict, list[JudgeCall]]:
        turns = [{"role": "user", "content": comparison_message(item, candidate_first)}]
        output, calls = await judge.ask(turns, read_preference)
        return OrderVerdict(candidate_position=1 if candidate_first else 2, preferred=output.preferred,
                            winner=winner(output.preferred, candidate_first), reasoning=output.reasoning), calls

    answers = await asyncio.gather(*(one(first) for first in ORDERS), return_exceptions=True)
    for answer in answers:   # both calls end before either's error is raised: no call is left running unowned
        if isinstance(answer, BaseException):
            raise answer
    done = [answer for answer in answers if not isinstance(answer, BaseException)]
    return [verdict for verdict, _ in done], [call for _, calls in done for call in calls]


def pair_verdict(trace_id: str, candidate_index: int, baseline_index: int, orders: list[OrderVerdict]) -> PairVerdict:
    """One item's verdict from its two orders."""
    consistent, outcome = combine(orders)
    return PairVerdict(trace_id=trace_id, candidate_index=candidate_index, baseline_index=baseline_index,
                       orders=orders, consistent=consistent, outcome=outcome)
