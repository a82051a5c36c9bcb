"""Run every security check on one trace: what a result's `security` holds."""

from __future__ import annotations

import datetime
import hashlib
from collections import OrderedDict

from ragpulse.model.results import Security
from ragpulse.model.trace import Trace
from ragpulse.security.acl import leaked_doc_ids
from ragpulse.security.injection import injection_findings
from ragpulse.security.pii import pii_kinds
from ragpulse.security.staleness import stale_doc_ids

INJECTION_CACHE_SIZE = 50_000
"""Documents whose injection findings a process remembers (by a hash of their text): production apps retrieve the
same documents again and again, and the pattern scan is the costly check (~1 ms for 2 KB)."""


class _FindingsCache:
    """A bounded LRU of injection findings keyed by a 16-byte digest of the text (the text itself is not kept)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.found: OrderedDict[bytes, tuple[str, ...]] = OrderedDict()

    def findings(self, text: str) -> tuple[str, ...]:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        cached = self.found.get(key)
        if cached is not None:
            self.found.move_to_end(key)
            return cached
        found = self.found[key] = tuple(injection_findings(text))
        if len(self.found) > self.size:
            self.found.popitem(last=False)
        return found


_cache = _FindingsCache(INJECTION_CACHE_SIZE)


def document_findings(text: str) -> tuple[str, ...]:
    """The injection cues found in one document's text, remembered per text: what `check_trace` reports, and what
    the offline judge reads so that it never quotes as evidence a document sentence this check flags."""
    return _cache.findings(text)


def check_trace(trace: Trace, now: datetime.datetime, max_source_age_days: float | None) -> Security:
    """ACL leaks, injection documents, unseen personal data in the answer, and stale documents."""
    docs = trace.retrieved_docs
    security = Security()
    if trace.principal is not None and any(doc.acl is not None for doc in docs):
        security.leaked_doc_ids = leaked_doc_ids(trace.principal.groups, [(doc.id, doc.acl) for doc in docs])
        security.acl_leak = bool(security.leaked_doc_ids)
    cues: dict[str, None] = {}
    security.injection_checked = any(doc.text for doc in docs)
    for doc in docs:
        found = document_findings(doc.text) if doc.text else ()
        if found:
            security.injection_docs.append(doc.id)
            cues.update(dict.fromkeys(found))
    security.injection_docs = list(dict.fromkeys(security.injection_docs))
    security.injection_cues = list(cues)
    if trace.answer:
        security.pii_checked = True
        security.pii = pii_kinds(trace.answer, [doc.text for doc in docs if doc.text])
    if max_source_age_days is not None and any(doc.updated_at is not None for doc in docs):
        security.stale_checked = True
        security.stale_docs = list(dict.fromkeys(
            stale_doc_ids([(doc.id, doc.updated_at) for doc in docs], now, max_source_age_days)))
    return security
