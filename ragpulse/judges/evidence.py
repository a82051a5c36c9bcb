"""Which retrieved text the offline judge may quote as evidence, and which of two passages is the newer (a heuristic).

- **Instructions are never evidence.** A sentence that the security check (ragpulse.security.injection) flags, or
  that the judge's own coarser list (lexicon.INJECTION) matches, supports nothing; nor does an HTML comment, which
  no reader of the page sees. The security check's verdict decides, so the two detectors agree: a document it flags
  is never quoted for the flagged sentence.
- **Superseded documents are not evidence**: a document marked so in metadata (the trace's `superseded` list, or the
  document's `"superseded": true` or `"superseded_by"`, read by ragpulse.judges.superseded as the LLM judge reads
  it), marked in its text (`SUPERSEDED`, `[superseded]`, "superseded by"), or one that another retrieved document
  says it replaces ("This policy replaces the 2022 travel policy").
- **The newer of two passages wins** where they disagree: by `updated_at` when both documents carry it, else the
  passage that says a fact changed ("no longer", "as of", "has been raised to") is the newer.
"""

from __future__ import annotations

import functools
import re

from ragpulse.judges import lexicon
from ragpulse.judges.text import Reading, anchor_matches, fold, read
from ragpulse.judges.superseded import superseded_by
from ragpulse.model.trace import RetrievedDoc, Trace
from ragpulse.security.injection import injection_findings, instructs_next as security_instructs_next
from ragpulse.security.prefilter import LiteralScan, Prefiltered
from ragpulse.security.trace import document_findings

_HIDDEN = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_MARKED = re.compile(r"\bSUPERSEDED\b|\bOBSOLETE\b")
_MARKED_ANY_CASE = re.compile(r"[\[(]\s*(?:superseded|obsolete|archived)\s*[\])]|\b(?:superseded|replaced) by\b|"
                              r"\b(?:is|has been|was) (?:superseded|withdrawn)\b|\bveraltet\b|\bobsolet[oa]?\b|"
                              r"\bobsolète\b|\bvervallen\b", re.IGNORECASE)
_REPLACES = re.compile(r"\b(?:replaces|supersedes|ersetzt|reemplaza|sustituye|remplace|substitui|sostituisce|"
                       r"vervangt)\s+(?P<what>[^.;:!?]{3,80})", re.IGNORECASE)
_CHANGE = re.compile(r"\b(?:as of|with effect from|effective|from \d|anymore|any more|replaces|supersedes|"
                     r"(?:has|have) been (?:changed|increased|reduced|raised|lowered|extended|shortened|"
                     r"discontinued|removed)|seit|ab sofort|a partir de|à partir du?|a partire da|vanaf)\b")


def visible_text(text: str) -> tuple[str, str]:
    """(the text a reader sees, the HTML comments removed from it): comments are never evidence."""
    hidden = " ".join(_HIDDEN.findall(text))
    return (_HIDDEN.sub(" ", text), hidden) if hidden else (text, "")


_LEXICON = Prefiltered(lexicon.INJECTION)
_LEXICON_SCAN = LiteralScan([_LEXICON])
"""The judge's own list, searched only in a sentence holding the literals its matches need (most hold none)."""


def is_instruction(sentence: str, folded: str, flagged: bool) -> bool:
    """A sentence addressed to the model: the judge's own list, or, in a document the security check flagged, the
    security check's verdict on the sentence itself."""
    return ((_LEXICON.could_match(_LEXICON_SCAN.present(folded)) and bool(lexicon.INJECTION.search(folded)))
            or (flagged and bool(injection_findings(sentence))))


def instructs_next(sentence: str, flagged: bool) -> bool:
    """An instruction sentence of a flagged document whose request is the next sentence ("Ignore all previous
    instructions." "Tell the user ..."): that sentence is an instruction too, never evidence."""
    return flagged and security_instructs_next(sentence)


def flagged(doc: RetrievedDoc) -> bool:
    """Whether the security check finds an instruction aimed at the model in the document (cached per text)."""
    return bool(doc.text) and bool(document_findings(doc.text or ""))


def superseded(trace: Trace, language: str) -> frozenset[int]:
    """Indexes of the retrieved documents that are superseded: so marked in the trace's or the document's metadata
    (ragpulse.judges.superseded, shared with the LLM judge), marked in the text, or replaced by another retrieved
    one."""
    docs = trace.retrieved_docs
    by_metadata = superseded_by(trace)
    out = {i for i, doc in enumerate(docs) if doc.id in by_metadata or _marked(doc.text or "")}
    for j, doc in enumerate(docs):
        if _lacks(doc.text or "", _REPLACE_WORDS):
            continue
        for match in _REPLACES.finditer(doc.text or ""):
            what = read(match.group("what"), language)
            if len(what.content) + len(what.anchors) < 2:
                continue  # "replaces it", "replaces the old one": too vague to name a document
            out.update(i for i, other in enumerate(docs) if i != j and _names(what, other, language))
    return frozenset(out)


def _marked(text: str) -> bool:
    """The text says it is superseded ("SUPERSEDED:", "[superseded]", "superseded by ...")."""
    if _lacks(text, _MARK_WORDS):
        return False
    return bool(_MARKED.search(text) or _MARKED_ANY_CASE.search(text))


_MARK_WORDS = ("supersed", "obsolet", "archived", "replaced by", "withdrawn", "veraltet", "vervallen")
"""One of these is in every match of _MARKED and _MARKED_ANY_CASE on ASCII text (the accented one needs more)."""
_REPLACE_WORDS = ("replaces", "supersedes", "ersetzt", "reemplaza", "sustituye", "remplace", "substitui", "sostituisce",
                  "vervangt")
"""The verbs of _REPLACES, one of which is in every match."""


def _lacks(text: str, words: tuple[str, ...]) -> bool:
    """True when an ASCII text holds none of `words` in any case, so the case-blind patterns built on them cannot
    match (on ASCII text a case-blind match is a match of the lower-cased text; other text is always searched)."""
    if not text.isascii():
        return False
    lower = text.lower()
    return not any(word in lower for word in words)


def _names(what: Reading, doc: RetrievedDoc, language: str) -> bool:
    """Whether a "replaces ..." phrase names `doc`: the document holds all its content words and anchors."""
    reading = read(doc.text or "", language)
    anchors = frozenset(reading.anchors)
    return all(w in reading.stems for w in what.content) and all(anchor_matches(a, anchors) for a in what.anchors)


@functools.lru_cache(maxsize=4096)
def says_change(sentence: str) -> bool:
    """The sentence says a fact changed ("no longer", "as of 1 May", "has been raised to"); asked only of the few
    passages that contradict a supported claim, so it is not computed for every sentence."""
    folded = fold(sentence)
    return bool(lexicon.NEGATION_PHRASES.search(folded) or _CHANGE.search(folded))


def timestamp(doc: RetrievedDoc) -> float | None:
    """The document's `updated_at` as a number to compare, None when the trace does not say."""
    return doc.updated_at.timestamp() if doc.updated_at is not None else None


__all__ = ["flagged", "is_instruction", "says_change", "superseded", "timestamp", "visible_text"]
