"""OpenAI judge models have list prices, cached-input and batch rates in the price table (issue 27), and a call's
cached input tokens are billed at the cached rate: through the real openai SDK against the loopback fake."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from ragpulse.config.prices import DEFAULT_PRICES_PER_MTOK, OPENAI_FACTORS, call_cost
from ragpulse.config.settings import Settings
from ragpulse.evaluation.calls import CallObserver
from ragpulse.judges.prompt import TOOL_NAME
from tests.fake_openai import Fault, FakeOpenAI
from tests.test_anthropic_judge import verdicts
from tests.test_openai_judge import judge_once, make_trace, openai_judge

MODEL = "gpt-4.1-mini"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(model=MODEL) as server:
        yield server


def completion(arguments: str, prompt: int, cached: int | None, output: int) -> dict:
    """A chat completion calling the judge's tool, with OpenAI's usage (prompt_tokens counts the cached ones)."""
    usage: dict = {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": None, "tool_calls": [{
                    "id": "call_1", "type": "function", "function": {"name": TOOL_NAME, "arguments": arguments}}]}}],
            "usage": usage}


def test_openai_models_have_list_prices_with_cached_and_batch_rates() -> None:
    for model in ("gpt-5", "gpt-5-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-4o", "gpt-4o-mini"):
        assert model in DEFAULT_PRICES_PER_MTOK and model in OPENAI_FACTORS
    prices = DEFAULT_PRICES_PER_MTOK
    # gpt-4.1: $2 / $8; cached input 0.25x = $0.50; no cache-write surcharge. 1,000 uncached + 4,000 cached + 100 out:
    # (1000 * 2 + 4000 * 0.5 + 100 * 8) / 1e6 = 0.0048; batch halves it all: 0.0024
    assert call_cost(prices, "gpt-4.1", 1000, 100, 4000) == pytest.approx(0.0048)
    assert call_cost(prices, "gpt-4.1", 1000, 100, 4000, delivery="batch") == pytest.approx(0.0024)
    # gpt-5 reads at 0.1x, gpt-4o at 0.5x: 10,000 cached tokens cost $0.00125 and $0.0125
    assert call_cost(prices, "gpt-5", 0, 0, 10_000) == pytest.approx(0.00125)
    assert call_cost(prices, "gpt-4o", 0, 0, 10_000) == pytest.approx(0.0125)
    # a cache write is plain input at OpenAI (Anthropic charges 1.25x): 1,000 written tokens of gpt-4o = $0.0025
    assert call_cost(prices, "gpt-4o", 0, 0, 0, 1000) == pytest.approx(0.0025)
    assert call_cost(prices, "claude-sonnet-4-6", 0, 0, 0, 1000) == pytest.approx(0.00375)


def test_cached_input_tokens_are_billed_at_the_cached_rate(fake: FakeOpenAI) -> None:
    arguments = json.dumps(verdicts(make_trace()))
    fake.push(Fault(body=completion(arguments, prompt=5000, cached=4096, output=300)),
              Fault(body=completion(arguments, prompt=5000, cached=None, output=300)))
    observer = CallObserver(Settings())
    [cached_judgment] = judge_once(openai_judge(fake, observer=observer, model=MODEL), make_trace())
    call = cached_judgment.calls[0]
    assert (call.input_tokens, call.cache_read_input_tokens, call.output_tokens) == (904, 4096, 300)
    # gpt-4.1-mini: $0.40 in, $0.10 cached, $1.60 out: (904 * 0.4 + 4096 * 0.1 + 300 * 1.6) / 1e6
    assert observer.unwritten_cost == pytest.approx((904 * 0.4 + 4096 * 0.1 + 300 * 1.6) / 1e6)
    assert observer.unwritten.input_tokens == 904

    plain = CallObserver(Settings())
    [judgment] = judge_once(openai_judge(fake, observer=plain, model=MODEL), make_trace())
    assert (judgment.calls[0].input_tokens, judgment.calls[0].cache_read_input_tokens) == (5000, 0)
    assert plain.unwritten_cost == pytest.approx((5000 * 0.4 + 300 * 1.6) / 1e6)
