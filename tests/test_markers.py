"""Inline citation markers: found, resolved to retrieved documents, and stripped before numbers are read."""

from __future__ import annotations

import pytest

from ragpulse.judges.markers import cited_documents, find_markers, resolve, strip_markers

DOCS = ["faq-1", "pricing", "doc-3"]


@pytest.mark.parametrize(("text", "labels"), [
    ("Refunds take 5–7 business days [1].", [("1",)]),
    ("See [doc-3] and (source 2).", [("doc-3",), ("source 2",)]),
    ("Both plans [1, 3] include it.", [("1", "3")]),
    ("Pro plan [2][3].", [("2",), ("3",)]),
    ("As stated (doc 1; doc 2).", [("doc 1", "doc 2")]),
])
def test_markers_are_found_with_their_labels(text: str, labels: list[tuple[str, ...]]) -> None:
    assert [m.labels for m in find_markers(text)] == labels


@pytest.mark.parametrize("text", [
    "It costs [sic] 5 dollars.", "Step (2) comes next.", "As said (see above).", "[Note] read this.",
    "Read array[0] first.", "Call f(source) now.",
])
def test_brackets_that_are_not_citations_are_left_alone(text: str) -> None:
    assert find_markers(text) == []
    assert strip_markers(text) == text


def test_a_label_resolves_by_id_then_by_position() -> None:
    assert resolve("doc-3", DOCS) == "doc-3"
    assert resolve("1", DOCS) == "faq-1"
    assert resolve("source 2", DOCS) == "pricing"
    assert resolve("doc pricing", DOCS) == "pricing"
    assert resolve("4", DOCS) is None
    assert resolve("0", DOCS) is None


def test_cited_documents_reports_named_and_unknown_labels() -> None:
    assert cited_documents("A [1]. B [3][1]. C [9].", DOCS) == (["faq-1", "doc-3"], ["9"])


def test_stripping_a_marker_keeps_the_number_before_it_intact() -> None:
    assert strip_markers("Refunds take 5–7 business days [1].") == "Refunds take 5–7 business days."
    assert strip_markers("Priority 1 [2] applies") == "Priority 1 applies"
