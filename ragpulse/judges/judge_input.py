"""What the judge is handed: a trace's answer and documents cut at configured sizes, and a record of the cut.

A 30 MB trace (1,000 documents of 30 KB) or a 1 MiB answer would hold a worker for seconds to minutes and an LLM
judge's context past its limit. The judge sees at most RAGPULSE_JUDGE_MAX_ANSWER_CHARS of the answer,
RAGPULSE_JUDGE_MAX_DOC_CHARS of each document and RAGPULSE_JUDGE_MAX_CONTEXT_CHARS of all documents together (in
rank order; documents past that reach it empty, keeping their id and rank). A conversation turn's history is cut to its
most recent RAGPULSE_JUDGE_MAX_HISTORY_TURNS turns and _HISTORY_CHARS characters (the oldest turn kept may lose its
start), and its session evidence to RAGPULSE_JUDGE_MAX_SESSION_EVIDENCE_CHARS in the order given (documents past
it are left out: they have no rank to keep). Nothing is cut silently: the result
lists what was cut (`judge_input_truncated`), /metrics counts it (ragpulse_judge_input_truncated_total) and the
report counts the traces. Retrieval metrics never need the text and are computed on the whole trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from ragpulse.config import defaults
from ragpulse.model.results import (
    TRUNCATED_ANSWER, TRUNCATED_DOCUMENTS, TRUNCATED_HISTORY, TRUNCATED_SESSION_EVIDENCE,
)
from ragpulse.model.trace import ChatTurn, RetrievedDoc, Trace

if TYPE_CHECKING:
    from ragpulse.config.settings import Settings


@dataclass(frozen=True)
class JudgeInputLimits:
    """Characters of a trace the judge sees (settings.judge_max_*_chars)."""

    answer_chars: int = defaults.JUDGE_MAX_ANSWER_CHARS
    doc_chars: int = defaults.JUDGE_MAX_DOC_CHARS
    context_chars: int = defaults.JUDGE_MAX_CONTEXT_CHARS
    history_turns: int = defaults.JUDGE_MAX_HISTORY_TURNS
    history_chars: int = defaults.JUDGE_MAX_HISTORY_CHARS
    session_evidence_chars: int = defaults.JUDGE_MAX_SESSION_EVIDENCE_CHARS

    @classmethod
    def from_settings(cls, settings: Settings) -> JudgeInputLimits:
        """The limits RAGPULSE_JUDGE_MAX_ANSWER_CHARS, _DOC_CHARS, _CONTEXT_CHARS, _HISTORY_TURNS, _HISTORY_CHARS and
        _SESSION_EVIDENCE_CHARS set."""
        return cls(settings.judge_max_answer_chars, settings.judge_max_doc_chars, settings.judge_max_context_chars,
                   settings.judge_max_history_turns, settings.judge_max_history_chars,
                   settings.judge_max_session_evidence_chars)


def for_judging(trace: Trace, limits: JudgeInputLimits) -> tuple[Trace, list[str]]:
    """The trace as the judge sees it, and what was cut (`answer`, `documents`, `history`, `session_evidence`; empty:
    the trace itself)."""
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
    history, history_cut = history_tail(trace.history, limits.history_turns, limits.history_chars)
    if history_cut:
        cut.append(TRUNCATED_HISTORY)
    evidence, evidence_cut = _bounded_evidence(trace.session_evidence, limits.doc_chars, limits.session_evidence_chars)
    if evidence_cut:
        cut.append(TRUNCATED_SESSION_EVIDENCE)
    if not cut:
        return trace, cut
    return msgspec.structs.replace(trace, answer=answer, retrieved_docs=docs, history=history,
                                   session_evidence=evidence), cut


def history_tail(history: list[ChatTurn] | None, turns: int, chars: int) -> tuple[list[ChatTurn] | None, bool]:
    """The most recent `turns` turns holding at most `chars` characters together (the oldest kept cut at its start,
    marked with "…"), and whether anything was left out."""
    if not history:
        return history, False
    kept: list[ChatTurn] = []
    budget, cut = chars, len(history) > turns
    for turn in reversed(history[-turns:]):
        if len(turn.content) > budget:
            if budget > 0:
                kept.append(msgspec.structs.replace(turn, content="…" + _cut_start(turn.content, budget)))
            cut = True
            break
        kept.append(turn)
        budget -= len(turn.content)
    return kept[::-1], cut


def _bounded_evidence(docs: list[RetrievedDoc] | None, doc_chars: int,
                      chars: int) -> tuple[list[RetrievedDoc] | None, bool]:
    """Session evidence in the order given, each document cut to `doc_chars`, until `chars` are used; whether any was
    cut or left out."""
    if not docs:
        return docs, False
    kept, budget, cut = [], chars, False
    for doc in docs:
        text = doc.text or ""
        if budget <= 0:
            cut = True
            break
        if len(text) > min(doc_chars, budget):
            doc = msgspec.structs.replace(doc, text=_cut(text, min(doc_chars, budget)))
            cut = True
        budget -= len(doc.text or "")
        kept.append(doc)
    return kept, cut


def _cut_start(text: str, chars: int) -> str:
    """The last `chars` characters of `text`, starting after a space when one is in their first fifth."""
    kept = text[len(text) - chars:]
    space = kept.find(" ", 0, chars // 5)
    return kept[space + 1:] if space >= 0 else kept


def _cut(text: str, chars: int) -> str:
    """At most `chars` characters of `text`, ending at a space when one is in the last fifth (no half word)."""
    kept = text[:chars]
    space = kept.rfind(" ", chars - chars // 5)
    return kept[:space] if space > 0 else kept
