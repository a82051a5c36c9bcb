"""A sound prefilter for regular expressions: the literal strings one of which every match must contain.

Python's `re` tries a large alternation at every position of a text, which makes the injection cues cost ~0.5 ms per
KB. Most documents hold none of the words a cue needs, so `could_match(text)` first asks whether any of the pattern's
required literals occurs (substring search in C), and the pattern runs only when one does. The literals are read off
the parsed pattern: for a sequence, the most selective required piece; for an alternation, the union of every
branch's (no set when a branch requires nothing). Patterns whose matches need no literal are always run.
"""

from __future__ import annotations

import re
from re import _constants as c  # type: ignore[attr-defined]  # the parser's opcodes (CPython's own, stable in 3.11+)
from re import _parser  # type: ignore[attr-defined]

Required = frozenset[str] | None
"""Strings one of which every match contains; None when no such set is known."""


class Prefiltered:
    """A compiled pattern with the literals its matches require."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.required = None if pattern.flags & re.IGNORECASE else required(_parser.parse(pattern.pattern,
                                                                                           pattern.flags))

    def could_match(self, text: str) -> bool:
        """False only when no match can exist in `text` (it holds none of the required literals)."""
        return self.required is None or any(literal in text for literal in self.required)


def required(sequence: _parser.SubPattern) -> Required:
    """The most selective required set of a sequence of regex items (None when none is required)."""
    candidates: list[frozenset[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            candidates.append(frozenset({"".join(run)}))
            run.clear()

    for op, av in sequence:
        if op is c.LITERAL:
            run.append(chr(av))
            continue
        flush()
        found = _item(op, av)
        if found:
            candidates.append(found)
    flush()
    return max(candidates, key=_selectivity, default=None)


def _item(op: object, av: object) -> Required:
    if op is c.SUBPATTERN:
        return required(av[-1])  # type: ignore[index]
    if op is c.BRANCH:
        branches = [required(branch) for branch in av[1]]  # type: ignore[index]
        return None if any(b is None for b in branches) else frozenset().union(*branches)  # type: ignore[arg-type]
    if op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", None)) and av[0] >= 1:  # type: ignore[index]
        return required(av[2])  # type: ignore[index]
    return None


def _selectivity(strings: frozenset[str]) -> tuple[int, int]:
    """Longer shortest literal first, then fewer literals."""
    return min(len(s) for s in strings), -len(strings)
