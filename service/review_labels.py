"""What the review pages ask of the labels domain (ragpulse.labels), always for the session's tenant."""

from __future__ import annotations

from ragpulse.model.labels import Label, LabelRequest, ReviewItem
from service.review_auth import Review


def next_item(review: Review, app: str) -> ReviewItem | None:
    """The first trace of the app's review queue the session's reviewer has not labelled yet."""
    raise NotImplementedError("waiting for ragpulse.labels' queue")


def item(review: Review, app: str, trace_id: str, job_id: str | None) -> ReviewItem:
    """One judged trace of the tenant's app as a reviewer reads it; TraceNotFound / JobNotFound otherwise."""
    raise NotImplementedError("waiting for ragpulse.labels' lookup")


def save(review: Review, app: str, request: LabelRequest) -> Label:
    """Store the label (the same reviewer's earlier label of the trace is replaced)."""
    raise NotImplementedError("waiting for ragpulse.labels' store")


def labels(review: Review, item: ReviewItem) -> list[Label]:
    """Every reviewer's label of the trace."""
    raise NotImplementedError("waiting for ragpulse.labels' store")
