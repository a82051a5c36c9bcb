"""Which retrieved documents the trace marks as superseded (replaced by a newer one).

An app says so in metadata, either way:
- the trace's `metadata.superseded`: a list of document ids;
- a document's `metadata.superseded_by` (the id of the newer document) or `metadata.superseded: true`.
Both judges read it through `superseded_by`: the LLM judge is told (a `superseded` attribute on the document), and
the quote check never lets a claim rest on superseded documents alone.
"""

from __future__ import annotations

from ragpulse.model.trace import Trace

SUPERSEDED = "superseded"
"""The metadata key (trace: a list of ids; document: true) that marks a document superseded."""
SUPERSEDED_BY = "superseded_by"
"""The document metadata key naming the document that replaces it."""


def superseded_by(trace: Trace) -> dict[str, str | None]:
    """Superseded document id -> the id of the document replacing it (None when the trace does not say)."""
    listed = (trace.metadata or {}).get(SUPERSEDED)
    found: dict[str, str | None] = {doc_id: None for doc_id in listed if isinstance(doc_id, str)} \
        if isinstance(listed, list) else {}
    for doc in trace.retrieved_docs:
        metadata = doc.metadata or {}
        newer = metadata.get(SUPERSEDED_BY)
        if isinstance(newer, str) and newer:
            found[doc.id] = newer
        elif metadata.get(SUPERSEDED) is True:
            found.setdefault(doc.id, None)
    return found
