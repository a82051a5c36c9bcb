"""Where sentences and claims sit in the answer: what of the answer no sentence covers, and which inline citation
markers each one carries.

The answer is read once with its markers taken out (`7 days [1].` reads `7 days.`), each marker remembered at the
offset where it stood, and folded as the quote check folds text (case, quote marks, dashes, whitespace) with a map
back to offsets of the unfolded text. A piece (a judge's sentence, a claim) is found exactly after folding, else as
a near-verbatim copy (rapidfuzz partial ratio >= quotes.FUZZY_MIN): a model that drops a comma still locates.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from ragpulse.judges.markers import Marker, find_markers
from ragpulse.judges.quotes import FUZZY_MIN, fold_char

_WORDLIKE = re.compile(r"\w{2,}|\d")
"""What makes a left-over fragment of the answer text rather than punctuation or a bullet."""
_LIST_MARK = re.compile(r"(?:^|(?<=\s))(?:\d{1,3}[.)]|[a-z][.)]|[-*•+])(?=\s|$)")
"""A list item's number or bullet (`2.`, `b)`, `-`), which a sentence copy may leave out."""
_DECORATION = frozenset("*_`#")
"""Markdown emphasis, code and heading marks: ignored on both sides, so `**Note:** x` matches `Note: x`."""


@dataclass(frozen=True, slots=True)
class Placed:
    """A marker at its offset in the marker-free answer."""

    offset: int
    marker: Marker


class AnswerText:
    """The answer without its markers, folded for matching, with the markers' offsets."""

    def __init__(self, answer: str) -> None:
        self.text, self.markers = _without_markers(html.unescape(answer))
        self.folded, self.origin = _fold(self.text)

    def locate(self, piece: str, start: int = 0) -> tuple[int, int] | None:
        """[start, end) of `piece` in the marker-free answer (searched from `start`, then anywhere); None if absent."""
        needle, _ = _fold(_without_markers(html.unescape(piece))[0].strip())
        if not needle.strip(" .,;:!?"):
            return None
        at = self._folded_offset(start)
        found = self.folded.find(needle, at)
        if found < 0:
            found = self.folded.find(needle)
        if found >= 0:
            return self._span(found, found + len(needle))
        alignment = fuzz.partial_ratio_alignment(needle, self.folded)
        if alignment is None or alignment.score < FUZZY_MIN:
            return None
        lo, hi = alignment.dest_start, alignment.dest_end
        while lo > 0 and self.folded[lo - 1].isalnum():       # whole words: no half word left over
            lo -= 1
        while hi < len(self.folded) and self.folded[hi].isalnum():
            hi += 1
        return self._span(lo, hi)

    def uncovered(self, spans: Sequence[tuple[int, int]]) -> list[str]:
        """The stretches of the marker-free answer that no span covers and that hold a word or a digit."""
        fragments, position = [], 0
        for start, end in sorted(spans):
            if start > position:
                fragments.append(self.text[position:start])
            position = max(position, end)
        fragments.append(self.text[position:])
        return [" ".join(f.split()) for f in fragments if _WORDLIKE.search(_LIST_MARK.sub(" ", f))]

    def _folded_offset(self, offset: int) -> int:
        return next((i for i, o in enumerate(self.origin) if o >= offset), len(self.folded))

    def _span(self, lo: int, hi: int) -> tuple[int, int]:
        return self.origin[lo], (self.origin[hi - 1] + 1 if hi > lo else self.origin[lo])


def _without_markers(text: str) -> tuple[str, list[Placed]]:
    """`text` without its citation markers (and the blanks before each), and where each marker stood."""
    pieces: list[str] = []
    placed: list[Placed] = []
    position, length = 0, 0
    for marker in find_markers(text):
        piece = text[position:marker.start].rstrip(" \t")
        pieces.append(piece)
        length += len(piece)
        placed.append(Placed(length, marker))
        position = marker.end
    pieces.append(text[position:])
    return "".join(pieces), placed


def _fold(text: str) -> tuple[str, list[int]]:
    """`text` folded as quotes.normalise folds it, and for each folded character the offset it came from."""
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch in _DECORATION:
            continue
        folded = " " if ch.isspace() else fold_char(ch)
        if folded == " " and (not out or out[-1] == " "):
            continue
        out.extend(folded)
        origin.extend([i] * len(folded))
    return "".join(out), origin
