"""Quote check: a judge's evidence must really be in the document it cites, or the claim loses its support.

A quote is found when, after normalising whitespace, case, quote marks and dashes, it is a substring of one of the
chunks that share the cited document id. A near miss may still match (the judge dropped a comma, an LLM re-typed
an apostrophe), but never one that changes a number, a date, a negation or a unit: "90 days" is not a copying
slip of "30 days", and a quote that drops a "not" says the opposite of its source.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Sequence

from rapidfuzz import fuzz

from ragpulse.judges import lexicon
from ragpulse.judges.superseded import superseded_by
from ragpulse.model.verdicts import Claim, Evidence, JudgeOutput
from ragpulse.model.trace import Trace
from ragpulse.security.trace import document_findings

FUZZY_MIN = 90.0
"""rapidfuzz partial_ratio (0-100) above which a near-verbatim quote counts as found, if its protected tokens agree."""
QUOTE_NOT_FOUND = "quote_not_found"
"""Flag: a quote is not in any chunk of the document it cites."""
DOC_NOT_RETRIEVED = "doc_not_retrieved"
"""Flag: the evidence cites a document id that was not retrieved."""
NO_EVIDENCE = "no_evidence"
"""Flag: a supported or contradicted verdict came without any quote."""
OTHER_SUBJECT = "quote_other_subject"
"""Flag: a quote names another version of what the claim names (v2 for v3, X100 for X200), and not the claim's."""
INSTRUCTION_EVIDENCE = "instruction_as_evidence"
"""Flag: a quote is an instruction aimed at the assistant (ragpulse.security.injection), which is never evidence."""
SUPERSEDED_EVIDENCE = "superseded_evidence"
"""Flag: the verdict rests on superseded documents only (ragpulse.judges.superseded)."""
_IDENTIFIER = re.compile(r"(?<![\w.])(?:v(?:ersion)?\s?\d+(?:\.\d+)*|[^\W\d_]+-?\d+(?:\.\d+)*[^\W_]*)(?![\w])",
                         re.IGNORECASE)
"""A name with a number in it: a version (v2, version 3.1) or a model-like name (X200, gpt-4o, Priority-1)."""

_SPACE = re.compile(r"\s+")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|…|\[\.\.\.\]|\[…\])\s*")
_FOLD = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "`": "'", "\u00b4": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"', "\u2033": '"',
    "\u2039": '"', "\u203a": '"', "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-",
    "\u2015": "-", "\u2212": "-", "\u00a0": " ",
})
_PROTECTED_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?|%|[$€£¥°]")
_PROTECTED_WORDS = frozenset(lexicon.NEGATIONS | set(lexicon.UNITS) | set(lexicon.MONTHS) | set(lexicon.WEEKDAYS)
                             | set(lexicon.NUMBER_WORDS))
"""Negations, units, months, weekdays and number words: a near miss that changes one is a different statement."""


def normalise(text: str) -> str:
    """Unescape entities (the judge saw escaped text), NFKC, fold case, quote marks, dashes and whitespace."""
    folded = unicodedata.normalize("NFKC", html.unescape(text)).translate(_FOLD).casefold()
    return _SPACE.sub(" ", folded).strip()


def fold_char(ch: str) -> str:
    """One character folded as `normalise` folds text (NFKC, quote marks, dashes, case); may be several or none."""
    return unicodedata.normalize("NFKC", ch).translate(_FOLD).casefold()


def protected_tokens(text: str) -> list[str]:
    """The tokens a copying slip may never change: numbers, number words, negations, units, months, weekdays."""
    tokens = []
    for token in _PROTECTED_TOKEN.findall(text):
        if token[0].isdigit():
            tokens.append(token.replace(",", ""))
        elif token in _PROTECTED_WORDS:
            tokens.append(token)
        elif token.endswith("n't"):
            tokens.append("n't")
    return tokens


def quote_found(quote: str, document: str) -> bool:
    """True when the quote is in the document after normalising, or a near-verbatim copy with equal protected tokens.

    A quote with an ellipsis ("Refunds ... within 30 days") matches when each part is found, in order.
    """
    parts = [p for p in _ELLIPSIS.split(normalise(quote)) if p.strip(" .,;:")]
    d = normalise(document)
    if not parts:
        return False
    position = 0
    for part in parts:
        found = _locate(part, d, position)
        if found is None:
            return False
        position = found
    return True


