"""What a batch would cost to judge, estimated before anything runs (the dry run)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from ragpulse.config.prices import call_cost
from ragpulse.judges import kinds
from ragpulse.judges.prompt import JUDGE_TASK, user_message
from ragpulse.model.trace import BatchOptions, Trace

OUTPUT_TOKENS_BASE = 120
"""Estimated output tokens of a verdict before claims: relevance, flags, reasons."""
OUTPUT_TOKENS_PER_CLAIM = 130
"""Estimated output tokens per answer sentence (its copy, claim text, reasoning, evidence quotes, verdict)."""
OUTPUT_TOKENS_PER_DOC = 20
"""Estimated output tokens per retrieved document (its context-relevance entry: rank, id, score)."""
_SENTENCE = re.compile(r"[.!?](\s|$)")


class Estimate(msgspec.Struct, kw_only=True):
    """What a batch would cost to judge, before anything runs."""

    judge: str
    model: str | None
    judge_calls: int
    input_tokens: int
    """Uncached input tokens: every call's trace, plus the fixed prefix on calls where no cache holds it."""
    output_tokens: int
    cost_usd: float | None
    price_known: bool
    cache_read_input_tokens: int = 0
    """The fixed prefix (system prompt, examples, tool) read from the prompt cache: every call after the first."""
    cache_creation_input_tokens: int = 0
    """The fixed prefix written to the prompt cache: once, by the first call."""
    delivery: str = "interactive"
    """The delivery `cost_usd` is priced at: the batch's `options.delivery` when its judge has a batch API."""
    cost_by_delivery: dict[str, float] | None = None
    """`cost_usd` under each delivery the judge offers (interactive; batch at half price, its cache writes at the
    1-hour TTL's rate); None when the judge has no batch API or the model no price."""
    method: str = ("characters / 3.5 for input; the fixed prefix written to the prompt cache once and read by every "
                   "later call when the judge caches it and it reaches the model's minimum; 120 + 130 per answer "
                   "sentence + 20 per document for output")


def estimate_trace_tokens(trace: Trace) -> tuple[int, int]:
    """(input, output) tokens one judge call on this trace is expected to use; input includes the fixed prefix."""
    input_tokens = int(JUDGE_TASK.estimate_input_tokens(len(user_message(trace))))
    sentences = max(1, len(_SENTENCE.findall(trace.answer or "")))
    output = OUTPUT_TOKENS_BASE + OUTPUT_TOKENS_PER_CLAIM * sentences + OUTPUT_TOKENS_PER_DOC * len(trace.retrieved_docs)
    return input_tokens, output


def cache_split(calls: int, input_tokens: int, cached: bool) -> tuple[int, int, int]:
    """(uncached input, cache reads, cache writes) of `calls` calls sending `input_tokens` in all, prefixes included.

    With a cached prefix the first call writes it and every later one reads it (a judge keeps calling well within
    the cache's 5-minute lifetime); concurrent first calls may each write, which this does not count.
    """
    if not cached or not calls:
        return input_tokens, 0, 0
    prefix = int(JUDGE_TASK.fixed_tokens)
    return input_tokens - prefix * calls, prefix * (calls - 1), prefix


def estimate_batch(traces: Sequence[Trace], options: BatchOptions, model: str | None,
                   prices: Mapping[str, tuple[float, float]]) -> Estimate:
    """Judge calls, tokens and cost of a batch: one call per answered trace and repeat; a judge not billable costs 0.
    Cache reads and writes of the fixed prefix are priced as the provider bills them (ragpulse.config.prices)."""
    judge = options.judge or "none"
    judged = [t for t in traces if t.answer] if kinds.judges_traces(judge) else []
    tokens = [estimate_trace_tokens(t) for t in judged]
    calls = len(judged) * options.repeats
    if not kinds.is_billable(judge):
        return Estimate(judge=judge, model=None, judge_calls=calls, input_tokens=0, output_tokens=0,
                        cost_usd=0.0, price_known=True)
    cached = kinds.caches_prompt(judge) and model is not None and JUDGE_TASK.cacheable(model)
    uncached, reads, writes = cache_split(calls, sum(i for i, _ in tokens) * options.repeats, cached)
    output_tokens = sum(o for _, o in tokens) * options.repeats
    # A model without a price (a self-hosted one, unless RAGPULSE_JUDGE_PRICES names it) is counted at 0 when it
    # runs; the estimate says the price is unknown rather than promise that.
    deliveries = ("interactive", "batch") if kinds.delivers_in_batches(judge, "batch") else ("interactive",)
    by_delivery = {d: round(call_cost(prices, model, uncached, output_tokens, reads, writes, d), 6)
                   for d in deliveries} if model in prices else None
    delivery = options.delivery if options.delivery in deliveries else "interactive"
    return Estimate(judge=judge, model=model, judge_calls=calls, input_tokens=uncached, output_tokens=output_tokens,
                    cache_read_input_tokens=reads, cache_creation_input_tokens=writes,
                    price_known=by_delivery is not None, cost_usd=by_delivery[delivery] if by_delivery else None,
                    delivery=delivery, cost_by_delivery=by_delivery if len(deliveries) > 1 else None)
