"""Judge cost of 1,000 traces of the examples under each delivery (issue 27): interactive, interactive + prompt cache,
batch, batch + cache, from the loopback fake's token counts priced by the price table, beside the dry run's estimate.

The requests are the judge's own (AnthropicProvider.params: the system prompt, the strict tool, the trace), with the
prefix unmarked (no cache), marked with the 5-minute cache (interactive) or the 1-hour one (batch); the fake counts
tokens as characters / 4 and reports the marked prefix as a cache write on its first request and a read after. The
fake writes the cache once per run, as a steady stream of calls does; a real batch processes its requests in parallel
and may write it several times. Beside each row, the dry run's estimate of the same (ragpulse.intake.estimate: the
cached rows are what `POST /v1/batches?dry_run=true` answers for Sonnet, whose prefix is cached) and how far it is from
the fake's figure. Run: `python -m bench.batch_cost [traces]` (default 1,000).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anthropic
import msgspec

from ragpulse.config.prices import DEFAULT_PRICES_PER_MTOK, call_cost
from ragpulse.intake.estimate import cache_split, estimate_batch, estimate_trace_tokens
from ragpulse.judges.anthropic_judge import AnthropicProvider
from ragpulse.model.trace import BatchOptions, Trace
from tests.fake_anthropic import FakeAnthropic

MODEL = "claude-sonnet-4-6"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "acme_support_traces.jsonl"
MODES = {"interactive": ("interactive", "none"), "interactive + cache": ("interactive", "5m"),
         "batch": ("batch", "none"), "batch + cache": ("batch", "1h")}
"""Row -> (delivery it is billed at, prompt-cache marker)."""


def traces(n: int) -> list[Trace]:
    lines = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    return [msgspec.convert({**lines[i % len(lines)], "trace_id": f"t{i}"}, Trace) for i in range(n)]


def run(batch: list[Trace], delivery: str, cache: str) -> dict[str, float]:
    provider = AnthropicProvider(anthropic.AsyncAnthropic(api_key="bench"), MODEL, 4096, 0.0)
    fake = FakeAnthropic(model=MODEL)
    totals = dict.fromkeys(("input", "cache_read", "cache_write", "output", "cost"), 0.0)
    try:
        for trace in batch:
            if not trace.answer:
                continue
            params = provider.params(provider.first_turns(trace), "1h" if cache == "1h" else None)
            if cache == "none":
                params["system"] = [{k: v for k, v in block.items() if k != "cache_control"}
                                    for block in params["system"]]
            _, _, message = fake.respond(params, {})
            usage = message["usage"]
            counts = (usage["input_tokens"], usage["output_tokens"], usage.get("cache_read_input_tokens", 0),
                      usage.get("cache_creation_input_tokens", 0))
            totals["input"] += counts[0]
            totals["output"] += counts[1]
            totals["cache_read"] += counts[2]
            totals["cache_write"] += counts[3]
            totals["cost"] += call_cost(DEFAULT_PRICES_PER_MTOK, MODEL, *counts, delivery)
    finally:
        fake.server.server_close()
    return totals


def dry_run(batch: list[Trace], delivery: str, cache: str) -> float:
    """The dry run's cost of the same requests, with the prefix cached or not."""
    tokens = [estimate_trace_tokens(t) for t in batch if t.answer]
    uncached, reads, writes = cache_split(len(tokens), sum(i for i, _ in tokens), cache != "none")
    return call_cost(DEFAULT_PRICES_PER_MTOK, MODEL, uncached, sum(o for _, o in tokens), reads, writes, delivery)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    batch = traces(n)
    rows = {name: run(batch, *mode) for name, mode in MODES.items()}
    base = rows["interactive"]["cost"]
    print(f"{n} traces of the examples, judge {MODEL}, list prices {DEFAULT_PRICES_PER_MTOK[MODEL]} USD/MTok")
    print("| delivery | input | cache read | cache write | output | cost USD | saving vs interactive "
          "| dry run USD | dry run ÷ cost |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, t in rows.items():
        estimated = dry_run(batch, *MODES[name])
        print(f"| {name} | {t['input']:,.0f} | {t['cache_read']:,.0f} | {t['cache_write']:,.0f} | {t['output']:,.0f} "
              f"| {t['cost']:.4f} | {100 * (1 - t['cost'] / base):.1f}% | {estimated:.4f} "
              f"| {estimated / t['cost']:.3f} |")
    estimate = estimate_batch(batch, BatchOptions(judge="anthropic"), MODEL, DEFAULT_PRICES_PER_MTOK)
    print(f"POST /v1/batches?dry_run=true cost_by_delivery: {estimate.cost_by_delivery}")


if __name__ == "__main__":
    main()
