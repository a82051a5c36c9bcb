"""Where sentences and claims sit in the answer: what of the answer no sentence covers, and which inline citation
markers each one carries.

The answer is read once with its markers taken out (`7 days [1].` reads `7 days.`), each marker remembered at the
offset where it stood, and folded as the quote check folds text (case, quote marks, dashes, whitespace) with a map
back to offsets of the unfolded text. A piece (a judge's sentence, a claim) is found exactly after folding, else as
a near-verbatim copy (rapidfuzz partial ratio >= quotes.FUZZY_MIN): a model that drops a comma still locates.
"""

from __future__ import annotations

import bisect
import functools
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
_RUNS = re.compile(r"\s+|[^\s*_`#]+")
"""A run of whitespace, or of text without the Markdown emphasis, code and heading marks (`*_`#`), which are left out
on both sides, so `**Note:** x` matches `Note: x`."""


@dataclass(frozen=True, slots=True)
class Placed:
    """A marker at its offset in the marker-free answer."""

    offset: int
    marker: Marker


@functools.lru_cache(maxsize=256)
def answer_text(answer: str) -> AnswerText:
    """The AnswerText of `answer`, read once for the checks of one judgment (the tool's coverage check, the
    citations): treat it as read-only."""
    return AnswerText(answer)


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
        return bisect.bisect_left(self.origin, offset)   # origin never decreases

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
    """`text` folded as quotes.normalise folds it, and for each folded character the offset it came from.

    Read a run at a time (issue 28: a character at a time it was a third of a judged trace's CPU): a run of
    whitespace folds to one space (none at the start or after a space), an ASCII run to its lower case, offset for
    offset; only a run with other characters is folded a character at a time (fold_char may give several or none)."""
    out: list[str] = []
    origin: list[int] = []
    last = " "   # the last folded character; a space at the start is dropped
    for run in _RUNS.finditer(text):
        start, piece = run.start(), run.group()
        if piece[0].isspace():
            if last != " ":
                out.append(" ")
                origin.append(start)
                last = " "
        elif piece.isascii():
            out.append(piece.lower())
            origin.extend(range(start, run.end()))
            last = piece[-1]
        else:
            for i, ch in enumerate(piece, start):
                folded = fold_char(ch)
                if not folded or (folded == " " and last == " "):
                    continue
                out.append(folded)
                origin.extend([i] * len(folded))
                last = folded[-1]
    return "".join(out), origin
