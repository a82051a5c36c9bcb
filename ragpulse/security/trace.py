"""Run every security check on one trace: what a result's `security` holds."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
from collections import OrderedDict

from ragpulse.model.results import Security
from ragpulse.model.trace import RetrievedDoc, Trace
from ragpulse.security.acl import leaked_doc_ids
from ragpulse.security.credentials import credential_scan
from ragpulse.security.deadline import NEVER, Deadline
from ragpulse.security.injection import injection_scan
from ragpulse.security.pii import pii_scan
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
CHECK_BUDGET_SECONDS = 2.0
"""Time the security checks of one trace may take on a worker: a typical trace's take well under a millisecond, and
one hostile answer or document must not hold a worker (and the tenants whose traces wait behind it) for longer. A
check that overruns stops where it is and is recorded as skipped for its time budget."""
INLINE_MAX_CHARS = 16_384
"""Traces whose answer and documents hold fewer characters are checked on the caller's event loop (a fraction of a
millisecond, less than a hop to a thread costs); longer ones in a thread, where even a check that runs to its budget
stalls nothing else."""
TIME_BUDGET = "time budget"
"""The reason `Security.skipped` gives for a check stopped by CHECK_BUDGET_SECONDS."""


class _FindingsCache:
    """A bounded LRU of injection findings keyed by a 16-byte digest of the text (the text itself is not kept),
    behind a small first-in-first-out memo of the most recent texts keyed by the text (a changed text is another
    key in both, so a document edited under the same id is scanned again)."""

    def __init__(self, size: int, recent: int = RECENT_TEXTS) -> None:
        self.size, self.recent_size = size, recent
        self.found: OrderedDict[bytes, tuple[str, ...]] = OrderedDict()
        self.recent: dict[str, tuple[str, ...]] = {}

    def findings(self, text: str, deadline: Deadline = NEVER) -> tuple[str, ...]:
        """The text's findings; a scan stopped by `deadline` (which is then expired) is returned, never remembered."""
        found = self.recent.get(text)
        if found is not None:
            return found
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        found = self.found.get(key)
        if found is not None:
            self.found.move_to_end(key)
        else:
            found = tuple(injection_scan(text, deadline).found)
            if deadline.expired:
                return found
            self.found[key] = found
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


def document_findings(text: str, deadline: Deadline = NEVER) -> tuple[str, ...]:
    """The injection cues found in one document's text, remembered per text: what `check_trace` reports, and what
    the offline judge reads so that it never quotes as evidence a document sentence this check flags (a scan cut
    short by `deadline` is not remembered)."""
    return _cache.findings(text, deadline)


def clear_findings_cache() -> None:
    """Forget the findings of every text this process scanned."""
    _cache.clear()


def check_trace(trace: Trace, now: datetime.datetime, max_source_age_days: float | None,
                budget_seconds: float | None = None) -> Security:
    """ACL leaks, injection documents, unseen personal data and credentials in the answer, and stale documents.

    With `budget_seconds`, the injection, PII and credential checks together stop when it runs out: a check cut
    short keeps what it found and is named in `skipped` (a check not begun is named too, with nothing found)."""
    docs = trace.retrieved_docs
    deadline = Deadline(budget_seconds)
    security = Security()
    if trace.principal is not None and any(doc.acl is not None for doc in docs):
        security.leaked_doc_ids = leaked_doc_ids(trace.principal.groups, [(doc.id, doc.acl) for doc in docs])
        security.acl_leak = bool(security.leaked_doc_ids)
    security.injection_checked = any(doc.text for doc in docs)
    if security.injection_checked:
        _injection(security, docs, deadline)
    if trace.answer:
        texts = [doc.text for doc in docs if doc.text]
        security.pii_checked = security.credentials_checked = True
        for check, scan in (("pii", pii_scan), ("credentials", credential_scan)):
            if deadline.passed_now():
                security.skipped[check] = TIME_BUDGET
                continue
            found, timed_out = scan(trace.answer, texts, deadline)
            setattr(security, check, found)
            if timed_out:
                security.skipped[check] = TIME_BUDGET
    if max_source_age_days is not None and any(doc.updated_at is not None for doc in docs):
        security.stale_checked = True
        security.stale_docs = list(dict.fromkeys(
            stale_doc_ids([(doc.id, doc.updated_at) for doc in docs], now, max_source_age_days)))
    return security


async def check_trace_async(trace: Trace, now: datetime.datetime, max_source_age_days: float | None) -> Security:
    """`check_trace` under CHECK_BUDGET_SECONDS, in a thread unless the trace is small (INLINE_MAX_CHARS)."""
    size = len(trace.answer or "") + sum(len(doc.text or "") for doc in trace.retrieved_docs)
    if size < INLINE_MAX_CHARS:
        return check_trace(trace, now, max_source_age_days, CHECK_BUDGET_SECONDS)
    return await asyncio.to_thread(check_trace, trace, now, max_source_age_days, CHECK_BUDGET_SECONDS)


def _injection(security: Security, docs: list[RetrievedDoc], deadline: Deadline) -> None:
    """The documents carrying injected instructions and their cues, into `security`; named in `skipped` when the
    deadline passed before every document was read."""
    cues: dict[str, None] = {}
    for doc in docs:
        if not doc.text:
            continue
        if deadline.passed_now():
            break
        found = document_findings(doc.text, deadline)
        if found:
            security.injection_docs.append(doc.id)
            cues.update(dict.fromkeys(found))
    if deadline.expired:
        security.skipped["injection"] = TIME_BUDGET
    security.injection_docs = list(dict.fromkeys(security.injection_docs))
    security.injection_cues = list(cues)
