"""What a provider's batch API answers that no request can use: each adapter, through the real SDK against its loopback
fake, turns a garbage results line into one unusable outcome (the others read on) and an HTML 200 on create into a
JudgeResponseInvalid naming what came back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import anthropic
import openai
import pytest

from ragpulse.exceptions import JudgeResponseInvalid
from ragpulse.judges.anthropic_batches import AnthropicBatches
from ragpulse.judges.batches import BatchRequest, index_of
from ragpulse.judges.openai_batches import OpenAIBatches
from tests.fake_anthropic_batches import FakeAnthropicBatches
from tests.fake_openai_batches import FakeOpenAIBatches

HTML = (200, {"content-type": "text/html"}, b"<html><body>Gateway login</body></html>")
GARBAGE = ["<html>not a result</html>", '{"custom_id": "zzz", "result": {"type": "succeeded"}}',
           '{"no_custom_id": 1}', '{"custom_id": "t1-0", "result": 7}']


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropicBatches]:
    with FakeAnthropicBatches(hold=False) as fake:
        yield fake


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAIBatches]:
    with FakeOpenAIBatches() as fake:
        yield fake


def anthropic_api(fake: FakeAnthropicBatches) -> AnthropicBatches:
    return AnthropicBatches(anthropic.AsyncAnthropic(base_url=fake.url, api_key="k", max_retries=0))


def openai_api(fake: FakeOpenAIBatches) -> OpenAIBatches:
    return OpenAIBatches(openai.AsyncOpenAI(base_url=fake.base_url, api_key="k", max_retries=0))


def anthropic_request(index: int) -> BatchRequest:
    return BatchRequest(f"t{index}-0-key", {"model": "claude-sonnet-4-6", "max_tokens": 10,
                                            "messages": [{"role": "user", "content": f"q{index}"}]})


def openai_request(index: int) -> BatchRequest:
    return BatchRequest(f"t{index}-0-key", {"model": "qwen2.5:14b",
                                            "messages": [{"role": "user", "content": f"q{index}"}]})


async def all_outcomes(api, batch_id: str) -> list:  # noqa: ANN001
    try:
        return [outcome async for outcome in api.results(batch_id)]
    finally:
        await api.aclose()


def test_anthropic_results_read_on_past_garbage_lines(anthropic_fake: FakeAnthropicBatches) -> None:
    anthropic_fake.extra_lines = GARBAGE
    api = anthropic_api(anthropic_fake)
    batch_id = asyncio.run(api.create([anthropic_request(0), anthropic_request(1)], "key"))
    anthropic_fake.release()
    outcomes = asyncio.run(all_outcomes(anthropic_api(anthropic_fake), batch_id))
    assert [(o.custom_id, o.kind) for o in outcomes[:2]] == [("t0-0-key", "succeeded"), ("t1-0-key", "succeeded")]
    assert outcomes[2].kind == "unreadable" and "not JSON" in outcomes[2].error
    assert outcomes[3].custom_id == "zzz" and index_of("zzz") is None       # left for the chunk to ignore and record
    assert outcomes[4].kind == "unreadable" and "no custom_id" in outcomes[4].error
    assert outcomes[5].custom_id == "t1-0" and outcomes[5].kind == "errored" and "unreadable" in outcomes[5].error


def test_openai_results_read_on_past_garbage_lines(openai_fake: FakeOpenAIBatches) -> None:
    openai_fake.extra_lines = GARBAGE[:3]
    api = openai_api(openai_fake)
    batch_id = asyncio.run(api.create([openai_request(0), openai_request(1)], "key"))
    openai_fake.release()
    outcomes = asyncio.run(all_outcomes(openai_api(openai_fake), batch_id))
    assert [o.kind for o in outcomes] == ["succeeded", "succeeded", "unreadable", "errored", "unreadable"]
    assert outcomes[3].custom_id == "zzz"


@pytest.mark.parametrize("which", ["anthropic", "openai"])
def test_an_html_200_on_create_is_a_judge_response_invalid_quoting_it(
        which: str, anthropic_fake: FakeAnthropicBatches, openai_fake: FakeOpenAIBatches) -> None:
    fake, api, request = ((anthropic_fake, anthropic_api(anthropic_fake), anthropic_request(0)) if which == "anthropic"
                          else (openai_fake, openai_api(openai_fake), openai_request(0)))
    fake.create_answer = HTML

    async def create() -> str:
        try:
            return await api.create([request], "key")
        finally:
            await api.aclose()
    with pytest.raises(JudgeResponseInvalid, match="Gateway login") as caught:
        asyncio.run(create())
    assert "BASE_URL" in str(caught.value)
    assert json.dumps(str(caught.value))   # a plain message, fit for the job's error
