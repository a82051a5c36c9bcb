"""The dry run agrees with what the judge is billed (issue 27): the estimate of the examples, priced by the table, is
within 5% of the loopback fake's usage counts for the judge's own requests priced by the same table (what the report
sums), for interactive and batch delivery, with the prefix cached (Sonnet 4.6 and Haiku 4.5, with the worked examples
each is sent to reach its minimum: issue 28) and not (a minimum not even the worked examples reach)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import msgspec
import pytest

from ragpulse.config import defaults
from ragpulse.config.prices import DEFAULT_PRICES_PER_MTOK, call_cost
from ragpulse.config.settings import Settings
from ragpulse.intake.estimate import estimate_batch
from ragpulse.judges.anthropic_judge import AnthropicProvider
from ragpulse.judges.judge_input import JudgeInputLimits, for_judging
from ragpulse.model.trace import BatchOptions, Trace
from tests.fake_anthropic import FakeAnthropic
from tests.support import ROOT

TOLERANCE = 0.05
"""How far the dry run may be from the bill, either way."""
TTL = {"interactive": None, "batch": "1h"}
"""The cache marker each delivery sends (provider_batch.CACHE_TTL in batch)."""


def example_traces(n: int) -> list[Trace]:
    lines = (ROOT / "examples" / "acme_support_traces.jsonl").read_text().splitlines()
    return [msgspec.convert({**json.loads(lines[i % len(lines)]), "trace_id": f"t{i}"}, Trace) for i in range(n)]


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(model=request.param) as server:
        yield server


def billed(fake: FakeAnthropic, model: str, traces: list[Trace], delivery: str) -> tuple[float, dict[str, int]]:
    """The judge's first request of each answered trace (as interactive and batch delivery build it) sent to the fake;
    its usage priced by the table, as the report prices each call, and the token totals."""
    provider = AnthropicProvider(anthropic.AsyncAnthropic(api_key="test"), model, 4096, None)
    limits = JudgeInputLimits.from_settings(Settings.from_env({}))
    cost, totals = 0.0, dict.fromkeys(("input", "output", "read", "write"), 0)
    for trace in traces:
        if not trace.answer:
            continue
        params = provider.params(provider.first_turns(for_judging(trace, limits)[0]), TTL[delivery])
        usage = fake.respond(params, {})[2]["usage"]
        counts = (usage["input_tokens"], usage["output_tokens"], usage.get("cache_read_input_tokens", 0),
                  usage.get("cache_creation_input_tokens", 0))
        cost += call_cost(DEFAULT_PRICES_PER_MTOK, model, *counts, delivery)
        for name, count in zip(totals, counts):
            totals[name] += count
    return cost, totals


@pytest.mark.parametrize("delivery", ["interactive", "batch"])
@pytest.mark.parametrize(("fake", "cached"), [("claude-sonnet-4-6", True), ("claude-haiku-4-5", True),
                                             ("claude-haiku-4-5", False)],
                         indirect=["fake"], ids=["cache", "cache-4096", "no-cache"])
def test_the_dry_run_is_within_5_percent_of_the_fakes_usage_priced_by_the_table(
        fake: FakeAnthropic, cached: bool, delivery: str, monkeypatch: pytest.MonkeyPatch) -> None:
    traces = example_traces(130)                                  # the 65 examples twice
    model = fake.model
    if not cached:  # a minimum not even the worked examples reach: the prefix goes unmarked, billed in full
        monkeypatch.setitem(defaults.MIN_CACHEABLE_TOKENS, model, 100_000)
    cost, tokens = billed(fake, model, traces, delivery)
    estimate = estimate_batch(traces, BatchOptions(judge="anthropic", delivery=delivery), model,
                              DEFAULT_PRICES_PER_MTOK)
    assert (tokens["read"] > 0) is cached and (estimate.cache_read_input_tokens > 0) is cached
    assert estimate.cost_usd == estimate.cost_by_delivery[delivery]
    assert estimate.cost_usd == pytest.approx(cost, rel=TOLERANCE)
    # each part agrees too, so the total is not two errors cancelling out
    assert estimate.input_tokens == pytest.approx(tokens["input"], rel=TOLERANCE)
    assert estimate.output_tokens == pytest.approx(tokens["output"], rel=TOLERANCE)
    assert estimate.cache_read_input_tokens == pytest.approx(tokens["read"], rel=TOLERANCE)
    assert estimate.cache_creation_input_tokens == pytest.approx(tokens["write"], rel=TOLERANCE)
