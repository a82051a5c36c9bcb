"""The OpenAI-compatible judge through the real openai SDK against a fake chat completions server on loopback,
held side by side with the Anthropic judge against its fake: same verdicts in, same results out."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import httpx
import msgspec
import openai
import pytest

from ragpulse.config.prices import call_cost
from ragpulse.config.settings import Settings
from ragpulse.evaluation.calls import CallObserver
from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.exceptions import ConfigError, JudgeAuthError, JudgeNotConfigured, JudgeOutputInvalid, JudgeUnavailable
from ragpulse.intake.estimate import estimate_batch
from ragpulse.judges import kinds
from ragpulse.judges.anthropic_judge import AnthropicJudge
from ragpulse.judges.headers import openai_pause_from_headers
from ragpulse.judges.openai_judge import OpenAIJudge
from ragpulse.judges.prompt import EXAMPLES, PROMPT_VERSION, SYSTEM, TOOL_NAME
from ragpulse.judges.structured import RetryPolicy, StructuredJudge
from ragpulse.judges.tool import input_schema
from ragpulse.model.results import TraceResult
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.model.verdicts import JudgeObserver
from tests import fake_anthropic, fake_openai
from tests.fake_anthropic import FakeAnthropic
from tests.fake_openai import FakeOpenAI
from tests.support import start_api, start_worker, wait_for_job
from tests.test_anthropic_judge import claim, verdicts

MODEL = "qwen2.5:14b"


@dataclass(frozen=True)
class RecordingRetry(RetryPolicy):
    """Fast backoff that remembers the retry-after hint of every retry."""

    base_seconds: float = 0.01
    hints: list[float | None] = field(default_factory=list)

    def delay(self, attempt: int, hinted: float | None) -> float:
        self.hints.append(hinted)
        return super().delay(attempt, hinted)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(model=MODEL) as server:
        yield server


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def openai_judge(fake: FakeOpenAI, structured: str = "auto", retry: RetryPolicy | None = None,
                 observer: JudgeObserver | None = None, model: str = MODEL) -> OpenAIJudge:
    client = openai.AsyncOpenAI(api_key="test-key", base_url=fake.base_url, max_retries=0, timeout=10)
    return OpenAIJudge(client, model, 1024, structured=structured,  # type: ignore[arg-type]
                       retry=retry or RecordingRetry(max_retries=2), observer=observer)


def anthropic_judge(fake: FakeAnthropic, retry: RetryPolicy | None = None) -> AnthropicJudge:
    client = anthropic.AsyncAnthropic(api_key="test-key", base_url=fake.url, max_retries=0, timeout=10)
    return AnthropicJudge(client, "claude-sonnet-4-6", 1024, retry=retry or RecordingRetry(max_retries=2))


def evaluate(build: Callable[[], StructuredJudge], trace: Trace, options: BatchOptions | None = None) -> TraceResult:
    async def run() -> TraceResult:
        judge = build()
        try:
            return await evaluate_trace(trace, 0, options or BatchOptions(), judge)
        finally:
            await judge.aclose()
    return asyncio.run(run())


def judge_once(judge: StructuredJudge, *traces: Trace) -> list[Any]:
    async def run() -> list[Any]:
        try:
            return [await judge.ajudge(trace) for trace in traces]
        finally:
            await judge.aclose()
    return asyncio.run(run())


def make_trace(answer: str = "The warranty lasts 2 years.", **extra: object) -> Trace:
    docs = [RetrievedDoc(id="w", text="The warranty lasts 2 years from purchase."),
            RetrievedDoc(id="x", text="Shipping is free.")]
    return Trace(trace_id="t1", query="How long is the warranty?", retrieved_docs=docs, answer=answer,
                 gold_doc_ids=["w"], **extra)


def comparable(result: TraceResult) -> dict[str, Any]:
    """Every field of a result but who judged it and the raw call records."""
    data = msgspec.to_builtins(result)
    for key in ("judge", "judgments", "failed_calls"):
        data.pop(key, None)
    return data


CHUNKED = Trace(trace_id="t2", query="Battery?", answer="The battery lasts 10 hours. It is waterproof.",
                gold_doc_ids=["manual"], retrieved_docs=[
                    RetrievedDoc(id="manual", chunk_id="c1", text="Chapter 1: setup."),
                    RetrievedDoc(id="manual", chunk_id="c2", text="The battery lasts 10 hours."),
                    RetrievedDoc(id="faq", text="Shipping is free.")])
SCRIPTED = verdicts(make_trace(), claim("The warranty lasts 2 years.", "supported", ("w", "warranty lasts five years")),
                    claim("Shipping is free.", "supported", ("x", "shipping is  FREE")),
                    claim("Returns take 30 days.", "supported", ("nope", "30 days")))


@pytest.mark.parametrize(("trace", "tool_input"), [
    (make_trace(), None),                                       # the fakes' own literal verdicts
    (make_trace("Sorry, I don't know."), None),                 # an abstention
    (CHUNKED, None),                                            # chunks, an unsupported claim
    (make_trace(), SCRIPTED),                                   # fabricated quotes, an unretrieved document
    (make_trace(reference_answer="2 years"), None),             # key facts
], ids=["literal", "abstention", "chunks", "scripted", "reference"])
def test_parity_same_tool_input_gives_the_same_result(fake: FakeOpenAI, anthropic_fake: FakeAnthropic, trace: Trace,
                                                      tool_input: dict[str, Any] | None) -> None:
    if tool_input is not None:
        fake.push(fake_openai.Fault(tool_input=tool_input))
        anthropic_fake.push(fake_anthropic.Fault(tool_input=tool_input))
    ours = evaluate(lambda: openai_judge(fake), trace, BatchOptions(judge="openai"))
    theirs = evaluate(lambda: anthropic_judge(anthropic_fake), trace, BatchOptions(judge="anthropic"))
    assert ours.status == theirs.status == "ok" and ours.generation is not None
    assert comparable(ours) == comparable(theirs)
    assert ours.judge == "openai" and theirs.judge == "anthropic"
    [call] = ours.judgments[0].calls
    assert call.raw_output == theirs.judgments[0].calls[0].raw_output          # the same tool input, kept raw
    assert call.model == MODEL and call.prompt_version == PROMPT_VERSION and call.request_id.startswith("req_")


def test_one_forced_tool_call_with_the_shared_prompt_and_schema(fake: FakeOpenAI) -> None:
    [judgment] = judge_once(openai_judge(fake), make_trace())
    [body] = fake.bodies
    assert body["messages"][0] == {"role": "system", "content": f"{SYSTEM}\n\n{EXAMPLES}"}   # rules, then examples
    assert body["messages"][1]["role"] == "user" and "<question>" in body["messages"][1]["content"]
    [tool] = body["tools"]
    assert tool["function"]["name"] == TOOL_NAME and tool["function"]["parameters"] == input_schema()
    assert tool["function"]["strict"] is True                  # every property required, nullable ones anyOf null
    assert body["tool_choice"] == {"type": "function", "function": {"name": TOOL_NAME}}
    assert body["temperature"] == 0 and body["max_tokens"] == 1024 and "response_format" not in body
    [call] = judgment.calls
    assert call.input_tokens == fake.prompt_tokens(body) > 0 and call.output_tokens > 0   # usage.prompt_tokens


# -- failures map to the same statuses as the Anthropic judge's -----------------------------------------------

@dataclass(frozen=True)
class Scenario:
    """The same failure scripted for both fakes, and what each judge must make of it."""

    openai: list[fake_openai.Fault]
    anthropic: list[fake_anthropic.Fault]
    requests: int


BROKEN = {"claims": "not a list"}
SCENARIOS = {
    "429 then ok": Scenario([fake_openai.Fault(status=429, headers={"retry-after": "0.05"})],
                            [fake_anthropic.Fault(status=429, headers={"retry-after": "0.05"})], 2),
    "persistent 5xx": Scenario([fake_openai.Fault(status=500)] * 3, [fake_anthropic.Fault(status=500)] * 3, 3),
    "401": Scenario([fake_openai.Fault(status=401)], [fake_anthropic.Fault(status=401)], 1),
    "truncated then ok": Scenario([fake_openai.Fault(arguments='{"claims": [{"text": "The', finish_reason="length")],
                                  [fake_anthropic.Fault(tool_input={"claims": []}, stop_reason="max_tokens")], 2),
    "truncated twice": Scenario([fake_openai.Fault(arguments='{"claims": [', finish_reason="length")] * 2,
                                [fake_anthropic.Fault(tool_input={"claims": []}, stop_reason="max_tokens")] * 2, 2),
    "invalid twice": Scenario([fake_openai.Fault(tool_input=BROKEN)] * 2, [fake_anthropic.Fault(tool_input=BROKEN)] * 2,
                              2),
}
EXPECTED = {"429 then ok": "ok", "persistent 5xx": JudgeUnavailable, "401": JudgeAuthError,
            "truncated then ok": "ok", "truncated twice": JudgeOutputInvalid, "invalid twice": JudgeOutputInvalid}


def outcome(build: Callable[[], StructuredJudge]) -> tuple[str | type[Exception], int]:
    """`ok`, or the JudgeError class, and how many calls the judgment or the error recorded."""
    try:
        [judgment] = judge_once(build(), make_trace())
    except (JudgeUnavailable, JudgeAuthError, JudgeOutputInvalid) as exc:
        return type(exc), len(exc.calls)
    return "ok", len(judgment.calls)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_failures_map_to_the_same_outcome_as_the_anthropic_judge(fake: FakeOpenAI, anthropic_fake: FakeAnthropic,
                                                                name: str) -> None:
    scenario = SCENARIOS[name]
    fake.push(*scenario.openai)
    anthropic_fake.push(*scenario.anthropic)
    ours, theirs = outcome(lambda: openai_judge(fake)), outcome(lambda: anthropic_judge(anthropic_fake))
    assert ours == theirs and ours[0] == EXPECTED[name]
    assert len(fake.requests) == len(anthropic_fake.requests) == scenario.requests


def test_retry_after_is_honoured_and_the_trace_ends_ok(fake: FakeOpenAI) -> None:
    retry = RecordingRetry(max_retries=2)
    fake.push(fake_openai.Fault(status=429, headers={"retry-after": "0.05"}))
    result = evaluate(lambda: openai_judge(fake, retry=retry), make_trace())
    assert result.status == "ok" and retry.hints == [0.05]


def test_statuses_through_evaluate_trace(fake: FakeOpenAI) -> None:
    fake.push(*[fake_openai.Fault(status=500)] * 3)
    unavailable = evaluate(lambda: openai_judge(fake), make_trace())
    assert unavailable.status == "judge_error" and "unavailable after 3 attempts: 500" in unavailable.error
    assert unavailable.retrieval is not None and unavailable.retrieval["recall@5"] == 1.0
    fake.push(fake_openai.Fault(status=401))
    with pytest.raises(JudgeAuthError, match="401"):                   # propagates: the job fails
        evaluate(lambda: openai_judge(fake), make_trace())


def test_invalid_tool_arguments_get_one_repair_turn_as_a_tool_message(fake: FakeOpenAI) -> None:
    fake.push(fake_openai.Fault(arguments="{not json"))
    [judgment] = judge_once(openai_judge(fake), make_trace())
    assert len(judgment.calls) == 2 and judgment.calls[0].raw_output["tool_calls"][0]["function"]["arguments"] == \
        "{not json"
    assistant, tool = fake.bodies[1]["messages"][2:]
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{not json"
    assert tool["role"] == "tool" and tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert "not valid JSON" in tool["content"]


def test_truncation_is_finish_reason_length(fake: FakeOpenAI) -> None:
    fake.push(fake_openai.Fault(tool_input=verdicts(make_trace()), finish_reason="length"))   # parses, still cut
    [judgment] = judge_once(openai_judge(fake), make_trace())
    assert judgment.calls[0].stop_reason == "length" and len(judgment.calls) == 2
    assert "truncated" in fake.bodies[1]["messages"][3]["content"]


# -- structured output modes ----------------------------------------------------------------------------------

def test_json_schema_mode_asks_for_the_same_schema_and_repairs_in_a_user_turn(fake: FakeOpenAI) -> None:
    fake.push(fake_openai.Fault(tool_input=BROKEN))
    [judgment] = judge_once(openai_judge(fake, structured="json_schema"), make_trace())
    first, repair = fake.bodies
    assert "tools" not in first and "tool_choice" not in first
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"] == input_schema()
    assert first["response_format"]["json_schema"]["name"] == TOOL_NAME
    assert first["response_format"]["json_schema"]["strict"] is True
    assert repair["messages"][2] == {"role": "assistant", "content": '{"claims": "not a list"}'}
    assert repair["messages"][3]["role"] == "user" and "claims" in repair["messages"][3]["content"]
    assert [c.verdict for c in judgment.output.claims] == ["supported"]


def test_auto_falls_back_to_json_schema_once_and_remembers_it() -> None:
    with FakeOpenAI(model=MODEL, supports_tools=False) as fake:
        first, second = judge_once(openai_judge(fake), make_trace(), make_trace("Shipping is free."))
        third = evaluate(lambda: openai_judge(fake), make_trace())         # a new judge in the same process
    assert ["tools" in body for body in fake.bodies] == [True, False, False, False]
    assert first.output.claims and second.output.claims and third.status == "ok"
    assert len(first.calls) == 1                                         # the refused request is no judge call


def test_tools_mode_on_a_server_without_tools_is_a_judge_error() -> None:
    with FakeOpenAI(model=MODEL, supports_tools=False) as fake:
        result = evaluate(lambda: openai_judge(fake, structured="tools"), make_trace())
    assert result.status == "judge_error" and "400 tools are not supported" in result.error
    assert len(fake.requests) == 1


# -- cost ------------------------------------------------------------------------------------------------------

def test_an_unpriced_self_hosted_model_costs_zero_and_a_priced_one_its_price(fake: FakeOpenAI) -> None:
    free = CallObserver(Settings())
    [judgment] = judge_once(openai_judge(fake, observer=free), make_trace())
    assert judgment.calls[0].input_tokens > 0 and free.unwritten.input_tokens == judgment.calls[0].input_tokens
    assert free.unwritten.judge_calls == 1 and free.unwritten_cost == 0.0

    prices = Settings.from_env({"RAGPULSE_JUDGE_PRICES": '{"qwen2.5:14b": [0.2, 0.6]}'}).judge_prices
    priced = CallObserver(Settings(judge_prices=prices))
    [call] = judge_once(openai_judge(fake, observer=priced), make_trace())[0].calls
    # (input * 0.2 + output * 0.6) per million tokens
    assert priced.unwritten_cost == pytest.approx(call_cost(prices, MODEL, call.input_tokens, call.output_tokens))
    assert priced.unwritten_cost > 0
    assert priced.unwritten_cost == pytest.approx((call.input_tokens * 0.2 + call.output_tokens * 0.6) / 1e6)


def test_the_dry_run_prices_the_openai_model_or_says_its_price_is_unknown() -> None:
    settings = Settings.from_env({"RAGPULSE_OPENAI_BASE_URL": "http://localhost:11434/v1",
                                  "RAGPULSE_OPENAI_MODEL": MODEL})
    options = BatchOptions(judge="openai")
    unknown = estimate_batch([make_trace()], options, kinds.model_for("openai", settings), settings.judge_prices)
    assert (unknown.model, unknown.price_known, unknown.cost_usd, unknown.judge_calls) == (MODEL, False, None, 1)
    assert unknown.input_tokens > 0
    priced = Settings.from_env({**{"RAGPULSE_OPENAI_MODEL": MODEL}, "RAGPULSE_JUDGE_PRICES": '{"qwen2.5:14b": [1, 2]}'})
    known = estimate_batch([make_trace()], options, kinds.model_for("openai", priced), priced.judge_prices)
    assert known.price_known and known.cost_usd == pytest.approx((known.input_tokens + 2 * known.output_tokens) / 1e6,
                                                                 abs=1e-6)


# -- settings and the catalog ----------------------------------------------------------------------------------

def test_settings_are_read_and_checked(tmp_path: Any) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk-file\n")
    settings = Settings.from_env({"RAGPULSE_JUDGE": "openai", "RAGPULSE_OPENAI_BASE_URL": "http://vllm:8000/v1",
                                  "RAGPULSE_OPENAI_API_KEY_FILE": str(key_file), "RAGPULSE_OPENAI_MODEL": MODEL,
                                  "RAGPULSE_OPENAI_STRUCTURED": "json_schema"})
    assert (settings.default_judge, settings.openai_base_url, settings.openai_api_key, settings.openai_model,
            settings.openai_structured) == ("openai", "http://vllm:8000/v1", "sk-file", MODEL, "json_schema")
    assert Settings.from_env({}).openai_structured == "auto"
    with pytest.raises(ConfigError, match="RAGPULSE_OPENAI_STRUCTURED must be one of tools, json_schema, auto"):
        Settings.from_env({"RAGPULSE_OPENAI_STRUCTURED": "grammar"})
    with pytest.raises(ConfigError, match="RAGPULSE_OPENAI_BASE_URL must be an http"):
        Settings.from_env({"RAGPULSE_OPENAI_BASE_URL": "localhost:11434"})


def test_the_key_reaches_the_server_and_openai_api_key_never_does(fake: FakeOpenAI,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-openai")
    settings = Settings.from_env({"RAGPULSE_OPENAI_BASE_URL": fake.base_url, "RAGPULSE_OPENAI_MODEL": MODEL})
    judge = kinds.make_judge("openai", settings)
    assert judge is not None and judge.model == MODEL
    judge_once(judge, make_trace())  # type: ignore[arg-type]
    keyed = Settings.from_env({"RAGPULSE_OPENAI_BASE_URL": fake.base_url, "RAGPULSE_OPENAI_MODEL": MODEL,
                               "RAGPULSE_OPENAI_API_KEY": "sk-local"})
    judge_once(kinds.make_judge("openai", keyed), make_trace())  # type: ignore[arg-type]
    assert [r["headers"]["authorization"] for r in fake.requests] == ["Bearer unused", "Bearer sk-local"]


def test_without_a_base_url_traces_are_judge_errors_that_keep_retrieval(fake: FakeOpenAI) -> None:
    settings = Settings.from_env({"RAGPULSE_JUDGE": "openai"})                # the service still starts
    judge = kinds.make_judge("openai", settings)
    assert judge is not None and judge.name == "openai"

    async def run() -> TraceResult:
        with pytest.raises(JudgeNotConfigured, match="RAGPULSE_OPENAI_BASE_URL"):
            await judge.ajudge(make_trace())
        return await evaluate_trace(make_trace(), 0, BatchOptions(), judge)

    result = asyncio.run(run())
    assert result.status == "judge_error" and "not configured" in result.error
    assert result.retrieval is not None and result.retrieval["recall@5"] == 1.0 and fake.requests == []


def test_openai_rate_limit_headers_pause_until_reset() -> None:
    assert openai_pause_from_headers({"x-ratelimit-remaining-requests": "0",
                                      "x-ratelimit-reset-requests": "1m30s"}) == 90.0
    assert openai_pause_from_headers({"x-ratelimit-remaining-tokens": "0",
                                      "x-ratelimit-reset-tokens": "250ms"}) == 0.25
    assert openai_pause_from_headers({"x-ratelimit-remaining-requests": "3",
                                      "x-ratelimit-reset-requests": "1s"}) is None
    assert openai_pause_from_headers({}) is None


# -- end to end: a live API and worker -------------------------------------------------------------------------

@pytest.mark.integration
def test_a_batch_judged_by_openai_through_a_live_api_and_worker(redis_url: str, fake: FakeOpenAI,
                                                                 tmp_path: Any) -> None:
    env = {"RAGPULSE_QUEUE": f"openai-{uuid.uuid4().hex[:8]}", "RAGPULSE_OPENAI_BASE_URL": fake.base_url,
           "RAGPULSE_OPENAI_MODEL": MODEL, "RAGPULSE_JUDGE_MAX_RETRIES": "1"}
    url, api = start_api(redis_url, tmp_path, env)
    worker = start_worker(redis_url, tmp_path, env, name="openai")
    bad = {"query": "broken judge output please", "answer": "x.", "retrieved_docs": [{"id": "a", "text": "x."}]}
    good = {"query": "How long is the warranty?", "answer": "The warranty lasts 2 years.", "gold_doc_ids": ["w"],
            "retrieved_docs": [{"id": "w", "text": "The warranty lasts 2 years from purchase."}]}
    fake.push_for(bad["query"], fake_openai.Fault(arguments="{"), fake_openai.Fault(arguments="{"))
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            batch = {"traces": [good, bad], "options": {"judge": "openai"}}
            dry = client.post("/v1/batches", params={"dry_run": "true"}, json=batch).json()["estimate"]
            assert (dry["judge"], dry["model"], dry["price_known"], dry["cost_usd"]) == ("openai", MODEL, False, None)
            job_id = client.post("/v1/batches", json=batch).json()["job_id"]
            job = wait_for_job(client, job_id)
            items = client.get(f"/v1/jobs/{job_id}/results", params={"limit": 10}).json()["items"]
            report = client.get(f"/v1/jobs/{job_id}/report").json()
    finally:
        for proc in (api, worker):
            proc.stop()
    assert job["status"] == "finished_with_errors", worker.output()[-3000:]
    fine, broken = sorted(items, key=lambda i: i["status"] != "ok")
    assert fine["status"] == "ok" and fine["judge"] == "openai" and fine["generation"]["faithfulness"] == 1.0
    assert fine["claims"][0]["verdict"] == "supported" and fine["retrieval"]["recall@5"] == 1.0
    [call] = fine["judgments"][0]["calls"]
    assert call["model"] == MODEL and call["request_id"].startswith("req_") and call["input_tokens"] > 0
    assert broken["status"] == "judge_error" and "not valid JSON" in broken["error"]
    assert len(broken["failed_calls"]) == 2
    assert len(fake.requests) == 3 and all("tools" in body for body in fake.bodies)
    assert report["generation"]["cost"]["calls_per_trace"] > 0


class StatusLog:
    """A judge observer that keeps the status of every request."""

    def __init__(self) -> None:
        self.statuses: list[str] = []

    async def reserve(self, model: str, input_tokens: int, output_tokens: int) -> None:
        pass

    def request(self, model: str, status: str, *args: object, **kwargs: object) -> None:
        self.statuses.append(status)

    def unsent(self, reserved: object) -> None:
        pass

    def waited(self, model: str, seconds: float) -> None:
        pass


PROXY_PAGE = b"<!DOCTYPE html><html><head><title>Sign in to the corporate proxy</title></head><body></body></html>"
NOT_AN_ANSWER = {
    "a proxy's HTML page": {"body": PROXY_PAGE, "headers": {"content-type": "text/html; charset=utf-8"}},
    "another API's JSON object": {"body": {"status": "ok", "data": [], "usage": None}},
    "a JSON list": {"body": [1, 2, 3]},
    "a message without usage": {"body": {"type": "message", "content": [], "choices": [{"index": 0}]}},
}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("name", list(NOT_AN_ANSWER))
def test_a_200_that_is_not_the_apis_answer_is_a_judge_error_counted_as_invalid_response(
        fake: FakeOpenAI, anthropic_fake: FakeAnthropic, provider: str, name: str) -> None:
    """A proxy's page or a wrong base URL answers 200 with something else: the trace ends judge_error saying so (never
    AttributeError, never a request counted `ok`), after one request (retrying cannot help)."""
    log = StatusLog()
    if provider == "openai":
        fake.push(fake_openai.Fault(**NOT_AN_ANSWER[name]))
        build: Callable[[], StructuredJudge] = lambda: openai_judge(fake, observer=log)  # noqa: E731
    else:
        anthropic_fake.push(fake_anthropic.Fault(**NOT_AN_ANSWER[name]))
        build = lambda: AnthropicJudge(  # noqa: E731
            anthropic.AsyncAnthropic(api_key="test-key", base_url=anthropic_fake.url, max_retries=0, timeout=10),
            "claude-sonnet-4-6", 1024, retry=RecordingRetry(max_retries=2), observer=log)
    result = evaluate(build, make_trace())
    assert result.status == "judge_error", result.error
    assert "not a" in (result.error or "") and "_BASE_URL and any proxy" in (result.error or "")
    assert log.statuses == ["invalid_response"]
    assert len(fake.requests) + len(anthropic_fake.requests) == 1
    assert result.retrieval is not None and result.retrieval["recall@5"] == 1.0   # retrieval metrics are kept
