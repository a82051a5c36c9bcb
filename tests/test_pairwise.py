"""Pairwise A/B judging (issue 26 part 5): each matched item asked twice with the order swapped; a verdict that flips
with the order is a tie, so a judge that always prefers the first answer gives no false win.

Unit tests of the arithmetic and of the judge call (through the real anthropic SDK against the loopback fake), then
the endpoint against real Redis, the API and an RQ worker."""

from __future__ import annotations

import asyncio
import copy
import json
import time
import uuid
from pathlib import Path

import anthropic
import httpx
import msgspec
import openai
import pytest

from ragpulse.exceptions import JudgeOutputInvalid
from ragpulse.config.settings import Settings
from ragpulse.evaluation.pairwise import open_run, run_pairwise
from ragpulse.judges.anthropic_judge import AnthropicProvider
from ragpulse.judges.openai_judge import OpenAIProvider
from ragpulse.judges.judge_input import JudgeInputLimits
from ragpulse.judges.pairwise import item_from, judge_both_orders, pair_verdict
from ragpulse.generation.prompts import TASKS
from ragpulse.judges.pairwise_prompt import (
    LENGTH_BIAS_CONTROL, PAIRWISE, PAIRWISE_VERSION, PairwiseItem, comparison_message,
)
from ragpulse.judges.prompt import JUDGE_TASK, PROMPT_VERSION
from ragpulse.judges.structured import RetryPolicy, StructuredJudge
from ragpulse.judges.task import ToolTask
from ragpulse.metrics.stats import wilson_interval
from ragpulse.model.pairwise import OrderVerdict, PairFailure, Pairwise, PairVerdict
from ragpulse.model.results import TraceResult
from ragpulse.model.trace import Trace
from ragpulse.model.verdicts import NullObserver
from ragpulse.reporting.pairwise import choose, summarize
from ragpulse.store import Store
from ragpulse.store.pairwise import PairwiseRuns
from tests.fake_anthropic import Fault, FakeAnthropic, always_first, grounded_preference, parse_comparison
from tests.fake_openai import FakeOpenAI
from tests.support import Cluster, start_api, wait_for_job
from tests.traces import faithful_traces

# -- the arithmetic ------------------------------------------------------------------------------------------------


def verdict(i: int, first: str, second: str) -> PairVerdict:
    """An item whose candidate-first order named `first` and baseline-first order named `second` as the winner."""
    orders = [OrderVerdict(candidate_position=1, preferred="1", winner=first, reasoning=""),  # type: ignore[arg-type]
              OrderVerdict(candidate_position=2, preferred="1", winner=second, reasoning="")]  # type: ignore[arg-type]
    return pair_verdict(f"q{i}", i, i, orders)


def section(verdicts: list[PairVerdict], identical: int = 0, failures: list[PairFailure] | None = None) -> Pairwise:
    base = Pairwise(status="finished", judge="anthropic", model="m", prompt_version="v", matched=10, judged=0)
    return summarize(base, verdicts, identical, failures or [])


def test_a_verdict_that_flips_with_the_order_is_a_tie_and_counts_against_consistency() -> None:
    flipped = verdict(0, "candidate", "baseline")
    assert (flipped.consistent, flipped.outcome) == (False, "tie")
    agreed = verdict(1, "baseline", "baseline")
    assert (agreed.consistent, agreed.outcome) == (True, "baseline")
    both_ties = verdict(2, "tie", "tie")
    assert (both_ties.consistent, both_ties.outcome) == (True, "tie")
    half = verdict(3, "candidate", "tie")    # one order undecided: not the same verdict, so a tie
    assert (half.consistent, half.outcome) == (False, "tie")


def test_the_section_adds_up_by_hand() -> None:
    # 3 wins, 1 loss, 1 flipped (tie), 1 identical answer (tie, no judge): decided = 5 judged + 1 identical = 6;
    # score = 3 + (1 + 1) / 2 = 4, win rate 4/6; consistency 4 of the 5 judged; sign test on 3 wins vs 1 loss:
    # p = 2 * P[Bin(4, 1/2) <= 1] = 2 * 5/16 = 0.625.
    verdicts = [verdict(i, "candidate", "candidate") for i in range(3)]
    verdicts += [verdict(3, "baseline", "baseline"), verdict(4, "candidate", "baseline")]
    failed = [PairFailure(trace_id="q9", candidate_index=9, baseline_index=9, reason="judge unavailable")]
    result = section(verdicts, identical=1, failures=failed)
    assert (result.wins, result.losses, result.ties, result.judged, result.identical) == (3, 1, 2, 5, 1)
    assert result.win_rate == pytest.approx(4 / 6)
    assert result.win_rate_ci95 == pytest.approx(wilson_interval(4, 6))
    assert (result.consistent, result.inconsistent) == (4, 1)
    assert result.position_consistency == pytest.approx(0.8)
    assert result.p_value == pytest.approx(0.625) and result.better is None
    assert result.failed == 1 and result.failures[0].reason == "judge unavailable"


