"""Batch delivery's pieces without processes: request splitting, the replay provider, prices, the dry run, the
progress line and the CLI flag."""

from __future__ import annotations

import asyncio
import io
from collections import deque
from pathlib import Path

import pytest

from ragpulse.config.prices import call_cost
from ragpulse.config.settings import Settings
from ragpulse.exceptions import GateConfigError, JudgeError
from ragpulse.gate.config import load_config
from ragpulse.intake.estimate import estimate_batch
from ragpulse.judges import kinds
from ragpulse.judges.anthropic_judge import system_blocks
from ragpulse.judges.batches import BatchOutcome, BatchRequest, ReplayProvider, split_requests, turns_key
from ragpulse.model.results import JobView, Progress, ProviderProgress
from ragpulse.model.trace import BatchOptions, Trace
from ragpulse.ops.eval_options import choose_options
from ragpulse.ops.gate import gate_options
from ragpulse.ops.progress import Progress as ProgressLine

PRICES = {"m": (3.0, 15.0)}


def test_requests_split_at_the_count_and_the_size_limits() -> None:
    requests = [BatchRequest(f"t{i}-0", {"x": "a" * 100}) for i in range(10)]
    # each weighs len('{"x": "aaa..."}') 109 + len("t0-0") 4 + 64 = 177 bytes: 3 fit in 531, a 4th would not
    assert [len(p) for p in split_requests(requests, 4, 10**9)] == [4, 4, 2]
    assert [len(p) for p in split_requests(requests, 100, 3 * 177)] == [3, 3, 3, 1]
    assert [len(p) for p in split_requests(requests, 100, 3 * 177 - 1)] == [2, 2, 2, 2, 2]
    assert [r for p in split_requests(requests, 3, 10**9) for r in p] == requests  # order kept, nothing lost
    assert split_requests([], 3, 100) == []


def test_batch_prices_are_half_with_one_hour_cache_writes() -> None:
    # interactive: (1000 + 0.1*2000 + 1.25*400) * 3 + 500 * 15 = 5100 + 7500 -> $0.0126
    assert call_cost(PRICES, "m", 1000, 500, 2000, 400) == pytest.approx(0.0126)
    # batch: 0.5 * ((1000 + 0.1*2000 + 2.0*400) * 3 + 500 * 15) = 0.5 * (6000 + 7500) -> $0.00675
    assert call_cost(PRICES, "m", 1000, 500, 2000, 400, "batch") == pytest.approx(0.00675)


def test_batch_requests_mark_the_prefix_with_the_one_hour_cache() -> None:
    assert system_blocks("claude-sonnet-4-6", cache_ttl="1h")[-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert system_blocks("claude-sonnet-4-6")[-1]["cache_control"] == {"type": "ephemeral"}


def test_the_dry_run_prices_both_deliveries_of_a_judge_with_a_batch_api() -> None:
    traces = [Trace(query=f"q{i}", answer="It is so.", retrieved_docs=[]) for i in range(20)]
    batch = estimate_batch(traces, BatchOptions(judge="anthropic", delivery="batch"), "m", PRICES)
    interactive = estimate_batch(traces, BatchOptions(judge="anthropic"), "m", PRICES)
    assert batch.cost_by_delivery == interactive.cost_by_delivery
    assert batch.cost_usd == batch.cost_by_delivery["batch"] < interactive.cost_usd
    assert interactive.cost_usd == interactive.cost_by_delivery["interactive"]
    assert estimate_batch(traces, BatchOptions(judge="local", delivery="batch"), None, PRICES).cost_by_delivery is None


def test_only_a_remote_judge_whose_server_has_no_batch_api_refuses_batch_delivery() -> None:
    plain, offered = Settings.from_env({}), Settings.from_env({"RAGPULSE_OPENAI_BATCH": "1"})
    assert "RAGPULSE_OPENAI_BATCH" in kinds.batch_refusal("openai", plain)
    assert kinds.batch_refusal("openai", offered) is None
    assert kinds.batch_refusal("anthropic", plain) is None and kinds.batch_refusal("local", plain) is None
    assert kinds.delivers_in_batches("anthropic", "batch", plain) and not kinds.delivers_in_batches("local", "batch")
    assert not kinds.delivers_in_batches("openai", "batch", plain)
    assert kinds.delivers_in_batches("openai", "batch", offered)
    assert not kinds.delivers_in_batches("anthropic", "interactive")


class Inner:
    """An interactive provider that records what it was sent."""

    name, api_error, task = "fake", RuntimeError, None

    def __init__(self) -> None:
        self.sent: list[list] = []

    async def send(self, turns: list) -> str:
        self.sent.append(turns)
        return "interactive reply"

    def batch_reply(self, message: object) -> str:
        return f"batch reply {message}"


def test_the_replay_provider_answers_first_calls_from_the_batch_and_retries_the_rest_once_as_configured() -> None:
    first = [{"role": "user", "content": "a"}]
    other = [{"role": "user", "content": "b"}]
    outcomes = {turns_key(first): deque([BatchOutcome("t0-0", "succeeded", message="m0")]),
                turns_key(other): deque([BatchOutcome("t1-0", "expired")])}
    inner = Inner()
    replay = ReplayProvider(inner, outcomes, retry=True)
    assert replay.holds(first) and not replay.holds(other)        # an expired request is not paid for: rate-limited
    assert asyncio.run(replay.send(first)) == "batch reply m0"
    assert asyncio.run(replay.send(other)) == "interactive reply" and inner.sent == [other]
    repair = [*first, {"role": "assistant", "content": "x"}, {"role": "user", "content": "fix it"}]
    assert asyncio.run(replay.send(repair)) == "interactive reply"   # a repair turn goes interactive

    strict = ReplayProvider(Inner(), {turns_key(other): deque([BatchOutcome("t1-0", "errored", error="boom")])},
                            retry=False)
    with pytest.raises(JudgeError, match="batch request errored: boom"):
        asyncio.run(strict.send(other))
    assert strict.inner.sent == []


def test_the_progress_line_says_the_job_waits_on_the_provider() -> None:
    provider = ProviderProgress(waiting=True, batch_ids=["b1"], counts={"processing": 7, "succeeded": 3})
    job = JobView(job_id="j", status="running", progress=Progress(total=12, done=2, failed=0, skipped=0),
                  created_at="", started_at=None, finished_at=None, warnings=[], error=None, provider=provider)
    stream = io.StringIO()
    ProgressLine(stream, interactive=False)([job])
    assert "waiting on the provider, 3/10 done" in stream.getvalue()


def test_eval_delivery_flag_overrides_the_file() -> None:
    options, origins = choose_options({"delivery": "interactive"}, {"delivery": "batch"}, Path("t.jsonl"))
    assert options["delivery"] == "batch" and "from --delivery" in origins


def test_a_gate_config_asks_for_batch_delivery_and_sends_it(tmp_path: Path) -> None:
    path = tmp_path / "gate.toml"
    path.write_text('[options]\ndelivery = "batch"\njudge = "anthropic"\n')
    config = load_config(path)
    assert config.options.delivery == "batch" and gate_options(config)["delivery"] == "batch"
    path.write_text('[options]\ndelivery = "overnight"\n')
    with pytest.raises(GateConfigError, match="delivery"):
        load_config(path)
