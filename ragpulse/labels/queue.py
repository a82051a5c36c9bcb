"""The review queue: the next judged contents of an app to label, in hash order, each with its inclusion probability.

The app's review index holds the judged contents the design can pick (labels.sources), scored by their draw u; each
is served once, through its newest trace still readable, however many jobs re-ran it. Walking the index in score
order, each content is placed now (labels.placing) with the share it was first judged under: the uniform pool
(u < q) comes in hash order, independent of content, and the targeted picks (q <= u < pi) in the same order. Until
the uniform sample has defaults.MIN_ESTIMATION_LABELS labels the queue serves it first (targeted picks only fill the
page); after that the two alternate, a targeted pick first. A content already labelled is not served again: with
`reviewer`, one that reviewer labelled (others' labels make a second opinion, which the inter-annotator figures
need); without, one anybody labelled. Index entries none of whose traces is left are removed as they are met.
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

REFS_TRIED = 3
"""Traces of one content read, newest first, for a readable copy: older ones have usually expired with their job."""


@dataclass
class QueueRequest:
    """One GET /v1/apps/{app}/review."""

    tenant: str
    app: str
    n: int
    reviewer: str | None
    near_threshold: bool
    share: float
    """The app's review share now: the share of contents judged without a stored one, and the pool's count."""


@dataclass
class Content:
    """One index entry as the queue reads it."""

    key: str
    u: float
    q: float
    refs: list[TraceRef]
    """Its newest traces, up to REFS_TRIED."""
    appearances: int
    source: ReviewSource | None = None


def build(reader: SourceReader, labels: LabelStore, ask: QueueRequest, uniform_labelled: int) -> ReviewQueue:
    """Up to `ask.n` items, uniform first until the estimation sample has its labels, then interleaved."""
    uniform, targeted = _candidates(reader, labels, ask)
    if uniform_labelled < defaults.MIN_ESTIMATION_LABELS:
        items = [*uniform, *targeted][:ask.n]
    else:
        items = [i for i in chain.from_iterable(zip_longest(targeted, uniform)) if i is not None][:ask.n]
    pool = reader.store.redis.zcount(keys.review_pool(ask.tenant, ask.app), 0, f"({ask.share}")
    return ReviewQueue(app=ask.app, items=items, estimation=Estimation(
        pool=pool, labelled=uniform_labelled, needed=defaults.MIN_ESTIMATION_LABELS))


def _candidates(reader: SourceReader, labels: LabelStore, ask: QueueRequest) -> tuple[list[ReviewItem], list[ReviewItem]]:
    client, key = reader.store.redis, keys.review_pool(ask.tenant, ask.app)
    uniform: list[ReviewItem] = []
    targeted: list[ReviewItem] = []
    start = 0
    while (len(uniform) < ask.n or len(targeted) < ask.n) and start < defaults.REVIEW_POOL_CAP:
        entries = client.zrange(key, start, start + defaults.REVIEW_SCAN_BATCH - 1, withscores=True)
        if not entries:
            break
        start += len(entries)
        contents = _read(reader, ask, entries)
        gone = [c.key for c in contents if c.source is None]
        if gone:
            client.zrem(key, *gone)
            start -= len(gone)
        live = [c for c in contents if c.source is not None]
        done = labels.of_contents(ask.tenant, [c.key for c in live])
        for content, labelled in zip(live, done, strict=True):
            placement = _placement(content, ask.near_threshold)
            if placement is not None and not _served(labelled, ask.reviewer):
                bucket = uniform if placement.sample == "uniform" else targeted
                bucket.append(_item(content, placement, len(labelled)))
    return uniform[:ask.n], targeted[:ask.n]


def _read(reader: SourceReader, ask: QueueRequest, entries: list[tuple[bytes, float]]) -> list[Content]:
    """The index entries with their design and their newest readable trace (trying up to REFS_TRIED of them)."""
    client = reader.store.redis
    with client.pipeline(transaction=False) as pipe:
        for member, _ in entries:
            refs = keys.review_refs(ask.tenant, ask.app, member.decode())
            pipe.zrevrange(refs, 0, REFS_TRIED - 1)
            pipe.zcard(refs)
            pipe.hget(keys.review_content(ask.tenant, ask.app, member.decode()), "q")
        rows = pipe.execute()
    contents = [Content(member.decode(), u, float(q) if q is not None else ask.share,
                        [TraceRef.parse(ref) for ref in refs], count)
                for (member, u), refs, count, q in zip(entries, rows[::3], rows[1::3], rows[2::3], strict=True)]
    for attempt in range(REFS_TRIED):
        wanting = [c for c in contents if c.source is None and len(c.refs) > attempt]
        if not wanting:
            break
        for content, source in zip(wanting, reader.read([c.refs[attempt] for c in wanting]), strict=True):
            content.source = source
    return contents


def _placement(content: Content, near: bool) -> Placement | None:
    source, design = content.source, ReviewDesign(q=content.q)
    if source is None:
        return None
    placement = design.place(content.u, design.stratum(source.disagreement, source.judge.hallucinated, near))
    return None if placement.sample == "ad_hoc" else placement


def _served(done: list[Label], reviewer: str | None) -> bool:
    """Whether the content was labelled already (by `reviewer`, or by anybody when no reviewer is named)."""
    return any(reviewer is None or label.reviewer == reviewer for label in done)


def _item(content: Content, placement: Placement, labels: int) -> ReviewItem:
    source = content.source
    assert source is not None  # noqa: S101 - _placement refused a content without one
    return ReviewItem(trace_id=source.trace_id, job_id=source.job_id, app=source.app, reason=placement.reason,
                      inclusion_probability=placement.inclusion_probability, query=source.query,
                      answer=source.answer, documents=source.documents, claims=source.claims, judge=source.judge,
                      labels=labels, content_key=content.key, appearances=max(1, content.appearances))
