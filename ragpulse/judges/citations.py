"""Inline citation markers attached to the claims they cite, for any judge's output.

A marker cites for the sentence it stands in or right after: it goes to the claims whose sentence (the LLM judge's
`Claim.sentence`, else the claim's own text, which is the sentence for the offline judge) is the last one starting
at or before the marker. Each claim then carries the retrieved documents its markers name (`cited`) and the labels
that name none (`cited_unknown`); ragpulse.metrics.generation.citation_problems checks that each cited document
supports the claim.
"""

from __future__ import annotations

from ragpulse.judges.markers import resolve
from ragpulse.judges.spans import AnswerText, answer_text
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import Claim, JudgeOutput


def attach_citations(output: JudgeOutput, trace: Trace) -> JudgeOutput:
    """`output` with each claim's `cited` and `cited_unknown` set from the answer's markers (unchanged without any)."""
    answer = answer_text(trace.answer or "")
    if not answer.markers or not output.claims:
        return output
    starts = _claim_starts(output.claims, answer)
    doc_ids = [doc.id for doc in trace.retrieved_docs]
    for placed in answer.markers:
        owners = _owners(starts, placed.offset)
        for label in placed.marker.labels:
            doc_id = resolve(label, doc_ids)
            for claim in owners:
                target = claim.cited if doc_id is not None else claim.cited_unknown
                value = doc_id if doc_id is not None else label
                if value not in target:
                    target.append(value)
    return output


def _claim_starts(claims: list[Claim], answer: AnswerText) -> list[tuple[int, Claim]]:
    """(offset in the marker-free answer where the claim's sentence starts, claim) for each claim found there."""
    starts, position = [], 0
    for claim in claims:
        span = answer.locate(claim.sentence or claim.text, position)
        if span is not None:
            starts.append((span[0], claim))
            position = span[0]
    return starts


def _owners(starts: list[tuple[int, Claim]], offset: int) -> list[Claim]:
    """The claims of the last sentence starting at or before `offset` (a marker opening the answer: the first)."""
    before = [start for start, _ in starts if start <= offset]
    chosen = max(before) if before else min((start for start, _ in starts), default=None)
    return [claim for start, claim in starts if start == chosen]
