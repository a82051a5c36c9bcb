"""The offline judge's relevance grades and reference-fact coverage (a heuristic): shares of the query's content
words, graded 1 to 3."""

from __future__ import annotations

from ragpulse.judges.text import Reading, anchor_found, read, split_sentences
from ragpulse.model.verdicts import KeyFact

RELEVANCE_HIGH = 0.6
"""Share of the query's content stems that makes a passage or an answer score 3 ("covers most of the question")."""
RELEVANCE_LOW = 0.3
"""Share that makes it score 2 ("touches the question"); anything below scores 1."""
KEY_FACT_OVERLAP = 0.6
"""A reference fact is covered at the same bar a claim must meet to be supported."""


def coverage(query: Reading, stems: frozenset[str]) -> float:
    """Share of the query's content stems among `stems` (a document's, read once with the context)."""
    if not query.content:
        return 0.0
    return sum(w in stems for w in query.content) / len(query.content)


def grade(share: float) -> int:
    """1..3 from a coverage share, by RELEVANCE_LOW and RELEVANCE_HIGH."""
    return 3 if share >= RELEVANCE_HIGH else 2 if share >= RELEVANCE_LOW else 1


def answer_relevance(query: Reading, answer: Reading, support: frozenset[str]) -> tuple[int, str]:
    """Graded by the share of the query's content words in the answer read together with `support`, the stems of the
    passages that support its claims: "Two years." to "How long is the warranty?" repeats no query word, yet its
    evidence ("The warranty lasts two years") shows that it answers the question."""
    share = coverage(query, answer.stems | support)
    own = coverage(query, answer.stems)
    if share > own:
        return grade(share), f"The answer with its supporting passages uses {share:.0%} of the query's content " \
                             f"words ({own:.0%} in the answer alone)."
    return grade(share), f"The answer uses {share:.0%} of the query's content words."


def key_facts(reference: str | None, answer: Reading, language: str) -> list[KeyFact] | None:
    """Reference sentences and ;-clauses, each covered when the answer has all its anchors and most of its words."""
    if reference is None:
        return None
    facts = [part.strip() for s in split_sentences(reference) for part in s.split(";") if part.strip()]
    out = []
    anchors = frozenset(answer.anchors)
    for fact in facts:
        reading = read(fact, language)
        share = sum(w in answer.stems for w in reading.content) / len(reading.content) if reading.content else 1.0
        anchors_ok = all(anchor_found(a, anchors, answer.stems) for a in reading.anchors)
        out.append(KeyFact(fact=fact, covered=share >= KEY_FACT_OVERLAP and anchors_ok))
    return out
