"""Inline citation markers in an answer (`[1]`, `[doc-3]`, `(source 2)`, `[1, 3]`): where they are, which retrieved
document each names, and the answer text without them.

Both judges read markers through this module: the LLM judge maps them onto the documents each claim cites, the
offline heuristic strips them before it reads numbers (a `[1]` is not a quantity). A marker resolves to a document
by its id first (`[doc-3]` names the document whose id is `doc-3`), then by its 1-based position among the retrieved
documents (`[1]` is the first); a label that is neither resolves to None and is reported as citing nothing retrieved.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_LABEL = r"(?:(?:doc(?:ument)?|source|src|ref)[\s_#:-]*)?[A-Za-z0-9][\w.\-:/]{0,63}"
_LIST = rf"{_LABEL}(?:\s*[,;]\s*{_LABEL}){{0,15}}"
_MARKER = re.compile(rf"(?<!\w)\[(?P<square>{_LIST})\]|(?<!\w)\((?P<round>(?:doc(?:ument)?|source|src|ref)[\s_#:-]*[A-Za-z0-9][\w.\-]*"
                     rf"(?:\s*[,;]\s*(?:(?:doc(?:ument)?|source|src|ref)[\s_#:-]*)?[A-Za-z0-9][\w.\-]*){{0,15}})\)",
                     re.IGNORECASE)
_PREFIX = re.compile(r"^(?:doc(?:ument)?|source|src|ref)[\s_#:-]*", re.IGNORECASE)
_SPLIT = re.compile(r"\s*[,;]\s*")


@dataclass(frozen=True, slots=True)
class Marker:
    """One marker in the answer: its span and the labels it holds (`[1, 3]` holds two)."""

    start: int
    end: int
    labels: tuple[str, ...]


def find_markers(answer: str) -> list[Marker]:
    """Every citation marker in `answer`, in order.

    Square brackets hold a label or a list of labels (`[1]`, `[doc-3]`, `[1, 2]`); round brackets count only with a
    word that says it is a citation (`(source 2)`, `(doc 4)`), so `(2)` in running text or `(see above)` is not one.
    A square bracket with spaces inside a label (`[see the table]`) is not a marker, nor is an index glued to a word
    (`array[0]`).
    """
    markers = []
    for match in _MARKER.finditer(answer):
        body = match.group("square") or match.group("round")
        if match.group("square") is not None and not _looks_like_citation(body):
            continue
        markers.append(Marker(match.start(), match.end(), tuple(_SPLIT.split(body.strip()))))
    return markers


def _looks_like_citation(body: str) -> bool:
    """`[1]`, `[12, 3]`, `[doc-3]`, `[source 2]`, `[kb/faq-7]`: digits or an id-like token, not a word in brackets
    such as `[sic]` or `[Note]` (a plain word counts only when it carries a digit)."""
    return all(any(ch.isdigit() for ch in label) for label in _SPLIT.split(body.strip()))


def resolve(label: str, doc_ids: Sequence[str]) -> str | None:
    """The id of the retrieved document a marker label names, or None when it names none of them.

    An exact id wins (`doc-3`), then the id with the marker's prefix removed, then a 1-based position (`1`,
    `source 2`, `doc 3` when no document has such an id).
    """
    if label in doc_ids:
        return label
    bare = _PREFIX.sub("", label)
    if bare in doc_ids:
        return bare
    if bare.isdigit() and 1 <= int(bare) <= len(doc_ids):
        return doc_ids[int(bare) - 1]
    return None


def cited_documents(text: str, doc_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(ids of the retrieved documents the markers in `text` name, in order without repeats; labels naming none)."""
    named: dict[str, None] = {}
    unknown: dict[str, None] = {}
    for marker in find_markers(text):
        for label in marker.labels:
            doc_id = resolve(label, doc_ids)
            if doc_id is None:
                unknown[label] = None
            else:
                named[doc_id] = None
    return list(named), list(unknown)


def strip_markers(text: str) -> str:
    """`text` without its citation markers (and the space before each), so `7 days [1].` reads `7 days.`"""
    pieces, position = [], 0
    for marker in find_markers(text):
        pieces.append(text[position:marker.start].rstrip(" \t"))
        position = marker.end
    pieces.append(text[position:])
    return "".join(pieces)


def cite_by_id(text: str, doc_ids: Sequence[str]) -> str:
    """`text` with each marker's labels rewritten as the ids of the documents they name (`[1]` -> `[doc-a]` when
    doc-a was retrieved first); a label naming none is kept as written. Two answers cited against different rankings
    then name documents the same way."""
    pieces, position = [], 0
    for marker in find_markers(text):
        labels = [resolve(label, doc_ids) or label for label in marker.labels]
        pieces += [text[position:marker.start], f"[{', '.join(labels)}]"]
        position = marker.end
    pieces.append(text[position:])
    return "".join(pieces)
