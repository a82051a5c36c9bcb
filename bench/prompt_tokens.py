"""Prompt tokens per trace of the LLM judge, per model, from the loopback fake's usage (issue 28 part 4).

The Anthropic judge judges the example traces (examples/acme_support_traces.jsonl) one after another through the
real SDK against tests.fake_anthropic.FakeAnthropic, once per model of the price table; the fake counts tokens with a
real tokenizer (cl100k, tests/tokens.py: Claude's own is not public and counts somewhat more) and caches a marked
prefix that reaches the model's minimum (its own table of Anthropic's minimums). The OpenAI judge runs the same traces
against tests.fake_openai.FakeOpenAI once per OpenAI model of the price table, the fake simulating OpenAI's automatic
cache (a repeated prefix of 1,024 tokens or more, in steps of 128), and once against a self-hosted model (no cache).

Printed per model: the minimum cacheable length, the worked examples the prefix carries, the prefix (tools + system,
as written to the cache), and per trace (the first call of each; a repair turn's second call is left out): the
input billed in full (uncached), the cache reads, the whole request (billed in full when nothing is cached), and the
input-price equivalent once the prefix is cached (uncached + the model's cached-input rate x reads). The request's parts are counted alone too:
system rules, short examples, worked examples, tool schema, message.
Run: `python -m bench.prompt_tokens`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
from pathlib import Path

import anthropic
import msgspec
import openai

from ragpulse.config.prices import CACHE_READ_PRICE_FACTOR, DEFAULT_PRICES_PER_MTOK, OPENAI_FACTORS
from ragpulse.exceptions import JudgeError
from ragpulse.judges.anthropic_judge import AnthropicJudge
from ragpulse.judges.openai_judge import OpenAIJudge
from ragpulse.judges.prompt import EXAMPLES, JUDGE_TASK, SYSTEM, TOOL, user_message
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import JudgeCall
from tests import tokens
from tests.fake_anthropic import FakeAnthropic
from tests.fake_openai import FakeOpenAI

DATA = Path(__file__).resolve().parent.parent / "examples" / "acme_support_traces.jsonl"
TRACES = [msgspec.convert(json.loads(line), Trace) for line in DATA.read_text().splitlines() if line.strip()]
JUDGED = [trace for trace in TRACES if trace.answer]


async def first_calls(judge: AnthropicJudge | OpenAIJudge) -> list[JudgeCall]:
    """The first call of each trace's judgment (or failure), in order; the judge is closed after."""
    calls = []
    try:
        for trace in JUDGED:
            try:
                made = (await judge.ajudge(trace)).calls
            except JudgeError as exc:
                made = exc.calls
            calls.append(made[0])
    finally:
        await judge.aclose()
    return calls


def anthropic_row(model: str) -> dict[str, float]:
    with FakeAnthropic(model=model, usage="cl100k") as fake:
        client = anthropic.AsyncAnthropic(base_url=fake.url, api_key="bench", max_retries=0)
        calls = asyncio.run(first_calls(AnthropicJudge(client, model, 4096)))
        body = fake.requests[0]["body"]
    task = JUDGE_TASK.for_model(model)
    prefix = tokens.count([*body["tools"], *body["system"]])
    warm = calls[1:]
    uncached = statistics.mean(c.input_tokens for c in warm)
    reads = statistics.mean(c.cache_read_input_tokens for c in warm)
    return {"minimum": tokens.min_cacheable(model), "worked": task.examples.count("Worked example"),
            "prefix": prefix, "written": calls[0].cache_creation_input_tokens, "uncached": uncached, "reads": reads,
            "cold": statistics.mean(c.input_tokens + c.cache_read_input_tokens + c.cache_creation_input_tokens
                                    for c in calls),
            "equivalent": uncached + CACHE_READ_PRICE_FACTOR * reads}


def openai_row(model: str, cache: bool) -> dict[str, float]:
    with FakeOpenAI(model=model, usage="cl100k", prompt_cache=cache) as fake:
        client = openai.AsyncOpenAI(base_url=fake.base_url, api_key="bench", max_retries=0)
        calls = asyncio.run(first_calls(OpenAIJudge(client, model, 4096, 0.0, structured="tools")))
    warm = calls[1:]
    uncached = statistics.mean(c.input_tokens for c in warm)
    reads = statistics.mean(c.cache_read_input_tokens for c in warm)
    factor = OPENAI_FACTORS[model].cache_read if model in OPENAI_FACTORS else 1.0
    return {"uncached": uncached, "reads": reads, "cold": statistics.mean(c.input_tokens + c.cache_read_input_tokens
                                                                          for c in calls),
            "equivalent": uncached + factor * reads, "factor": factor}


def main() -> None:
    worked = "\n\n".join(JUDGE_TASK.padding)
    tool = tokens.part_text(TOOL)
    messages = [tokens.cl100k(user_message(trace)) for trace in JUDGED]
    print(f"{len(JUDGED)} judged example traces; load average {os.getloadavg()[0]:.2f}; "
          "tokens: cl100k (tests/tokens.py)")
    print(f"parts: system {tokens.cl100k(SYSTEM)}, short examples {tokens.cl100k(EXAMPLES)}, tool schema "
          f"{tokens.cl100k(tool)}, all {len(JUDGE_TASK.padding)} worked examples {tokens.cl100k(worked)}, message "
          f"mean {statistics.mean(messages):.0f} (max {max(messages)})")
    print("| model | minimum | worked examples | prefix (cache write) | uncached / trace | cache read / trace "
          "| whole request / trace | warm, input-price equivalent / trace |")
    print("|---|---|---|---|---|---|---|---|")
    for model in (m for m in DEFAULT_PRICES_PER_MTOK if m not in OPENAI_FACTORS):
        r = anthropic_row(model)
        print(f"| {model} | {r['minimum']:,} | {r['worked']} | {r['prefix']:,} ({r['written']:,.0f}) "
              f"| {r['uncached']:,.0f} | {r['reads']:,.0f} | {r['cold']:,.0f} | {r['equivalent']:,.0f} |")
    for model, cache in [*((m, True) for m in OPENAI_FACTORS), ("qwen2.5:14b", False)]:
        r = openai_row(model, cache)
        label = f"{model} (openai judge, cached input {r['factor']}x)" if cache else f"{model} (self-hosted, no cache)"
        print(f"| {label} | {1024 if cache else '-'} | 0 | - | {r['uncached']:,.0f} | {r['reads']:,.0f} "
              f"| {r['cold']:,.0f} | {r['equivalent']:,.0f} |")

if __name__ == "__main__":
    main()
