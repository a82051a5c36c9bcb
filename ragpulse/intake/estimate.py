"""What a batch would cost to judge, estimated before anything runs (the dry run)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import msgspec

from ragpulse.config.prices import caches_by_itself, call_cost
from ragpulse.judges import kinds
from ragpulse.judges.prompt import JUDGE_TASK, user_message
from ragpulse.judges.task import ToolTask
from ragpulse.model.trace import BatchOptions, Trace

CHARS_PER_TOKEN = 4.0
"""Characters of the request's JSON per token: the rule of thumb both providers document for English text (and what
the loopback fakes count). The judge's own spend reservations keep the safer 3.5 (ragpulse.judges.task)."""
REQUEST_FRAMING_CHARS = 200
"""JSON around the prefix and the message that every request carries (model, max_tokens, tool_choice, the message's
role; the keys and brackets of the system blocks and the strict flag add PREFIX_FRAMING_CHARS)."""
PREFIX_FRAMING_CHARS = 130
"""JSON around the system prompt, the examples and the tool in the cached prefix (block types, strict, the marker)."""
OUTPUT_CHARS_BASE = 240
"""Output JSON of a verdict before its sentences and documents: relevance, its reason, flags, nulls."""
OUTPUT_CHARS_PER_SENTENCE = 120
"""Output JSON per answer sentence besides its two copies: keys, verdict, a short reasoning, and (for the supported
ones) the evidence's doc id and quote, on average. Fitted on the examples as a literal judge writes them (the fakes):
a heuristic."""
OUTPUT_SENTENCE_COPIES = 2
"""Times a verdict writes each answer sentence in full: as the sentence and as its claim."""
OUTPUT_CHARS_PER_DOC = 40
"""Output JSON per retrieved document (its context-relevance entry: rank, score) besides its id."""
OUTPUT_CHARS_PER_FACT = 30
"""Output JSON of the reference's key fact besides its text."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


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
    method: str = ("the request's JSON (prefix, message, framing) / 4 characters per token for input; the fixed prefix "
                   "written to the prompt cache once and read by every later call when the judge marks it for the "
                   "cache or the provider caches it by itself (OpenAI's models) and it reaches the model's minimum; "
                   "output a heuristic: the verdict's JSON with each answer sentence "
                   "written twice, a short reasoning and sometimes a quote, / 4")


def prefix_tokens(task: ToolTask = JUDGE_TASK) -> int:
    """Tokens of the fixed prefix every call sends (the tool, the system prompt, the examples): what a prompt cache
    holds. `task`: the judge's task as its model is sent it (`JUDGE_TASK.for_model`, with any worked examples)."""
    chars = sum(len(json.dumps(part)) for part in (task.tool, task.system, task.examples)) + PREFIX_FRAMING_CHARS
    return int(chars / CHARS_PER_TOKEN)


def output_tokens(trace: Trace) -> int:
    """Tokens of the verdict a judge writes for `trace` (a heuristic): every answer sentence written twice (the
    sentence, its claim) with a short reasoning and sometimes a quote, a relevance entry per document, the reference's
    key fact."""
    sentences = [s for s in _SENTENCE.split((trace.answer or "").strip()) if s] or [""]
    chars = (OUTPUT_CHARS_BASE
             + sum(OUTPUT_SENTENCE_COPIES * len(json.dumps(s)) + OUTPUT_CHARS_PER_SENTENCE for s in sentences)
             + sum(OUTPUT_CHARS_PER_DOC + len(json.dumps(doc.id)) for doc in trace.retrieved_docs)
             + (OUTPUT_CHARS_PER_FACT + len(json.dumps(trace.reference_answer)) if trace.reference_answer else 0))
    return int(chars / CHARS_PER_TOKEN)


def estimate_trace_tokens(trace: Trace, task: ToolTask = JUDGE_TASK) -> tuple[int, int]:
    """(input, output) tokens one judge call on this trace is expected to use; input includes the fixed prefix.

    Input is the request's JSON as sent (the prefix, the trace's message JSON-escaped, the framing) at
    CHARS_PER_TOKEN."""
    message = len(json.dumps(user_message(trace))) + REQUEST_FRAMING_CHARS
    return prefix_tokens(task) + int(message / CHARS_PER_TOKEN), output_tokens(trace)


def cache_split(calls: int, input_tokens: int, cached: bool, task: ToolTask = JUDGE_TASK) -> tuple[int, int, int]:
    """(uncached input, cache reads, cache writes) of `calls` calls sending `input_tokens` in all, prefixes included.

    With a cached prefix the first call writes it and every later one reads it (a judge keeps calling well within
    the cache's lifetime); concurrent first calls may each write, which this does not count.
    """
    if not cached or not calls:
        return input_tokens, 0, 0
    prefix = prefix_tokens(task)
    return input_tokens - prefix * calls, prefix * (calls - 1), prefix


def estimate_batch(traces: Sequence[Trace], options: BatchOptions, model: str | None,
                   prices: Mapping[str, tuple[float, float]]) -> Estimate:
    """Judge calls, tokens and cost of a batch: one call per answered trace and repeat; a judge not billable costs 0.
    Cache reads and writes of the fixed prefix are priced as the provider bills them (ragpulse.config.prices)."""
    judge = options.judge or "none"
    judged = [t for t in traces if t.answer] if kinds.judges_traces(judge) else []
    # A judge that caches its prefix sends a model the worked examples that make it cacheable there.
    task = JUDGE_TASK.for_model(model) if kinds.caches_prompt(judge) and model is not None else JUDGE_TASK
    tokens = [estimate_trace_tokens(t, task) for t in judged]
    calls = len(judged) * options.repeats
    if not kinds.is_billable(judge):
        return Estimate(judge=judge, model=None, judge_calls=calls, input_tokens=0, output_tokens=0,
                        cost_usd=0.0, price_known=True)
    # Cached when the judge marks its prefix for the cache, or when the model's provider caches it unasked (OpenAI);
    # either way only a prefix that reaches the model's minimum cacheable length.
    cached = model is not None and (kinds.caches_prompt(judge) or caches_by_itself(model)) and task.cacheable(model)
    uncached, reads, writes = cache_split(calls, sum(i for i, _ in tokens) * options.repeats, cached, task)
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
