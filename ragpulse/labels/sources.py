"""What a reviewer reads of a judged trace (ReviewSource), and the writes that make a trace reviewable: its entry in
the app's review index and, for an online trace, a copy of its text that outlives the online record.

The text is cut like the judge's input (RAGPULSE_JUDGE_MAX_*_CHARS): the reviewer sees what the judge saw. Only
traces the review design can pick are indexed and copied: the rest could never be served, and their text would be
pure cost (see the README's Review loop for the bytes it takes).
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.labels.design import ReviewDesign, draw
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
        judge=view, disagreement=result.needs_review)


def decode(raw: bytes) -> ReviewSource:
    return _decoder.decode(raw)


def queue_reviewable(pipe: WriteQueue, settings: Settings, tenant: str, ref: TraceRef, result: TraceResult,
                     trace: Trace | None = None) -> None:
    """Queue the writes indexing a judged trace the design can pick (and, given the online `trace`, its copy)."""
    view = judge_view(result)
    u = draw(tenant, result.app, ref.trace_id)
    design = ReviewDesign(q=settings.review_sample_rate)
    if view is None or not design.can_pick(u, result.needs_review, view.hallucinated):
        return
    key = keys.review_pool(tenant, result.app)
    pipe.zadd(key, {ref.member(): u})
    pipe.zremrangebyrank(key, defaults.REVIEW_POOL_CAP, -1)
    pipe.expire(key, max(settings.review_text_ttl_seconds, settings.result_ttl_seconds))
    if trace is not None:
        source = review_source(trace, result, view, JudgeInputLimits.from_settings(settings))
        pipe.set(keys.review_copy(tenant, ref.trace_id), _encoder.encode(source), ex=settings.review_text_ttl_seconds)
