"""Evaluate one trace: retrieval metrics, then the judge's verdicts and generation metrics."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.exceptions import JudgeAuthError, JudgeError
from ragpulse.metrics.attribution import attribute
from ragpulse.model.environment import environment_of
from ragpulse.model.scores import Attribution
from ragpulse.metrics.operational import pipeline_figures
from ragpulse.model.results import Security, TraceResult
from ragpulse.reporting.build import diagnostic_k
from ragpulse.judges.citations import attach_citations
from ragpulse.judges.conversation import in_context
from ragpulse.judges.quotes import check_quotes
from ragpulse.model.verdicts import Judge, JudgeOutput, Judgment
from ragpulse.metrics.generation import abstained, generation_scores, hallucinated
from ragpulse.metrics.registry import retrieval_scores
from ragpulse.metrics.retrieval import RELEVANT
from ragpulse.model.trace import BatchOptions, Trace

_key_encoder = msgspec.msgpack.Encoder()


async def evaluate_trace(
    trace: Trace, index: int, options: BatchOptions, judge: Judge | None = None,
    limits: JudgeInputLimits = JudgeInputLimits(), security: Security | None = None,
) -> TraceResult:
    """Retrieval metrics for every k, and generation metrics when a judge is given and the trace has an answer.

    The judge sees the trace cut to `limits` (ragpulse.judges.judge_input); what was cut is recorded on the
    result, and the quote check and the generation metrics read the same cut trace the judge read.

    JudgeAuthError propagates (the job must fail); any other JudgeError (JudgeNotConfigured included: a judge
    without credentials) makes the trace `judge_error` with the reason, keeping its retrieval metrics, labels and
    the failed calls.
    """
    result = TraceResult(**_identity(trace, index), status="ok", **_retrieval(trace, options), security=security)
    await _judge_into(result, trace, options, judge, limits)
    result.attribution = attribution_of(trace, result, options)
    return result


async def _judge_into(result: TraceResult, trace: Trace, options: BatchOptions, judge: Judge | None,
                      limits: JudgeInputLimits) -> None:
    """The judge's verdicts, generation metrics and claims onto `result` (judge_error with the reason on failure)."""
    if judge is None or not trace.answer:
        return
    result.judge = judge.name
    judged, result.judge_input_truncated = for_judging(trace, limits)
    judgments: list[Judgment] = []
    try:
        for _ in range(options.repeats):
            judgments.append(await judge_checked(judge, judged))
        first = judgments[0].output
        result.generation = generation_scores(first, judged)
    except JudgeAuthError:
        raise
    except JudgeError as exc:  # includes output that passed the judge but breaks a metric's precondition
        result.status, result.error = "judge_error", exc.reason
        result.failed_calls = exc.calls or [call for j in judgments for call in j.calls]
        return
    result.claims = first.claims
    result.judgments = judgments
    result.needs_review = any(_disagree(first, j) for j in judgments[1:])
    if result.security is not None and result.security.injection_docs:
        result.security.injection_followed = first.injection_followed


def attribution_of(trace: Trace, result: TraceResult, options: BatchOptions) -> Attribution:
    """The first broken pipeline stage, at the report's diagnostic k."""
    return attribute(qrels=trace.qrels() if trace.has_labels else None,
                     retrieved_ids=[doc.id for doc in trace.retrieved_docs], candidates=trace.candidates,
                     k=diagnostic_k(options.k), answerable_label=trace.answerable,
                     generation=result.generation, claims=result.claims)


def failed_result(trace: Trace, index: int, error: str) -> TraceResult:
    """A trace whose evaluation could not run: kept, with its error, never scored."""
    return TraceResult(**_identity(trace, index), status="failed", retrieval=None, error=error,
                       labels="labelled" if trace.has_labels else "unlabelled")


def skipped_result(trace: Trace, index: int, reason: str, options: BatchOptions,
                   security: Security | None = None) -> TraceResult:
    """A trace left unjudged because a budget ran out: kept with its retrieval metrics, re-runnable."""
    result = TraceResult(**_identity(trace, index), status="skipped_budget", error=reason,
                         **_retrieval(trace, options), security=security)
    result.attribution = attribution_of(trace, result, options)
    return result


def _identity(trace: Trace, index: int) -> dict[str, Any]:
    return {"trace_id": trace.trace_id or str(index), "index": index, "app": trace.app,
            "question_type": trace.question_type, "source": trace.source, "answerable": trace.answerable,
            "item_id": trace.item_id, "split": trace.split, "session_id": trace.session_id, "turn": trace.turn,
            "environment": environment_of(trace.environment),
            "query_hash": None if trace.trace_id else query_hash(trace.query), "pipeline": pipeline_figures(trace),
            "content_key": content_key(trace)}


def query_hash(query: str) -> str:
    """A short stable hash of a query, whitespace-collapsed: what matches id-less traces across two jobs."""
    return hashlib.blake2b(" ".join(query.split()).encode(), digest_size=10).hexdigest()


def content_key(trace: Trace) -> str:
    """A stable hash of what a judge reads of the trace: app, query, earlier turns, retrieved documents (ids and
    texts) and answer. Not the trace id nor the job: a re-run of the same item with the same answer is the same thing
    to judge, and to label, wherever it appears; a dataset item answered differently is not."""
    parts = [trace.app, trace.query, [(t.role, t.content) for t in trace.history or ()],
             [(d.id, d.text) for d in trace.retrieved_docs], trace.answer]
    return hashlib.blake2b(_key_encoder.encode(parts), digest_size=16).hexdigest()


def _retrieval(trace: Trace, options: BatchOptions) -> dict[str, Any]:
    if not trace.has_labels:
        return {"labels": "unlabelled", "retrieval": None}
    qrels = trace.qrels()
    ranked = [doc.id for doc in trace.retrieved_docs]
    scores = retrieval_scores(ranked, qrels, options.k, options.gain)
    if scores is None:
        return {"labels": "no_relevant", "retrieval": None}
    top = set(ranked[:max(options.k)])
    missed = sorted(doc for doc, grade in qrels.items() if grade >= RELEVANT and doc not in top)
    return {"labels": "labelled", "retrieval": scores, "missed_doc_ids": missed}


async def judge_checked(judge: Judge, trace: Trace) -> Judgment:
    """One judgment of `trace` with ragpulse's checks applied to its verdicts (quotes, citation markers, the
    conversation's session evidence), as every judged trace gets them."""
    judgment = await judge.ajudge(trace)
    judgment.output = in_context(attach_citations(check_quotes(judgment.output, trace), trace), trace)
    return judgment


def _disagree(a: JudgeOutput, b: Judgment) -> bool:
    """Two judgments disagree when the hallucination call or the abstention call differs."""
    return hallucinated(a) != hallucinated(b.output) or abstained(a) != abstained(b.output)
