"""Quote check: a judge's evidence must really be in the document it cites, or the claim loses its support."""

from __future__ import annotations

import html
import re

from rapidfuzz import fuzz

from ragpulse.judges.verdicts import Claim, JudgeOutput
from ragpulse.schema import Trace

FUZZY_MIN = 90.0
"""rapidfuzz partial_ratio (0-100) above which a quote counts as found despite small copying differences."""
QUOTE_NOT_FOUND = "quote_not_found"
DOC_NOT_RETRIEVED = "doc_not_retrieved"
_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Unescape entities (the judge saw escaped text), fold case and whitespace."""
    return _SPACE.sub(" ", html.unescape(text)).strip().casefold()


def quote_found(quote: str, document: str) -> bool:
    """True when the quote is in the document after normalising, or is a close fuzzy match of a part of it."""
    q, d = normalise(quote), normalise(document)
    if not q:
        return False
    return q in d or fuzz.partial_ratio(q, d) >= FUZZY_MIN


def check_quotes(output: JudgeOutput, trace: Trace) -> JudgeOutput:
    """Downgrade every supported or contradicted claim whose quote is not in its cited, retrieved document."""
    texts = {doc.id: doc.text or "" for doc in reversed(trace.retrieved_docs)}
    for claim in output.claims:
        if claim.verdict == "unsupported":
            continue
        flag = _evidence_problem(claim, texts)
        if flag:
            claim.flags.append(flag)
            claim.reason = f"downgraded from {claim.verdict}: {flag}" + (f"; {claim.reason}" if claim.reason else "")
            claim.verdict = "unsupported"
    return output


def _evidence_problem(claim: Claim, texts: dict[str, str]) -> str | None:
    if claim.doc_id is None or claim.doc_id not in texts:
        return DOC_NOT_RETRIEVED
    if not claim.quote or not quote_found(claim.quote, texts[claim.doc_id]):
        return QUOTE_NOT_FOUND
    return None
