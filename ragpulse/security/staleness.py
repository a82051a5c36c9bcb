"""Stale sources: retrieved documents last updated longer ago than an application allows.

Exact, not a heuristic, given the `updated_at` the client sends. What is not detected: a document whose content is
outdated although its timestamp is recent, and documents sent without a timestamp (they are never stale).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence


def stale_doc_ids(docs: Sequence[tuple[str, datetime.datetime | None]], now: datetime.datetime,
                  max_age_days: float | None) -> list[str]:
    """Ids of the documents whose age, `now - updated_at`, exceeds `max_age_days`, in order, each once.

    A document with no `updated_at` (None) is not stale; with no limit (`max_age_days` None) nothing is. A
    timestamp in the future has a negative age and is not stale. Naive datetimes are read as UTC, so naive and
    aware values can be mixed (msgspec decodes an ISO timestamp without offset as naive).
    """
    if max_age_days is None:
        return []
    if max_age_days < 0:
        raise ValueError(f"max_age_days must be >= 0, got {max_age_days}")
    limit = datetime.timedelta(days=max_age_days)
    now = _as_utc(now)
    stale = (doc_id for doc_id, updated in docs if updated is not None and now - _as_utc(updated) > limit)
    return list(dict.fromkeys(stale))


def _as_utc(moment: datetime.datetime) -> datetime.datetime:
    """`moment` with a time zone: naive values are taken to be UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=datetime.UTC)
