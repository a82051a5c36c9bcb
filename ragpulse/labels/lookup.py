"""Find the judged trace a label is about, for its tenant: an online trace by id, a batch trace by job and id."""

from __future__ import annotations

from dataclasses import dataclass

import redis

from ragpulse.config import keys
from ragpulse.exceptions import InvalidBody, TraceNotFound
from ragpulse.labels import sources
from ragpulse.labels.design import content_of
from ragpulse.labels.sources import TraceRef, judge_view
from ragpulse.model.labels import JudgeView
from ragpulse.model.results import TraceResult
from ragpulse.store import online_records
from ragpulse.store import Store


@dataclass(frozen=True)
class Judged:
    """A trace that may be labelled: where it lives, its app, and the judge's verdict (None: it has none)."""

    ref: TraceRef
    app: str
    judge: JudgeView | None
    disagreement: bool
    why_unjudged: str = ""
    content: str = ""
    """The judged content the trace holds (TraceResult.content_key): what its label belongs to."""
    share: float | None = None
    """q in force when the trace was judged (TraceResult.review_share)."""

    def verdict(self, path: str = "$.trace_id") -> JudgeView:
        """The judge's verdict; InvalidBody (422) naming `path` when the trace has none."""
        if self.judge is None:
            message = f"trace {self.ref.trace_id} has no judge verdict to compare with ({self.why_unjudged})"
            raise InvalidBody(message, [{"path": path, "message": message}])
        return self.judge


def from_result(result: TraceResult, job_id: str | None) -> Judged:
    """A stored result as a labellable trace."""
    detail = result.error or ("not judged" if result.judge is None else "no verdict")
    return Judged(TraceRef(result.trace_id, job_id, result.index if job_id else None), result.app,
                  judge_view(result), result.needs_review, f"status {result.status}: {detail}",
                  content_of(result), result.review_share)


def find(client: redis.Redis, store: Store, tenant: str, trace_id: str, job_id: str | None) -> Judged:
    """The tenant's trace; JobNotFound or TraceNotFound (404) when it is not theirs or not there (any more)."""
    if job_id is not None:
        return _batch(store, tenant, job_id, trace_id)
    raw = client.get(keys.review_copy(tenant, trace_id))
    if raw is not None:
        copy = sources.decode(raw)
        return Judged(TraceRef(trace_id), copy.app, copy.judge, copy.disagreement,
                      content=copy.content_key or f"trace:0:{trace_id}", share=copy.review_share)
    record = online_records.read(client, tenant, trace_id)
    if record.result is None:
        return Judged(TraceRef(trace_id), record.app, None, False, f"status {record.status}: not processed yet")
    return from_result(record.result, None)


def _batch(store: Store, tenant: str, job_id: str, trace_id: str) -> Judged:
    store.jobs.get(job_id, tenant)
    result = store.results.of_trace(job_id, trace_id)
    if result is None:
        raise TraceNotFound(f"no trace {trace_id!r} with a result in job {job_id}")
    return from_result(result, job_id)
