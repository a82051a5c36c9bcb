"""Write and check the candidates of one generation request: the LLM passes, the local duplicate check, the items.

1. Write: one call per planned candidate (plan.plan): a question and reference answer from its chunk or pair, or an
   unanswerable question near its topic window.
2. Duplicates: in plan order, a question equal to an earlier one once normalized, or a near-duplicate of it
   (dedupe.duplicate_of), is rejected without further calls.
3. Check, per answerable candidate: a closed-book call answers the question with no passage, then a verify call reads
   the passages, the question, the reference and the closed-book answer: rejected `not_answered_by_passage` when the
   passages do not answer it, else `general_knowledge` when the closed-book answer was correct. An unanswerable
   candidate gets the verify call alone: rejected `answered_by_corpus` when its passages answer it.
A call that fails (after the judge's retries and one repair) is a GenerationFailure: counted, listed, and no item.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ragpulse.exceptions import BudgetSpent, JudgeAuthError, JudgeError, JudgeNotConfigured
from ragpulse.generation import prompts
from ragpulse.generation.assign import item_id, split_of
from ragpulse.generation.dedupe import SeenQuestions
from ragpulse.generation.outputs import ClosedBook, Verdict, Written, WrittenUnanswerable
from ragpulse.generation.plan import Candidate, plan
from ragpulse.judges.task import ToolTask
from ragpulse.model.dataset import DatasetItem
from ragpulse.model.generation import GenerateRequest, GenerationFailure, GenerationReject

log = logging.getLogger("ragpulse.generation")
T = TypeVar("T")
Ask = Callable[[ToolTask, str, type[T]], Awaitable[T]]
"""Sends one structured call of a task with this user message; answers its output decoded as the given type, or
raises JudgeError (ragpulse.generation.llm builds it on the judge's client)."""
Budget = Callable[[], Awaitable[str | None]]
"""Which budget ran out before the next call, or None."""


@dataclass
class Proposal:
    """A written candidate on its way through the checks (not yet an item of the draft version)."""

    candidate: Candidate
    question: str
    answer: str | None
    key_facts: list[str]


@dataclass
class Outcome:
    """What a generation made: the kept items, the rejects with reasons, the failed calls, and what was planned."""

    items: list[DatasetItem] = field(default_factory=list)
    rejects: list[GenerationReject] = field(default_factory=list)
    failures: list[GenerationFailure] = field(default_factory=list)
    planned: dict[str, int] = field(default_factory=dict)

    def rejected_by_reason(self) -> dict[str, int]:
        return dict(Counter(reject.reason for reject in self.rejects))

    def kept(self) -> dict[str, int]:
        return dict(Counter(item.question_type or "unspecified" for item in self.items))


class Generation:
    """One request's generation: at most `concurrency` calls in flight."""

    def __init__(self, request: GenerateRequest, ask: Ask, budget: Budget, concurrency: int,
                 metadata: dict[str, str]) -> None:
        self.request, self._ask, self.budget, self.metadata = request, ask, budget, metadata
        self.bound = asyncio.Semaphore(concurrency)
        self.outcome = Outcome()

    async def run(self) -> Outcome:
        """Write every planned candidate, drop duplicates, check the rest, and make items of those kept."""
        candidates = plan(self.request)
        self.outcome.planned = dict(Counter(c.question_type for c in candidates))
        written = await asyncio.gather(*(self._write(c) for c in candidates))
        fresh = self._without_duplicates([d for d in written if d is not None])
        checked = await asyncio.gather(*(self._check(d) for d in fresh))
        self.outcome.items = [self._item(d) for d, keep in zip(fresh, checked) if keep]
        return self.outcome

    async def _call(self, stage: str, candidate: Candidate, task: ToolTask, message: str, kind: type[T]) -> T | None:
        """One call, bounded; a failure (or a spent budget) is recorded and answers None. A credentials error ends
        the whole generation: every later call would fail the same way."""
        async with self.bound:
            spent = await self.budget()
            if spent is not None:
                return self._failed(stage, candidate, f"not sent: {spent}")
            try:
                return await self._ask(task, message, kind)
            except (JudgeAuthError, JudgeNotConfigured):
                raise
            except BudgetSpent as exc:
                return self._failed(stage, candidate, f"not sent: {exc.reason}")
            except JudgeError as exc:
                return self._failed(stage, candidate, f"{type(exc).__name__}: {exc.reason}")
            except Exception as exc:  # noqa: BLE001 - one failed call is data; the job goes on
                log.exception("generation call failed")
                return self._failed(stage, candidate, f"{type(exc).__name__}: {exc}")

    def _failed(self, stage: str, candidate: Candidate, error: str) -> None:
        self.outcome.failures.append(GenerationFailure(
            stage=stage, question_type=candidate.question_type,  # type: ignore[arg-type]
            chunk_ids=candidate.chunk_ids, error=error))

    async def _write(self, candidate: Candidate) -> Proposal | None:
        kind, chunks = candidate.question_type, candidate.chunks
        if kind == "unanswerable":
            made = await self._call("write", candidate, prompts.WRITE_UNANSWERABLE,
                                    prompts.write_message(kind, chunks), WrittenUnanswerable)
            return None if made is None else Proposal(candidate, made.question, None, [])
        task = prompts.WRITE_MULTI_HOP if kind == "multi_hop" else prompts.WRITE
        written = await self._call("write", candidate, task, prompts.write_message(kind, chunks), Written)
        return None if written is None else Proposal(candidate, written.question, written.answer, written.key_facts)

    def _without_duplicates(self, proposals: list[Proposal]) -> list[Proposal]:
        kept: list[Proposal] = []
        seen = SeenQuestions()
        for proposal in proposals:
            earlier = seen.duplicate_of(proposal.question)
            if earlier is None:
                kept.append(proposal)
                seen.keep(proposal.question)
            else:
                self._reject(proposal, "duplicate", f"duplicates {earlier!r}")
        return kept

    async def _check(self, proposal: Proposal) -> bool:
        chunks, candidate = proposal.candidate.chunks, proposal.candidate
        closed = None
        if proposal.answer is not None:
            book = await self._call("closed_book", candidate, prompts.CLOSED_BOOK,
                                    prompts.closed_book_message(proposal.question), ClosedBook)
            if book is None:
                return False
            closed = book.answer
        verdict = await self._call("verify", candidate, prompts.VERIFY,
                                   prompts.verify_message(proposal.question, chunks, proposal.answer, closed), Verdict)
        if verdict is None:
            return False
        reason = _rejected(proposal, verdict, closed)
        if reason is not None:
            self._reject(proposal, reason, verdict.reason)
        return reason is None

    def _reject(self, proposal: Proposal, reason: str, detail: str) -> None:
        self.outcome.rejects.append(GenerationReject(
            reason=reason, question_type=proposal.candidate.question_type,  # type: ignore[arg-type]
            question=proposal.question, chunk_ids=proposal.candidate.chunk_ids, detail=detail))

    def _item(self, proposal: Proposal) -> DatasetItem:
        kind, chunks = proposal.candidate.question_type, proposal.candidate.chunks
        identity = item_id(kind, proposal.question)
        answerable = proposal.answer is not None
        metadata: dict[str, Any] = dict(self.metadata)
        if not answerable:
            metadata["near_chunk_ids"] = ",".join(proposal.candidate.chunk_ids)
        return DatasetItem(
            item_id=identity, query=proposal.question, answerable=answerable,
            question_type=kind,  # type: ignore[arg-type]
            gold_doc_ids=list(dict.fromkeys(c.doc_id for c in chunks)) if answerable else None,
            gold_chunk_ids=[c.chunk_id for c in chunks] if answerable else None,
            reference_answer=proposal.answer, key_facts=proposal.key_facts or None, source="synthetic",
            split=split_of(identity, self.request.test_fraction), metadata=metadata)  # type: ignore[arg-type]


def _rejected(proposal: Proposal, verdict: Verdict, closed_book: str | None) -> str | None:
    """The reject reason of a checked proposal, or None to keep it."""
    if proposal.answer is None:
        return "answered_by_corpus" if verdict.passage_answers else None
    if not verdict.passage_answers:
        return "not_answered_by_passage"
    if closed_book is not None and verdict.closed_book_correct:
        return "general_knowledge"
    return None
