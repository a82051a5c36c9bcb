"""Which chunk pairs a multi-hop question may join: chunks that are related (a heuristic, labelled so).

Related means either
- adjacent chunks of one document, in the order the request lists them (a passage and the next one), or
- chunks of different documents whose content words overlap: Jaccard similarity of their sets of lower-cased words of
  four letters or more, at least GENERATION_RELATED_OVERLAP. Only the first PAIR_SCAN_CHUNKS chunks are compared
  pairwise (quadratic), which bounds the work on a large corpus.
Adjacent pairs come first, in document order, then cross-document pairs by decreasing overlap.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragpulse.config import defaults
from ragpulse.model.generation import CorpusChunk

PAIR_SCAN_CHUNKS = 400
"""Chunks compared pairwise for cross-document overlap (400 chunks: ~80,000 comparisons)."""
_WORD = re.compile(r"[^\W\d_]{4,}")


def content_words(text: str) -> frozenset[str]:
    """Lower-cased words of four letters or more: a crude stand-in for the content words of a passage."""
    return frozenset(word.lower() for word in _WORD.findall(text))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def related_pairs(chunks: Sequence[CorpusChunk],
                  overlap: float = defaults.GENERATION_RELATED_OVERLAP) -> list[tuple[CorpusChunk, CorpusChunk]]:
    """Related chunk pairs, adjacent ones first (see the module docstring)."""
    pairs = [(a, b) for a, b in zip(chunks, chunks[1:]) if a.doc_id == b.doc_id]
    scanned = chunks[:PAIR_SCAN_CHUNKS]
    words = [content_words(chunk.text) for chunk in scanned]
    scored = []
    for i, a in enumerate(scanned):
        for j in range(i + 1, len(scanned)):
            if a.doc_id != scanned[j].doc_id and (score := jaccard(words[i], words[j])) >= overlap:
                scored.append((-score, i, j))
    return pairs + [(scanned[i], scanned[j]) for _, i, j in sorted(scored)]
