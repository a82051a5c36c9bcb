"""What the review pages ask of the labels domain (ragpulse.labels), always for the session's tenant."""

from __future__ import annotations

from ragpulse.judges.judge_input import JudgeInputLimits
from ragpulse.exceptions import TraceNotFound
from ragpulse.labels import lookup
from ragpulse.labels.reading import SourceReader
from ragpulse.labels.sources import ReviewSource
from ragpulse.model.labels import Label, LabelRequest, ReviewItem
from service.review_auth import Review


def next_item(review: Review, app: str) -> ReviewItem | None:
    """The first trace of the app's review queue the session's reviewer has not labelled yet (before a name is
    known, one nobody has labelled)."""
    queue = review.services.reviews.queue(review.tenant, app, 1, review.session.reviewer)
    return queue.items[0] if queue.items else None


def item(review: Review, app: str, trace_id: str, job_id: str | None) -> ReviewSource:
    """One judged trace of the tenant's app as a reviewer reads it; TraceNotFound / JobNotFound (404) when it is
    not the tenant's, not this app's, or gone."""
    desk = review.services.reviews
    judged = lookup.find(desk.store.redis, desk.store, review.tenant, trace_id, job_id)
    reader = SourceReader(desk.store, review.tenant, JudgeInputLimits.from_settings(desk.settings))
    source = reader.read([judged.ref])[0]
    if source is None or source.app != app:
        raise TraceNotFound(f"no judged trace {trace_id!r} of app {app!r} to review")
    return source


def save(review: Review, request: LabelRequest) -> Label:
    """Store the label (the same reviewer's earlier label of the trace is replaced)."""
    return review.services.reviews.label(review.tenant, request)


def labels(review: Review, trace_id: str, job_id: str | None) -> list[Label]:
    """Every reviewer's label of the trace."""
    return review.services.reviews.of_trace(review.tenant, trace_id, job_id).labels
