"""What the judge is handed: a trace's answer and documents cut at configured sizes, and a record of the cut.

A 30 MB trace (1,000 documents of 30 KB) or a 1 MiB answer would hold a worker for seconds to minutes and an LLM
judge's context past its limit. The judge sees at most RAGPULSE_JUDGE_MAX_ANSWER_CHARS of the answer,
RAGPULSE_JUDGE_MAX_DOC_CHARS of each document and RAGPULSE_JUDGE_MAX_CONTEXT_CHARS of all documents together (in
rank order; documents past that reach it empty, keeping their id and rank). Nothing is cut silently: the result
lists what was cut (`judge_input_truncated`), /metrics counts it (ragpulse_judge_input_truncated_total) and the
report counts the traces. Retrieval metrics never need the text and are computed on the whole trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from ragpulse.config import defaults
from ragpulse.model.results import TRUNCATED_ANSWER, TRUNCATED_DOCUMENTS
from ragpulse.model.trace import Trace

if TYPE_CHECKING:
    from ragpulse.config.settings import Settings


@dataclass(frozen=True)
class JudgeInputLimits:
    """Characters of a trace the judge sees (settings.judge_max_*_chars)."""

    answer_chars: int = defaults.JUDGE_MAX_ANSWER_CHARS
    doc_chars: int = defaults.JUDGE_MAX_DOC_CHARS
    context_chars: int = defaults.JUDGE_MAX_CONTEXT_CHARS

    @classmethod
    def from_settings(cls, settings: Settings) -> JudgeInputLimits:
        """The limits RAGPULSE_JUDGE_MAX_ANSWER_CHARS, _DOC_CHARS and _CONTEXT_CHARS set."""
        return cls(settings.judge_max_answer_chars, settings.judge_max_doc_chars, settings.judge_max_context_chars)


def for_judging(trace: Trace, limits: JudgeInputLimits) -> tuple[Trace, list[str]]:
    """The trace as the judge sees it, and what was cut (`answer`, `documents`; empty: the trace itself)."""
    cut: list[str] = []
    answer = trace.answer
    if answer is not None and len(answer) > limits.answer_chars:
        answer = _cut(answer, limits.answer_chars)
        cut.append(TRUNCATED_ANSWER)
    docs, budget, docs_cut = [], limits.context_chars, False
    for doc in trace.retrieved_docs:
        if doc.text is not None and len(doc.text) > min(limits.doc_chars, budget):
            doc = msgspec.structs.replace(doc, text=_cut(doc.text, min(limits.doc_chars, budget)))
            docs_cut = True
        budget -= len(doc.text or "")
        docs.append(doc)
    if docs_cut:
        cut.append(TRUNCATED_DOCUMENTS)
    if not cut:
        return trace, cut
    return msgspec.structs.replace(trace, answer=answer, retrieved_docs=docs), cut


def _cut(text: str, chars: int) -> str:
    """At most `chars` characters of `text`, ending at a space when one is in the last fifth (no half word)."""
    kept = text[:chars]
    space = kept.rfind(" ", chars - chars // 5)
    return kept[:space] if space > 0 else kept
