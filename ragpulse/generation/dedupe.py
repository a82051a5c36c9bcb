"""Duplicate questions, found locally: the same normalized text, or near-duplicates by word overlap (a heuristic)."""

from __future__ import annotations

import re
import unicodedata

from ragpulse.config import defaults
from ragpulse.generation.related import jaccard

_TOKEN = re.compile(r"\w+")


def normalize(question: str) -> str:
    """NFKC, case-folded, punctuation dropped, whitespace collapsed: `What is X?` and `what is x` are one question."""
    return " ".join(_TOKEN.findall(unicodedata.normalize("NFKC", question).casefold()))


def duplicate_of(question: str, earlier: list[str],
                 threshold: float = defaults.GENERATION_NEAR_DUPLICATE) -> str | None:
    """The first earlier question `question` duplicates: equal once normalized, or a token Jaccard similarity of at
    least `threshold`; None when it duplicates none."""
    tokens = frozenset(normalize(question).split())
    for other in earlier:
        other_tokens = frozenset(normalize(other).split())
        if tokens == other_tokens or jaccard(tokens, other_tokens) >= threshold:
            return other
    return None