def test_a_judge_that_always_prefers_the_first_answer_shows_no_win_and_no_consistency() -> None:
    # every item: candidate first -> candidate wins; baseline first -> baseline wins: all flipped, all ties
    result = section([verdict(i, "candidate", "baseline") for i in range(10)])
    assert result.position_consistency == 0.0 and result.win_rate == 0.5
    low, high = result.win_rate_ci95
    assert low < 0.5 < high
    assert result.better is None and result.p_value is None


def test_over_the_limit_the_same_items_are_chosen_every_time_in_trace_order() -> None:
    def result(i: int) -> TraceResult:
        return TraceResult(trace_id=f"q{i}", index=i, status="ok", app="a", labels="unlabelled", retrieval=None)

    pairs = [(result(i), result(i)) for i in range(50)]
    chosen, left = choose(pairs, 10)
    assert left == 40 and len(chosen) == 10
    assert [c.index for _, c in chosen] == sorted(c.index for _, c in chosen)
    assert chosen == choose(list(reversed(pairs)), 10)[0]
    assert [c.index for _, c in chosen] != list(range(10))     # not simply the first ten
    assert choose(pairs[:5], 10) == (pairs[:5], 0)


def test_both_answers_see_the_same_documents_and_cite_them_by_id() -> None:
    candidate = _trace("q?", [("a", "A."), ("b", "B.")], "A [1]. B [2].", "A.")
    baseline = _trace("q?", [("c", "C."), ("a", "A.")], "C [1]. A [2].", None)
    item = item_from(candidate, baseline, JudgeInputLimits())
    assert [d.id for d in item.documents] == ["a", "c", "b"]     # by best rank, then id; `a` once
    assert item.candidate == "A [a]. B [b]." and item.baseline == "C [c]. A [a]."
    assert item.reference == "A."


def _trace(query: str, docs: list[tuple[str, str]], answer: str, reference: str | None) -> Trace:
    raw = {"query": query, "retrieved_docs": [{"id": i, "text": t} for i, t in docs], "answer": answer}
    if reference:
        raw["reference_answer"] = reference
    return msgspec.convert(raw, Trace)


# -- the judge call, through the real SDK --------------------------------------------------------------------------

ITEM = PairwiseItem(question="How long do refunds take?", documents=[], reference=None,
                    candidate="Refunds take 14 days.", baseline="Refunds take 30 days and include a gift.")


def ask(fake: FakeAnthropic, item: PairwiseItem = ITEM) -> tuple[list[OrderVerdict], list]:
    async def run() -> tuple[list[OrderVerdict], list]:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=fake.url, max_retries=0)
        provider = AnthropicProvider(client, "claude-sonnet-4-6", 512, 0.0, PAIRWISE)
        judge = StructuredJudge(provider, "claude-sonnet-4-6", 512, retry=RetryPolicy(max_retries=0))
        try:
            return await judge_both_orders(judge, item)
        finally:
            await judge.aclose()

    return asyncio.run(run())


def test_each_item_is_asked_in_both_orders_with_neutral_labels_and_the_length_control() -> None:
    with FakeAnthropic(prefer=always_first) as fake:
        orders, calls = ask(fake)
    assert [(o.candidate_position, o.preferred, o.winner) for o in orders] == [(1, "1", "candidate"),
                                                                               (2, "1", "baseline")]
    assert len(calls) == 2 and {c.prompt_version for c in calls} == {PAIRWISE_VERSION}
    shown = [parse_comparison(body["messages"][0]["content"]) for body in fake.bodies]
    assert {(s["answer_1"], s["answer_2"]) for s in shown} == {(ITEM.candidate, ITEM.baseline),
                                                               (ITEM.baseline, ITEM.candidate)}
    body = fake.bodies[0]
    assert body["tools"][0]["name"] == "record_preference" and body["tools"][0]["strict"] is True
    assert body["tools"][0]["input_schema"]["properties"]["preferred"]["enum"] == ["1", "2", "tie"]
    system = " ".join(block["text"] for block in body["system"])
    assert LENGTH_BIAS_CONTROL in system and "candidate" not in system.lower() + body["messages"][0]["content"]


