"""What a batch would cost to judge, estimated before anything runs (the dry run)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from ragpulse.config.prices import call_cost
from ragpulse.judges import kinds
from ragpulse.judges.prompt import estimate_input_tokens, user_message
from ragpulse.model.trace import BatchOptions, Trace

OUTPUT_TOKENS_BASE = 120
"""Estimated output tokens of a verdict before claims: relevance, flags, reasons."""
OUTPUT_TOKENS_PER_CLAIM = 110
"""Estimated output tokens per answer sentence (claim text, reasoning, verdict, evidence quotes)."""
OUTPUT_TOKENS_PER_DOC = 20
"""Estimated output tokens per retrieved document (its context-relevance entry: rank, id, score)."""
_SENTENCE = re.compile(r"[.!?](\s|$)")


class Estimate(msgspec.Struct, kw_only=True):
    """What a batch would cost to judge, before anything runs."""

    judge: str
    model: str | None
    judge_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    price_known: bool
    method: str = "characters / 3.5 for input; 120 + 110 per answer sentence + 20 per document for output"


def estimate_trace_tokens(trace: Trace) -> tuple[int, int]:
    """(input, output) tokens one judge call on this trace is expected to use."""
    input_tokens = int(estimate_input_tokens(len(user_message(trace))))
    sentences = max(1, len(_SENTENCE.findall(trace.answer or "")))
    output = OUTPUT_TOKENS_BASE + OUTPUT_TOKENS_PER_CLAIM * sentences + OUTPUT_TOKENS_PER_DOC * len(trace.retrieved_docs)
    return input_tokens, output


def estimate_batch(traces: Sequence[Trace], options: BatchOptions, model: str | None,
                   prices: Mapping[str, tuple[float, float]]) -> Estimate:
    """Judge calls, tokens and cost of a batch: one call per answered trace and repeat; a judge not billable costs 0."""
    judge = options.judge or "none"
    judged = [t for t in traces if t.answer] if kinds.judges_traces(judge) else []
    tokens = [estimate_trace_tokens(t) for t in judged]
    calls = len(judged) * options.repeats
    input_tokens = sum(i for i, _ in tokens) * options.repeats
    output_tokens = sum(o for _, o in tokens) * options.repeats
    if not kinds.is_billable(judge):
        return Estimate(judge=judge, model=None, judge_calls=calls, input_tokens=0, output_tokens=0,
                        cost_usd=0.0, price_known=True)
    # A model without a price (a self-hosted one, unless RAGPULSE_JUDGE_PRICES names it) is counted at 0 when it
    # runs; the estimate says the price is unknown rather than promise that.
    cost = round(call_cost(prices, model, input_tokens, output_tokens), 6) if model in prices else None
    return Estimate(judge=judge, model=model, judge_calls=calls, input_tokens=input_tokens,
                    output_tokens=output_tokens, price_known=cost is not None, cost_usd=cost)
