"""The judge prompt's size per trace and its prompt cache on every priced model (issue 28 part 4), counted as the
loopback fake counts usage (a real tokenizer, tests/tokens.py) on the judge's own requests for the example traces."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

import anthropic
import msgspec
import openai
import pytest

from ragpulse.config import defaults
from ragpulse.config.prices import DEFAULT_PRICES_PER_MTOK, OPENAI_FACTORS, call_cost
from ragpulse.intake.estimate import estimate_batch
from ragpulse.judges.anthropic_judge import AnthropicProvider
from ragpulse.judges.openai_judge import OpenAIProvider, request_parts
from ragpulse.judges.prompt import JUDGE_TASK
from ragpulse.judges.task import min_cacheable_tokens
from ragpulse.model.trace import BatchOptions, Trace
from tests import tokens
from tests.fake_anthropic import FakeAnthropic
from tests.fake_openai import FakeOpenAI

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "acme_support_traces.jsonl"
TRACES = [msgspec.convert(json.loads(line), Trace) for line in EXAMPLES.read_text().splitlines() if line.strip()]
JUDGED = [trace for trace in TRACES if trace.answer]
CLAUDE = [model for model in DEFAULT_PRICES_PER_MTOK if model not in OPENAI_FACTORS]
OPENAI = list(OPENAI_FACTORS)
BASE_BUDGET = 2000
"""Tokens a trace's whole request may take where nothing is cached (issue 28), the conversation section of issue 29
included."""


def requests(model: str) -> list[dict]:
    """The Messages API requests the Anthropic judge makes for the examples (interactive, strict)."""
    provider = AnthropicProvider(anthropic.AsyncAnthropic(api_key="test"), model, 1024, 0.0)
    return [provider.params(provider.first_turns(trace)) for trace in JUDGED]


def test_the_fakes_table_of_minimums_agrees_with_the_service_for_every_priced_model() -> None:
    for model in CLAUDE:
        assert min_cacheable_tokens(model) == tokens.min_cacheable(model), model
    assert defaults.MIN_CACHEABLE_TOKENS["claude-sonnet-4-6"] == 2048


@pytest.mark.parametrize("model", CLAUDE)
def test_every_priced_claude_model_reads_the_prefix_from_the_cache_and_pays_in_full_for_the_trace_only(
        model: str) -> None:
    """The first call writes the marked prefix, every later one reads it; what is billed in full per trace (the
    fake's input_tokens) stays within 2,000 on the examples, and is the trace's message alone."""
    fake = FakeAnthropic(model=model, usage="cl100k")
    try:
        usages = [fake.respond(body, {})[2]["usage"] for body in requests(model)]
    finally:
        fake.server.server_close()
    first, *rest = usages
    assert first["cache_creation_input_tokens"] >= tokens.min_cacheable(model)
    assert all(u["cache_read_input_tokens"] == first["cache_creation_input_tokens"] for u in rest)
    assert max(u["input_tokens"] for u in rest) <= 2000
    messages = [tokens.count([body["messages"][0]["content"]]) for body in requests(model)[1:]]
    assert [u["input_tokens"] for u in rest] == messages


def test_the_whole_request_without_a_cache_stays_within_the_budget() -> None:
    """Where nothing is cached (an OpenAI-compatible server, a model whose minimum the short prefix reaches, before
    the first write), a trace's request is the rules, the short examples, the tool and the trace: on average within
    BASE_BUDGET, with the worked examples left out."""
    provider = OpenAIProvider(openai.AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9/v1"), "qwen2.5:14b",
                              1024, 0.0)
    system, tools_mode, _ = request_parts(provider.task)
    whole = [tokens.count([*tools_mode["tools"], system, tokens.part_text(turn["content"])])
             for trace in JUDGED for turn in provider.first_turns(trace)]
    assert "Worked example" not in system
    assert mean(whole) <= BASE_BUDGET
    sonnet_45 = [tokens.count(tokens.parts(body)) for body in requests("claude-sonnet-4-5")]
    assert mean(sonnet_45) <= BASE_BUDGET and abs(mean(sonnet_45) - mean(whole)) < 50


def test_worked_examples_go_only_to_models_that_need_them_and_reach_their_minimum() -> None:
    """The short prefix alone where it is cacheable (1,024); enough worked examples to reach 2,048 and 4,096 (by an
    under-estimate, so with some room: Claude's tokenizer counts more than cl100k, not less) and not far beyond."""
    def prefix(model: str) -> int:
        body = requests(model)[0]
        return tokens.count([*body["tools"], *body["system"]])

    assert JUDGE_TASK.for_model("claude-sonnet-4-5") is JUDGE_TASK
    for model in CLAUDE:
        minimum = tokens.min_cacheable(model)
        assert prefix(model) >= minimum, model
        if JUDGE_TASK.for_model(model) is not JUDGE_TASK:
            assert prefix(model) <= 1.3 * minimum, model
    assert JUDGE_TASK.for_model("claude-sonnet-4-6").examples.count("Worked example") < len(JUDGE_TASK.padding)


@pytest.mark.parametrize("model", OPENAI)
def test_every_priced_openai_model_caches_the_prefix_by_itself(model: str) -> None:
    """OpenAI caches a prefix of 1,024 tokens or more by itself (the fake simulates it): the openai judge's prefix, the
    tool and the system message with the short examples, reaches that, so every call after the first reads it."""
    provider = OpenAIProvider(openai.AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9/v1"), model, 1024, 0.0,
                              structured="tools")
    fake = FakeOpenAI(model=model, usage="cl100k", prompt_cache=True)
    try:
        usages = [fake.respond("/v1/chat/completions", provider.params(provider.first_turns(trace)), {})[2]["usage"]
                  for trace in JUDGED]
    finally:
        fake.server.server_close()
    first, *rest = usages
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert all(u["prompt_tokens_details"]["cached_tokens"] >= 1024 for u in rest)
    assert max(u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"] for u in rest) <= 2000


@pytest.mark.parametrize("usage", ["quarter", "cl100k"])
@pytest.mark.parametrize("model", OPENAI)
def test_the_dry_run_prices_openai_calls_with_the_cache_reads_openai_makes_by_itself(model: str, usage: str) -> None:
    """The dry run's cost of judging the examples is within 10% of what the fake bills them, cache reads included
    (it was 1.30-1.66x when it priced every call's prefix in full), under either way of counting tokens."""
    provider = OpenAIProvider(openai.AsyncOpenAI(api_key="test", base_url="http://127.0.0.1:9/v1"), model, 1024, 0.0,
                              structured="tools")
    fake = FakeOpenAI(model=model, usage=usage, prompt_cache=True)
    try:
        usages = [fake.respond("/v1/chat/completions", provider.params(provider.first_turns(trace)), {})[2]["usage"]
                  for trace in JUDGED]
    finally:
        fake.server.server_close()
    read = sum(u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    billed = call_cost(DEFAULT_PRICES_PER_MTOK, model, sum(u["prompt_tokens"] for u in usages) - read,
                       sum(u["completion_tokens"] for u in usages), read)
    estimate = estimate_batch(JUDGED, BatchOptions(judge="openai"), model, DEFAULT_PRICES_PER_MTOK)
    assert estimate.cache_read_input_tokens > 0 and estimate.cost_usd == pytest.approx(billed, rel=0.10)
    self_hosted = estimate_batch(JUDGED, BatchOptions(judge="openai"), "qwen2.5:14b", {"qwen2.5:14b": (1.0, 1.0)})
    assert self_hosted.cache_read_input_tokens == 0                           # not assumed to cache