def test_invalid_preference_gets_one_repair_then_fails_the_item_without_a_verdict() -> None:
    with FakeAnthropic() as fake:
        invalid = [Fault(tool_input={"preferred": "first"}), Fault(tool_input={"preferred": "3", "reasoning": "x"})]
        fake.push(*invalid, *invalid)       # both orders, each with its one repair
        with pytest.raises(JudgeOutputInvalid):
            ask(fake)
        repaired = [b for b in fake.bodies if len(b["messages"]) > 1]
        assert len(fake.bodies) == 4 and len(repaired) == 2
        assert "Call record_preference again" in str(repaired[0]["messages"][-1]["content"])


class Reservations(NullObserver):
    """Records the input-token estimate of every call reserved."""

    def __init__(self) -> None:
        self.estimates: list[int] = []

    async def reserve(self, model: str, input_tokens: int, output_tokens: int) -> None:
        self.estimates.append(input_tokens)


def test_a_task_is_estimated_and_recorded_as_itself_not_as_the_trace_judgment() -> None:
    async def run(fake: FakeAnthropic, observer: Reservations) -> list:
        client = anthropic.AsyncAnthropic(api_key="k", base_url=fake.url, max_retries=0)
        provider = AnthropicProvider(client, "claude-sonnet-4-6", 512, 0.0, PAIRWISE)
        judge = StructuredJudge(provider, "claude-sonnet-4-6", 512, retry=RetryPolicy(max_retries=0),
                                observer=observer)
        try:
            _, calls = await judge.ask([{"role": "user", "content": comparison_message(ITEM, True)}],
                                       lambda reply: (reply.output, reply.problem))
            return calls
        finally:
            await judge.aclose()

    observer = Reservations()
    with FakeAnthropic() as fake:
        calls = asyncio.run(run(fake, observer))
    chars = len(json.dumps([{"role": "user", "content": comparison_message(ITEM, True)}]))
    # The first estimate is the task's own: (its system + examples + tool characters + the messages') / 3.5.
    assert observer.estimates == [int(PAIRWISE.estimate_input_tokens(chars))]
    assert PAIRWISE.fixed_chars != JUDGE_TASK.fixed_chars
    assert [call.prompt_version for call in calls] == [PAIRWISE_VERSION]
    assert JUDGE_TASK.version == PROMPT_VERSION
    # A task that names no version gets a hash of what it sends: distinct per task, and changed with its prompt.
    assert len({task.version for task in TASKS}) == len(TASKS)   # the two writers share a tool, not a prompt
    write = TASKS[0]
    assert ToolTask(write.system, write.examples, write.tool).version == write.version
    assert ToolTask(write.system + " Be brief.", write.examples, write.tool).version != write.version


@pytest.mark.parametrize("structured", ["tools", "json_schema"])
def test_the_openai_compatible_judge_compares_through_its_own_structured_output(structured: str) -> None:
    async def run(fake: FakeOpenAI) -> tuple[list[OrderVerdict], list]:
        client = openai.AsyncOpenAI(api_key="k", base_url=fake.base_url, max_retries=0)
        provider = OpenAIProvider(client, fake.model, 512, 0.0, structured, PAIRWISE)  # type: ignore[arg-type]
        judge = StructuredJudge(provider, fake.model, 512, retry=RetryPolicy(max_retries=0))
        try:
            return await judge_both_orders(judge, ITEM)
        finally:
            await judge.aclose()

    with FakeOpenAI(prefer=always_first) as fake:
        orders, calls = asyncio.run(run(fake))
        body = fake.bodies[0]
    assert [o.winner for o in orders] == ["candidate", "baseline"] and len(calls) == 2
    assert LENGTH_BIAS_CONTROL in body["messages"][0]["content"]
    named = (body["tools"][0]["function"]["name"] if structured == "tools"
             else body["response_format"]["json_schema"]["name"])
    assert named == "record_preference"


# -- live: real Redis, the API, an RQ worker ------------------------------------------------------------------------


def unfaithful_all(traces: list[dict]) -> list[dict]:
    """Every trace answers with claims no retrieved document supports."""
    changed = copy.deepcopy(traces)
    for i, trace in enumerate(changed):
        trace["answer"] = f"The warranty of model {i} lasts a lifetime. It covers flood damage."
    return changed


