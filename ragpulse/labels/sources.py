"""What a reviewer reads of a judged trace (ReviewSource), and the writes that make a trace reviewable: its entry in
the app's review index and, for an online trace, a copy of its text that outlives the online record.

The index holds judged contents (TraceResult.content_key), each with the traces it was judged in: the same item
re-run in six jobs is one entry, served once, whose label applies to all six. The text is cut like the judge's input
(RAGPULSE_JUDGE_MAX_*_CHARS): the reviewer sees what the judge saw. Only traces the review design can pick are
indexed and copied: the rest could never be served, and their text would be
pure cost (see the README's Review loop for the bytes it takes).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import msgspec
import redis

from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.labels.design import ReviewDesign, content_of, draw
from ragpulse.labels.store import SEP
from ragpulse.model.labels import ClaimText, DocumentText, JudgeClaim, JudgeView
from ragpulse.model.results import TraceResult
from ragpulse.model.trace import Trace
from ragpulse.store.atomic import WriteQueue



@dataclass(frozen=True)
class TraceRef:
    """Where a judged trace lives: an online record (no job), or index `index` of batch job `job_id`."""

    trace_id: str
    job_id: str | None = None
    index: int | None = None

    def member(self) -> str:
        """The review index member: `o<SEP>trace` or `b<SEP>job<SEP>index<SEP>trace`."""
        if self.job_id is None:
            return f"o{SEP}{self.trace_id}"
        return SEP.join(("b", self.job_id, str(self.index), self.trace_id))

    @classmethod
    def parse(cls, member: bytes | str) -> TraceRef:
        text = member.decode() if isinstance(member, bytes) else member
        if text.startswith("o" + SEP):
            return cls(text[2:])
        _, job_id, index, trace_id = text.split(SEP, 3)
        return cls(trace_id, job_id, int(index))


class ReviewSource(msgspec.Struct, kw_only=True):
    """A judged trace as a reviewer reads it, with the judge's verdicts (shown only after the reviewer answers)."""

    trace_id: str
    job_id: str | None = None
    app: str
    query: str
    answer: str | None
    documents: list[DocumentText]
    claims: list[ClaimText]
    judge: JudgeView
    disagreement: bool
    """Repeated judgments of the trace disagreed (BatchOptions.repeats = 2)."""
    content_key: str | None = None
    """The judged content the trace holds (TraceResult.content_key)."""
    review_share: float | None = None
    """q in force when the trace was judged (TraceResult.review_share)."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(ReviewSource)


def judge_view(result: TraceResult) -> JudgeView | None:
    """The judge's verdict on a result, or None when it has none (not judged, or the judge failed)."""
    if result.generation is None:
        return None
    version = result.judgments[0].prompt_version if result.judgments else "unknown"
    claims = [JudgeClaim(index=i, verdict=c.verdict, reason=c.reason, quote=c.quote)
              for i, c in enumerate(result.claims)]
    return JudgeView(judge=result.judge or "unknown", prompt_version=version,
                     hallucinated=result.generation.hallucinated, abstained=result.generation.abstained,
                     claims=claims, unanswerable=bool(result.generation.unanswerable))


def review_source(trace: Trace, result: TraceResult, view: JudgeView, limits: JudgeInputLimits,
                  job_id: str | None = None) -> ReviewSource:
    """The reviewer's copy of a judged trace: its text cut as the judge's input was."""
    cut, _ = for_judging(trace, limits)
    return ReviewSource(
        trace_id=result.trace_id, job_id=job_id, app=result.app, query=cut.query, answer=cut.answer,
        documents=[DocumentText(doc_id=d.id, text=d.text) for d in cut.retrieved_docs],
        claims=[ClaimText(index=i, text=c.text) for i, c in enumerate(result.claims)],
        judge=view, disagreement=result.needs_review, content_key=content_of(result),
        review_share=result.review_share)


def decode(raw: bytes) -> ReviewSource:
    return _decoder.decode(raw)


def queue_reviewable(pipe: WriteQueue, settings: Settings, tenant: str, ref: TraceRef, result: TraceResult,
                     trace: Trace | None = None) -> None:
    """Queue the writes indexing a judged trace whose content the design can pick: the content in the app's pool, its
    design as first judged (HSETNX: a re-run never moves it), and the trace among the content's appearances (and,
    given the online `trace`, its copy)."""
    view = judge_view(result)
    content, app = content_of(result), result.app
    u = draw(tenant, app, content) if result.review_draw is None else result.review_draw
    q = settings.review_sample_rate if result.review_share is None else result.review_share
    if view is None:
        return
    pool_ttl = max(settings.review_text_ttl_seconds, settings.result_ttl_seconds)
    refs_ttl = max(pool_ttl, settings.label_ttl_seconds)
    key, design, refs = (keys.review_pool(tenant, app), keys.review_content(tenant, app, content),
                         keys.review_refs(tenant, app, content))
    # Kept for every judged content, picked or not: a re-run after the share was raised must find the share its
    # content was first judged under, or it would enter the pool with a probability it never had.
    pipe.hsetnx(design, "q", repr(q))
    pipe.hsetnx(design, "u", repr(u))
    pipe.expire(design, refs_ttl)
    if not ReviewDesign(q=q).can_pick(u, result.needs_review, view.hallucinated):
        return
    pipe.zadd(key, {content: u})
    pipe.zremrangebyrank(key, defaults.REVIEW_POOL_CAP, -1)
    pipe.expire(key, pool_ttl)
    pipe.zadd(refs, {ref.member(): time.time()})
    pipe.zremrangebyrank(refs, 0, -defaults.REVIEW_REFS_PER_CONTENT - 1)
    pipe.expire(refs, refs_ttl)
    if trace is not None:
        source = review_source(trace, result, view, JudgeInputLimits.from_settings(settings))
        pipe.set(keys.review_copy(tenant, ref.trace_id), _encoder.encode(source), ex=settings.review_text_ttl_seconds)


def appearances(client: redis.Redis, tenant: str, contents: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Content key -> the judged traces known to hold it, for each (app, content key)."""
    wanted = list(contents)
    with client.pipeline(transaction=False) as pipe:
        for app, content in wanted:
            pipe.zcard(keys.review_refs(tenant, app, content))
        counts = pipe.execute()
    return {content: count for (_, content), count in zip(wanted, counts, strict=True)}
