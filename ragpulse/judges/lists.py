"""Lists and figures inside one answer sentence, for the offline judge (a heuristic).

- **One check per list item.** "The plan includes SSO, audit logs, SCIM and a dedicated manager" is one sentence
  but four claims: each item after the first must be found in a passage on its own, so an invented item is
  unsupported even when the sentence shares most of its words with the passage. A shorter list than the
  passage's is fine: omission is not hallucination.
- **Figures the sentence derives itself** are not looked up: the count of a list it spells out ("six error codes:
  E05, E14, ...") and a total of two of its own amounts ("$179 and $99, so $278").
"""

from __future__ import annotations

import re
from dataclasses import replace
from itertools import combinations

from ragpulse.judges.lexicon import STOPWORDS
from ragpulse.judges.text import Anchor, Reading

_PARTS = re.compile(r"\s*[,;]\s*")
_CONJUNCTION = re.compile(r"^(?:and|or|as well as|plus|und|oder|y|o|e|et|ou|en|of)\s+|\s+(?:and|or|as well as|plus|"
                          r"und|oder|y|o|e|et|ou|en|of)\s+", re.IGNORECASE)
_PARENTHESES = re.compile(r"\([^()]*\)")
_EXAMPLE = re.compile(r"^(?:e\.g\.|i\.e\.|such as|including|like|for example|for instance|z\.b\.|p\.ex\.|ex\.)\s+",
                      re.IGNORECASE)
_DETERMINERS = frozenset("a an the any some your our their my his her its one two three four five six ein eine der die "
                         "das un una el la los las une le les um uma o os il lo gli".split())
MAX_DERIVED_FIGURES = 8
"""A sentence with more amounts than this is not searched for a total of two of them (the search is quadratic)."""
MAX_ITEM_WORDS = 6
"""A part longer than this is a clause, not a list item, and the sentence is not read as a list."""


def list_items(sentence: str) -> list[str]:
    """The items of the list a sentence spells out, the first one included; [] when it holds no list.

    A list is three or more short parts joined by commas or semicolons and a last "and"/"or", or two or more
    after a colon ("Accepted: passport, identity card").
    """
    lead, colon, body = sentence.partition(":")
    text = _PARENTHESES.sub(" ", body if colon else sentence).strip().rstrip(".!?")
    parts = [p for p in _PARTS.split(text) if p]
    if not parts:
        return []
    *head, tail = parts
    tail_items = [p for p in _CONJUNCTION.split(tail) if p.strip()]
    items = [_CONJUNCTION.sub("", p, count=1) if _CONJUNCTION.match(p) else p for p in head] + tail_items
    items = [_EXAMPLE.sub("", item) for item in items]
    enough = len(items) >= 2 if colon else len(parts) >= 2 and len(items) >= 3
    inner = items if colon else items[1:]
    if not enough or any(len(item.split()) > MAX_ITEM_WORDS or _clause(item) for item in inner):
        return []
    return items


def _clause(item: str) -> bool:
    """A part that opens with a lower-case function word other than an article ("which you can fit yourself",
    "so it restarts") is a clause, not an item: the sentence is not a list."""
    first = item.split(maxsplit=1)[0] if item.split() else ""
    word = first.casefold()
    return first[:1].islower() and word not in _DETERMINERS and any(word in stop for stop in STOPWORDS.values())


def derived(reading: Reading, sentence: str) -> Reading:
    """The reading without the figures the sentence derives from itself: a count equal to its list's length, and an
    amount equal to the sum or product of two other amounts of the same kind in it."""
    size = len(list_items(sentence))
    numbers = [(a, _amount(a)) for a in reading.anchors if a[0] in ("num", "qty")]
    dropped: set[Anchor] = set()
    for anchor, (kind, value) in numbers:
        if size >= 2 and anchor[0] == "num" and value == size:
            dropped.add(anchor)
            continue
        others = [v for a, (k, v) in numbers if a != anchor and k == kind]
        if len(numbers) <= MAX_DERIVED_FIGURES and any(abs(x + y - value) < 1e-6 or abs(x * y - value) < 1e-6 for x, y in combinations(others, 2)):
            dropped.add(anchor)
    if not dropped:
        return reading
    return replace(reading, anchors=tuple(a for a in reading.anchors if a not in dropped))


def _amount(anchor: Anchor) -> tuple[str, float]:
    kind, value = anchor
    return ("num", value) if kind == "num" else (value[0], value[1])