@pytest.fixture(scope="module")
def fake() -> FakeAnthropic:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture(scope="module")
def cluster(redis_url: str, tmp_path_factory: pytest.TempPathFactory, fake: FakeAnthropic) -> Cluster:
    live = Cluster(redis_url, tmp_path_factory.mktemp("pairwise"), fake, workers=1, RAGPULSE_JUDGE_MAX_RETRIES="1")
    yield live
    live.stop()


def run_traces(n: int) -> list[dict]:
    """n labelled traces whose answers repeat the gold passage, in an app of their own, their questions unique to
    this call (faults scripted for them reach no other test)."""
    app = f"pw-{uuid.uuid4().hex[:8]}"
    return [{**t, "app": app, "query": f"{t['query']} ({app})"} for t in faithful_traces(n)]


def two_runs(http: httpx.Client, traces: list[dict], candidate: list[dict] | None = None) -> tuple[str, str]:
    """A baseline whose answers no document supports and a candidate (by default `traces`, whose answers repeat the
    gold passage), judge none: no call is made before the pairwise ones."""
    ids = []
    for batch in (candidate or traces, unfaithful_all(traces)):
        response = http.post("/v1/batches", json={"traces": batch, "options": {"judge": "none"}})
        assert response.status_code == 202, response.text
        ids.append(response.json()["job_id"])
    for job_id in ids:
        wait_for_job(http, job_id)
    return ids[0], ids[1]


def pairwise(http: httpx.Client, candidate: str, baseline: str, timeout: float = 60.0, **params: str) -> dict:
    """Poll the compare endpoint with pairwise=true until it answers 200; the comparison."""
    deadline = time.monotonic() + timeout
    statuses = []
    while time.monotonic() < deadline:
        response = http.get(f"/v1/jobs/{candidate}/compare",
                            params={"baseline": baseline, "pairwise": "true", "judge": "anthropic", **params})
        statuses.append(response.status_code)
        if response.status_code == 200:
            return {**response.json(), "_statuses": statuses}
        assert response.status_code == 202, response.text
        pending = response.json()
        assert pending["status"] in {"queued", "running"} and pending["poll"].startswith(f"/v1/jobs/{candidate}/")
        time.sleep(0.2)
    raise AssertionError(f"the pairwise run did not end: {statuses[-3:]}")


def test_always_first_judge_comes_out_zero_consistent_and_fifty_percent_not_a_false_win(
        cluster: Cluster, fake: FakeAnthropic) -> None:
    fake.prefer = always_first
    candidate, baseline = two_runs(cluster.http, run_traces(12))
    before = len(fake.bodies)
    body = pairwise(cluster.http, candidate, baseline)
    assert body["_statuses"][0] == 202 and body["matched"] == 12
    section = body["pairwise"]
    assert section["status"] == "finished" and section["judged"] == 12 and section["failed"] == 0
    assert section["position_consistency"] == 0.0 and section["inconsistent"] == 12
    assert section["win_rate"] == 0.5 and section["ties"] == 12 and section["wins"] == section["losses"] == 0
    low, high = section["win_rate_ci95"]
    assert low < 0.5 < high
    assert section["position_consistency_ci95"][0] == 0.0 and section["position_consistency_ci95"][1] < 0.35
    assert section["first_position_rate"] == 1.0 and section["better"] is None
    assert section["warnings"] == [] and section["self_preference"] == {}
    assert section["length_bias_control"] == LENGTH_BIAS_CONTROL and section["prompt_version"] == PAIRWISE_VERSION
    assert section["spend"]["judge_calls"] == 24 and len(fake.bodies) - before == 24
    again = cluster.http.get(f"/v1/jobs/{candidate}/compare",
                             params={"baseline": baseline, "pairwise": "true", "judge": "anthropic"})
    assert again.status_code == 200 and again.json()["pairwise"] == section
    assert len(fake.bodies) - before == 24                       # asked again: found, not judged again
    plain = cluster.http.get(f"/v1/jobs/{candidate}/compare", params={"baseline": baseline})
    assert plain.status_code == 200 and plain.json()["pairwise"] is None