def _locate(part: str, document: str, start: int) -> int | None:
    """End offset of `part` in `document` at or after `start`, exactly or as a near miss; None when absent."""
    exact = document.find(part, start)
    if exact >= 0:
        return exact + len(part)
    window = document[start:]
    alignment = fuzz.partial_ratio_alignment(part, window)
    if alignment is None or alignment.score < FUZZY_MIN:
        return None
    lo, hi = _word_bounds(window, alignment.dest_start, alignment.dest_end)
    if protected_tokens(part) != protected_tokens(window[lo:hi]):
        return None
    return start + hi


def _word_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen [start, end) to whole words, so a match that clips "300" to "30" is compared as "300"."""
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return start, end


def chunks_by_doc(trace: Trace) -> dict[str, list[tuple[str | None, str]]]:
    """Every retrieved chunk's (chunk_id, text), grouped by document id, in rank order, then the session evidence's
    (documents retrieved for earlier turns of a conversation, which may support a claim too)."""
    chunks: dict[str, list[tuple[str | None, str]]] = {}
    for doc in [*trace.retrieved_docs, *(trace.session_evidence or ())]:
        chunks.setdefault(doc.id, []).append((doc.chunk_id, doc.text or ""))
    return chunks


def identifiers(text: str) -> dict[str, set[str]]:
    """Named things with a number, by their letter prefix: "v3 and X200" -> {"v": {"v3"}, "x": {"x200"}} (folded:
    case, hyphens and the word `version` do not count)."""
    found: dict[str, set[str]] = {}
    for match in _IDENTIFIER.finditer(normalise(text)):
        name = re.sub(r"^version", "v", match.group().replace("-", "").replace(" ", ""))
        found.setdefault(re.match(r"[^\W\d_]*", name).group(), set()).add(name)  # type: ignore[union-attr]
    return found


def other_subject(claim: str, quote: str) -> bool:
    """True when the quote names another version of something the claim names, and none of the claim's names (a
    heuristic: only names with a number are compared; whether a quote is about the claim's subject otherwise is
    left to the judge's prompt)."""
    named, quoted = identifiers(claim), identifiers(quote)
    if any(names & quoted.get(prefix, set()) for prefix, names in named.items()):
        return False
    return any(quoted.get(prefix, set()) - names for prefix, names in named.items())


def check_quotes(output: JudgeOutput, trace: Trace) -> JudgeOutput:
    """Downgrade every supported or contradicted claim whose evidence does not hold: not in its cited, retrieved
    documents, about another version, an instruction to the assistant, or only from superseded documents."""
    chunks = chunks_by_doc(trace)
    replaced = superseded_by(trace)
    for claim in output.claims:
        if claim.verdict == "unsupported":
            continue
        flag = _evidence_problem(claim.evidence, chunks) or _subject_problem(claim, replaced)
        if flag:
            _downgrade(claim, flag)
    return output


def _subject_problem(claim: Claim, replaced: dict[str, str | None]) -> str | None:
    """Found quotes that still cannot carry the verdict."""
    if any(document_findings(piece.quote) for piece in claim.evidence):  # the injection check, remembered per text
        return INSTRUCTION_EVIDENCE
    if any(other_subject(claim.text, piece.quote) for piece in claim.evidence):
        return OTHER_SUBJECT
    if all(piece.doc_id in replaced for piece in claim.evidence):
        return SUPERSEDED_EVIDENCE
    return None


def _downgrade(claim: Claim, flag: str) -> None:
    claim.flags.append(flag)
    claim.reason = f"downgraded from {claim.verdict}: {flag}" + (f"; {claim.reason}" if claim.reason else "")
    claim.verdict = "unsupported"


def _evidence_problem(evidence: Sequence[Evidence], chunks: dict[str, list[tuple[str | None, str]]]) -> str | None:
    """The first problem with a claim's evidence; every piece must hold (support from two documents needs both)."""
    if not evidence:
        return NO_EVIDENCE
    for piece in evidence:
        if piece.doc_id not in chunks:
            return DOC_NOT_RETRIEVED
        matched = next((chunk_id for chunk_id, text in chunks[piece.doc_id] if quote_found(piece.quote, text)), False)
        if matched is False:
            return QUOTE_NOT_FOUND
        if matched is not None:
            piece.chunk_id = matched
    return None
