"""Judge cost: prices per model, estimates before a run (dry run), and budgets during it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import msgspec

from ragpulse.exceptions import ConfigError
from ragpulse.judges import catalog
from ragpulse.judges.prompt import estimate_input_tokens, user_message
from ragpulse.schema import BatchOptions, Trace

DEFAULT_PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
}
"""USD per million (input, output) tokens; list prices at the time of writing. Override with RAGPULSE_JUDGE_PRICES."""
CACHE_READ_PRICE_FACTOR = 0.1
"""A prompt-cache read costs this multiple of the model's input price."""
CACHE_WRITE_PRICE_FACTOR = 1.25
"""A prompt-cache write (the default 5-minute cache) costs this multiple of the model's input price."""

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


def parse_prices(raw: str | None) -> dict[str, tuple[float, float]]:
    """RAGPULSE_JUDGE_PRICES: JSON {model: [input_usd_per_mtok, output_usd_per_mtok]} merged over the defaults."""
    prices = dict(DEFAULT_PRICES_PER_MTOK)
    if not raw:
        return prices
    try:
        given = json.loads(raw)
        prices.update({model: (float(pair[0]), float(pair[1])) for model, pair in given.items()})
    except (ValueError, TypeError, AttributeError, IndexError, KeyError):
        raise ConfigError('RAGPULSE_JUDGE_PRICES must be JSON like {"model": [3.0, 15.0]}') from None
    return prices


def call_cost(prices: Mapping[str, tuple[float, float]], model: str, input_tokens: int, output_tokens: int,
              cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0) -> float:
    """USD cost of one call; 0.0 for a model without a price (its tokens are still counted).

    input_price * (input + 0.1 * cache_read + 1.25 * cache_creation) + output_price * output, per million tokens;
    `input_tokens` are the uncached ones, as the provider reports them.
    """
    per_in, per_out = prices.get(model, (0.0, 0.0))
    billed_input = (input_tokens + CACHE_READ_PRICE_FACTOR * cache_read_input_tokens
                    + CACHE_WRITE_PRICE_FACTOR * cache_creation_input_tokens)
    return (billed_input * per_in + output_tokens * per_out) / 1_000_000


def estimate_trace_tokens(trace: Trace) -> tuple[int, int]:
    """(input, output) tokens one judge call on this trace is expected to use."""
    input_tokens = int(estimate_input_tokens(len(user_message(trace))))
    sentences = max(1, len(_SENTENCE.findall(trace.answer or "")))
    output = OUTPUT_TOKENS_BASE + OUTPUT_TOKENS_PER_CLAIM * sentences + OUTPUT_TOKENS_PER_DOC * len(trace.retrieved_docs)
    return input_tokens, output


def estimate_batch(traces: Sequence[Trace], options: BatchOptions, model: str,
                   prices: Mapping[str, tuple[float, float]]) -> Estimate:
    """Judge calls, tokens and cost of a batch: one call per answered trace and repeat; a judge not billable costs 0."""
    judge = options.judge or "none"
    judged = [t for t in traces if t.answer] if catalog.judges_traces(judge) else []
    tokens = [estimate_trace_tokens(t) for t in judged]
    calls = len(judged) * options.repeats
    input_tokens = sum(i for i, _ in tokens) * options.repeats
    output_tokens = sum(o for _, o in tokens) * options.repeats
    if not catalog.is_billable(judge):
        return Estimate(judge=judge, model=None, judge_calls=calls, input_tokens=0, output_tokens=0,
                        cost_usd=0.0, price_known=True)
    known = model in prices
    return Estimate(judge=judge, model=model, judge_calls=calls, input_tokens=input_tokens,
                    output_tokens=output_tokens, price_known=known,
                    cost_usd=round(call_cost(prices, model, input_tokens, output_tokens), 6) if known else None)


def budget_exhausted(job_spent: float, tenant_spent: float, job_budget: float | None,
                     tenant_daily_budget: float | None) -> str | None:
    """Which budget ran out, or None."""
    if job_budget is not None and job_spent >= job_budget:
        return f"job budget of ${job_budget:.4f} spent (${job_spent:.4f})"
    if tenant_daily_budget is not None and tenant_spent >= tenant_daily_budget:
        return f"tenant daily budget of ${tenant_daily_budget:.4f} spent (${tenant_spent:.4f})"
    return None