def test_a_judge_that_prefers_the_grounded_answer_in_either_position_is_consistent(
        cluster: Cluster, fake: FakeAnthropic) -> None:
    fake.prefer = grounded_preference
    traces = run_traces(10)
    written_by_the_judge = [{**t, "generator_model": "claude-sonnet-4-6"} if i < 3 else t for i, t in enumerate(traces)]
    candidate, baseline = two_runs(cluster.http, traces, written_by_the_judge)
    section = pairwise(cluster.http, candidate, baseline)["pairwise"]
    assert section["self_preference"] == {"candidate": 3} and "judge model claude-sonnet-4-6" in section["warnings"][0]
    assert section["position_consistency"] == 1.0 and section["consistent"] == 10
    assert section["win_rate"] == 1.0 and section["wins"] == 10
    low, high = section["win_rate_ci95"]
    assert high == 1.0 and 0.65 < low < 0.75                       # Wilson(10, 10): [0.722, 1]
    assert section["better"] == "candidate" and section["p_value"] == pytest.approx(2 / 2 ** 10)
    assert section["first_position_rate"] == 0.5
    reasons = {o["reasoning"] for p in section["pairs"] for o in p["orders"]}
    assert any("has 1 supported" in r for r in reasons)


def test_failed_items_are_counted_and_listed_never_given_a_verdict(cluster: Cluster, fake: FakeAnthropic) -> None:
    fake.prefer = grounded_preference
    traces = run_traces(8)
    candidate = copy.deepcopy(traces)
    candidate[6]["answer"] = unfaithful_all(traces)[6]["answer"]     # the same answer as the baseline's
    del candidate[7]["answer"]                                       # nothing to compare
    fake.push_for(traces[0]["query"], *[Fault(status=500)] * 4)      # both orders, each tried twice
    invalid = Fault(tool_input={"preferred": "maybe", "reasoning": "x"})
    fake.push_for(traces[1]["query"], *[invalid] * 4)                # both orders, each with its repair
    section = pairwise(cluster.http, *two_runs(cluster.http, traces, candidate))["pairwise"]
    assert section["status"] == "finished" and section["matched"] == 8
    assert section["not_judged"] == {"no_answer": 1} and section["identical"] == 1
    assert section["failed"] == 2 and section["judged"] == 4
    reasons = {f["trace_id"]: f["reason"] for f in section["failures"]}
    assert set(reasons) == {"q0", "q1"}
    assert "unavailable after 2 attempts" in reasons["q0"] and "invalid after one repair" in reasons["q1"]
    assert {p["trace_id"] for p in section["pairs"]} == {"q2", "q3", "q4", "q5"}
    # 4 wins and the identical item as a tie: (4 + 1/2) / 5; the failed items are in no rate
    assert section["wins"] == 4 and section["ties"] == 1 and section["win_rate"] == pytest.approx(0.9)


def test_a_heuristic_or_unconfigured_judge_is_refused_naming_the_option(cluster: Cluster) -> None:
    traces = run_traces(3)
    ids = []
    for judge in ("local", "local"):
        response = cluster.http.post("/v1/batches", json={"traces": traces, "options": {"judge": judge}})
        ids.append(response.json()["job_id"])
    for job_id in ids:
        wait_for_job(cluster.http, job_id)
    url = f"/v1/jobs/{ids[0]}/compare"
    refused = cluster.http.get(url, params={"baseline": ids[1], "pairwise": "true"})   # the batch's judge: local
    assert refused.status_code == 422, refused.text
    body = refused.json()
    assert body["errors"][0]["path"] == "query.judge" and "needs an LLM judge" in body["detail"]
    assert "judge=anthropic" in body["detail"] and "candidate batch" in body["detail"]
    refused = cluster.http.get(url, params={"baseline": ids[1], "pairwise": "true", "judge": "local"})
    assert refused.status_code == 422 and refused.json()["errors"][0]["path"] == "query.judge"
    unconfigured = cluster.http.get(url, params={"baseline": ids[1], "pairwise": "true", "judge": "openai"})
    assert unconfigured.status_code == 422 and "RAGPULSE_OPENAI_BASE_URL" in unconfigured.json()["detail"]
    unknown = cluster.http.get(url, params={"baseline": ids[1], "pairwise": "true", "judge": "gpt"})
    assert unknown.status_code == 400 and unknown.json()["errors"][0]["path"] == "query.judge"
    assert cluster.http.get(url, params={"baseline": ids[1]}).status_code == 200     # no pairwise: as before


