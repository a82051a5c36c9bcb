"""The review queue: the next traces of an app to label, in hash order, each with its inclusion probability.

The app's review index holds the judged traces the design can pick, scored by their draw u. Walking it in score
order, each trace is placed now (labels.placing): the uniform pool (u < q) comes in hash order, independent of
content, and the targeted picks (q <= u < pi) in the same order. Until the uniform sample has
defaults.REVIEW_ESTIMATION_NEEDED labels the queue serves it first (targeted picks only fill the page); after that
the two alternate, a targeted pick first. A trace already labelled is not served again: with `reviewer`, one that
reviewer labelled (others' labels make a second opinion, which the inter-annotator figures need); without, one
anybody labelled. Index entries whose trace has expired are removed as they are met.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, zip_longest

from ragpulse.config import defaults, keys
from ragpulse.labels.design import Placement, ReviewDesign
from ragpulse.labels.reading import SourceReader
from ragpulse.labels.sources import ReviewSource, TraceRef
from ragpulse.labels.store import LabelStore
from ragpulse.model.labels import Estimation, Label, ReviewItem, ReviewQueue


@dataclass
class QueueRequest:
    """One GET /v1/apps/{app}/review."""

    tenant: str
    app: str
    n: int
    reviewer: str | None
    near_threshold: bool


def build(reader: SourceReader, labels: LabelStore, design: ReviewDesign, ask: QueueRequest,
          uniform_labelled: int) -> ReviewQueue:
    """Up to `ask.n` items, uniform first until the estimation sample has its labels, then interleaved."""
    uniform, targeted = _candidates(reader, labels, design, ask)
    if uniform_labelled < defaults.REVIEW_ESTIMATION_NEEDED:
        items = [*uniform, *targeted][:ask.n]
    else:
        items = [i for i in chain.from_iterable(zip_longest(targeted, uniform)) if i is not None][:ask.n]
    pool = reader.store.redis.zcount(keys.review_pool(ask.tenant, ask.app), 0, f"({design.q}")
    return ReviewQueue(app=ask.app, items=items, estimation=Estimation(
        pool=pool, labelled=uniform_labelled, needed=defaults.REVIEW_ESTIMATION_NEEDED))


def _candidates(reader: SourceReader, labels: LabelStore, design: ReviewDesign,
                ask: QueueRequest) -> tuple[list[ReviewItem], list[ReviewItem]]:
    client, key = reader.store.redis, keys.review_pool(ask.tenant, ask.app)
    uniform: list[ReviewItem] = []
    targeted: list[ReviewItem] = []
    start = 0
    while (len(uniform) < ask.n or len(targeted) < ask.n) and start < defaults.REVIEW_POOL_CAP:
        entries = client.zrange(key, start, start + defaults.REVIEW_SCAN_BATCH - 1, withscores=True)
        if not entries:
            break
        start += len(entries)
        refs = [TraceRef.parse(member) for member, _ in entries]
        found = reader.read(refs)
        labelled = labels.of_traces(ask.tenant, [(ref.job_id, ref.trace_id) for ref in refs])
        gone = [member for (member, _), source in zip(entries, found, strict=True) if source is None]
        if gone:
            client.zrem(key, *gone)
            start -= len(gone)
        for (_, u), source, done in zip(entries, found, labelled, strict=True):
            placement = _placement(design, u, source, ask.near_threshold)
            if placement is not None and not _served(done, ask.reviewer):
                bucket = uniform if placement.sample == "uniform" else targeted
                bucket.append(_item(source, placement, len(done)))
    return uniform[:ask.n], targeted[:ask.n]


def _placement(design: ReviewDesign, u: float, source: ReviewSource | None, near: bool) -> Placement | None:
    if source is None:
        return None
    placement = design.place(u, design.stratum(source.disagreement, source.judge.hallucinated, near))
    return None if placement.sample == "ad_hoc" else placement


def _served(done: list[Label], reviewer: str | None) -> bool:
    """Whether the trace was labelled already (by `reviewer`, or by anybody when no reviewer is named)."""
    return any(reviewer is None or label.reviewer == reviewer for label in done)


def _item(source: ReviewSource, placement: Placement, labels: int) -> ReviewItem:
    return ReviewItem(trace_id=source.trace_id, job_id=source.job_id, app=source.app, reason=placement.reason,
                      inclusion_probability=placement.inclusion_probability, query=source.query,
                      answer=source.answer, documents=source.documents, claims=source.claims, judge=source.judge,
                      labels=labels)
