"""Run every security check on one trace: what a result's `security` holds."""

from __future__ import annotations

import datetime
import hashlib
from collections import OrderedDict

from ragpulse.model.results import Security
from ragpulse.model.trace import Trace
from ragpulse.security.acl import leaked_doc_ids
from ragpulse.security.credentials import credential_kinds
from ragpulse.security.injection import injection_findings
from ragpulse.security.pii import pii_kinds
from ragpulse.security.staleness import stale_doc_ids

INJECTION_CACHE_SIZE = 50_000
"""Documents whose injection findings a process remembers (by a hash of their text): production apps retrieve the
same documents again and again (a scan costs ~0.03 ms for a 500-character document that holds no cue word, more
for one that does)."""
RECENT_TEXTS = 512
"""Texts of the last few traces remembered by the text itself as well: the security check, the offline judge's
evidence, its injection-followed heuristic and the quote check each ask about the same document of a trace, and a
string keeps its own hash, so asking again costs a dict lookup instead of a digest of the text."""
RECENT_MAX_CHARS = 16_384
"""Longer texts are remembered only by their digest (the recent texts hold at most 512 x 16 KB)."""


class _FindingsCache:
    """A bounded LRU of injection findings keyed by a 16-byte digest of the text (the text itself is not kept),
    behind a small first-in-first-out memo of the most recent texts keyed by the text (a changed text is another
    key in both, so a document edited under the same id is scanned again)."""

    def __init__(self, size: int, recent: int = RECENT_TEXTS) -> None:
        self.size, self.recent_size = size, recent
        self.found: OrderedDict[bytes, tuple[str, ...]] = OrderedDict()
        self.recent: dict[str, tuple[str, ...]] = {}

    def findings(self, text: str) -> tuple[str, ...]:
        found = self.recent.get(text)
        if found is not None:
            return found
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        found = self.found.get(key)
        if found is not None:
            self.found.move_to_end(key)
        else:
            found = self.found[key] = tuple(injection_findings(text))
            if len(self.found) > self.size:
                self.found.popitem(last=False)
        if len(text) <= RECENT_MAX_CHARS:
            if len(self.recent) >= self.recent_size:
                del self.recent[next(iter(self.recent))]
            self.recent[text] = found
        return found

    def clear(self) -> None:
        """Forget every text (benchmarks time a cold process this way)."""
        self.found.clear()
        self.recent.clear()


_cache = _FindingsCache(INJECTION_CACHE_SIZE)


def document_findings(text: str) -> tuple[str, ...]:
    """The injection cues found in one document's text, remembered per text: what `check_trace` reports, and what
    the offline judge reads so that it never quotes as evidence a document sentence this check flags."""
    return _cache.findings(text)


def clear_findings_cache() -> None:
    """Forget the findings of every text this process scanned."""
    _cache.clear()


def check_trace(trace: Trace, now: datetime.datetime, max_source_age_days: float | None) -> Security:
    """ACL leaks, injection documents, unseen personal data and credentials in the answer, and stale documents."""
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
        texts = [doc.text for doc in docs if doc.text]
        security.pii_checked = security.credentials_checked = True
        security.pii = pii_kinds(trace.answer, texts)
        security.credentials = credential_kinds(trace.answer, texts)
    if max_source_age_days is not None and any(doc.updated_at is not None for doc in docs):
        security.stale_checked = True
        security.stale_docs = list(dict.fromkeys(
            stale_doc_ids([(doc.id, doc.updated_at) for doc in docs], now, max_source_age_days)))
    return security