def test_rejected_credentials_fail_the_run_with_the_reason(cluster: Cluster, fake: FakeAnthropic) -> None:
    traces = run_traces(3)
    for trace in traces:
        fake.push_for(trace["query"], Fault(status=401), Fault(status=401))
    section = pairwise(cluster.http, *two_runs(cluster.http, traces))["pairwise"]
    assert section["status"] == "failed" and "rejected the credentials" in section["error"]
    assert section["judged"] == 0 and section["failed"] == 3 and section["win_rate"] is None


def test_another_tenant_can_neither_start_nor_read_a_pairwise_run(
        cluster: Cluster, fake: FakeAnthropic, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:6]
    keys = f"acme-{run}:key-a-{run},globex-{run}:key-g-{run}"
    url, api = start_api(cluster.redis_url, tmp_path, {**cluster.env, "RAGPULSE_API_KEYS": keys})
    try:
        with httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer key-a-{run}"}) as acme, \
                httpx.Client(base_url=url, timeout=30, headers={"Authorization": f"Bearer key-g-{run}"}) as globex:
            fake.prefer = grounded_preference
            candidate, baseline = two_runs(acme, run_traces(3))
            before = len(fake.bodies)
            params = {"baseline": baseline, "pairwise": "true", "judge": "anthropic"}
            assert globex.get(f"/v1/jobs/{candidate}/compare", params=params).status_code == 404
            assert len(fake.bodies) == before                           # nothing was enqueued for globex
            assert pairwise(acme, candidate, baseline)["pairwise"]["wins"] == 3
            assert globex.get(f"/v1/jobs/{candidate}/compare", params=params).status_code == 404
    finally:
        api.stop()


def test_a_spent_daily_budget_stops_the_run_item_by_item(
        cluster: Cluster, fake: FakeAnthropic, redis_client, monkeypatch: pytest.MonkeyPatch) -> None:
    """In process, on the cluster's Redis and jobs: a tenant of its own whose daily budget the first item spends;
    one item at a time (concurrency 2 = one item's two calls), so every later item finds the budget spent."""
    fake.prefer = grounded_preference
    candidate, baseline = two_runs(cluster.http, run_traces(4))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    settings = Settings.from_env({"REDIS_URL": cluster.redis_url, "ANTHROPIC_API_KEY": "k",
                                  "RAGPULSE_JUDGE_BASE_URL": fake.url, "RAGPULSE_JUDGE_CONCURRENCY": "2",
                                  "RAGPULSE_TENANT_DAILY_BUDGET_USD": "0.000001"})
    runs = PairwiseRuns(redis_client, settings.pairwise_ttl_seconds)
    record, created = runs.find_or_create(tenant=f"budget-{uuid.uuid4().hex[:8]}", candidate=candidate,
                                          baseline=baseline, judge="anthropic", model="claude-sonnet-4-6",
                                          version=PAIRWISE_VERSION, rq_queue="unused")
    assert created
    work = open_run(Store(redis_client, settings.result_ttl_seconds), runs, settings, record)
    section = asyncio.run(run_pairwise(settings, work))
    assert section.status == "finished" and section.judged == 1 and section.failed == 3
    assert all("tenant daily budget" in f.reason for f in section.failures)
    assert section.spend is not None and section.spend.judge_calls == 2 and section.spend.cost_usd > 0
    stored = runs.get(record.run_id)
    assert stored is not None and (stored.total, stored.done, stored.failed) == (4, 1, 3)


def test_the_cli_waits_for_the_pairwise_verdict_and_prints_it(cluster: Cluster, fake: FakeAnthropic) -> None:
    import subprocess
    import sys

    fake.prefer = grounded_preference
    candidate, baseline = two_runs(cluster.http, run_traces(10))
    out = subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "compare", candidate, baseline, "--pairwise",
                          "--judge", "anthropic", "--server", cluster.url], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pairwise judging by anthropic" in out.stdout and "candidate wins 10, baseline wins 0, ties 0" in out.stdout
    assert "candidate win rate 1.00 [0.72, 1.00]" in out.stdout and "the judge prefers the candidate" in out.stdout
    assert "pairwise judging by anthropic queued" in out.stderr or "running" in out.stderr   # it waited on the 202s
    refused = subprocess.run([sys.executable, "-m", "ragpulse.ops.cli", "compare", candidate, baseline,
                              "--pairwise", "--judge", "local", "--server", cluster.url], capture_output=True,
                             text=True, timeout=60)
    assert refused.returncode == 2 and "--judge" in refused.stderr                 # argparse: not a pairwise judge
