"""The app's own operational figures: per-stage latency, cost and context length per query, read off the trace
(`latency_ms`, `usage`, the documents' text) and summarised for the report."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from ragpulse.metrics.stats import estimate
from ragpulse.model.estimate import Estimate
from ragpulse.model.results import Pipeline, TraceResult
from ragpulse.model.trace import Trace

STAGES = ("retrieval", "rerank", "generation", "total")
CHARS_PER_TOKEN = 4
"""Context tokens are estimated as characters / 4 (English prose averages ~4 characters a token); not a tokenizer."""


class Percentiles(msgspec.Struct, kw_only=True):
    """p50, p90 and p99 of one figure over the traces that give it."""

    n: int
    p50: float
    p90: float
    p99: float
    max: float


class Operations(msgspec.Struct, kw_only=True):
    """The report's operational section."""

    latency_ms: dict[str, Percentiles]
    """Per stage the traces gave (`retrieval`, `rerank`, `generation`, `total`)."""
    cost_usd: Estimate | None
    """Mean cost per query (the app's own `usage.cost_usd`) with its bootstrap interval."""
    prompt_tokens: Percentiles | None
    completion_tokens: Percentiles | None
    context_tokens: Percentiles | None
    """Estimated tokens of the retrieved text per query (characters / 4)."""


def pipeline_figures(trace: Trace) -> Pipeline:
    """What a result keeps of the trace's own latency, usage and context size."""
    latency = trace.latency_ms
    usage = trace.usage
    chars = sum(len(doc.text or "") for doc in trace.retrieved_docs)
    return Pipeline(
        latency_ms={stage: value for stage in STAGES
                    if latency is not None and (value := getattr(latency, stage)) is not None},
        prompt_tokens=usage.prompt_tokens if usage else None,
        completion_tokens=usage.completion_tokens if usage else None,
        cost_usd=usage.cost_usd if usage else None, context_tokens=-(-chars // CHARS_PER_TOKEN))


def operations(results: Sequence[TraceResult]) -> Operations:
    """Percentiles and the mean cost over the results that carry each figure."""
    figures = [r.pipeline for r in results if r.pipeline is not None]
    costs = [p.cost_usd for p in figures if p.cost_usd is not None]
    return Operations(
        latency_ms={stage: pct for stage in STAGES
                    if (pct := percentiles([p.latency_ms[stage] for p in figures if stage in p.latency_ms]))},
        cost_usd=estimate(costs, "mean") if costs else None,
        prompt_tokens=percentiles([p.prompt_tokens for p in figures if p.prompt_tokens is not None]),
        completion_tokens=percentiles([p.completion_tokens for p in figures if p.completion_tokens is not None]),
        context_tokens=percentiles([p.context_tokens for p in figures if p.context_tokens]))


def percentiles(values: Sequence[float]) -> Percentiles | None:
    """Linear-interpolated percentiles (numpy's default); None without values."""
    if not values:
        return None
    p50, p90, p99 = np.percentile(np.asarray(values, dtype=float), [50, 90, 99])
    return Percentiles(n=len(values), p50=float(p50), p90=float(p90), p99=float(p99), max=float(max(values)))
