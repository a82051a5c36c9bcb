"""Batch delivery end to end (issue 27): real API, real RQ workers, real Redis, the real anthropic SDK against a
loopback fake of the Messages and Message Batches APIs."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator

import msgspec
import pytest
import redis
from rq import Queue
from rq.registry import StartedJobRegistry

from ragpulse.config import keys
from ragpulse.config.prices import DEFAULT_PRICES_PER_MTOK, call_cost
from ragpulse.intake.estimate import estimate_trace_tokens
from ragpulse.model.trace import Trace
from ragpulse.store import Store
from tests.fake_anthropic import Fault
from tests.fake_anthropic_batches import FakeAnthropicBatches
from tests.support import ROOT, Cluster, wait_for_job

pytestmark = pytest.mark.integration
EXAMPLES = [json.loads(line) for line in (ROOT / "examples" / "acme_support_traces.jsonl").read_text().splitlines()]
TRACES = 500
"""Traces per comparison job: the 65 examples cycled, each copy with its own trace id and question."""
CHUNK = 125
BATCHES = -(-TRACES // CHUNK)
"""Provider batches of a comparison job: one per chunk."""


def traces(n: int, tag: str) -> list[dict]:
    """`n` traces from the examples, each with a unique id and question (so per-question faults hit only one)."""
    out = []
    for i in range(n):
        trace = dict(EXAMPLES[i % len(EXAMPLES)])
        trace["trace_id"] = f"{tag}-{i}"
        trace["query"] = f"{trace['query']} [{tag}-{i}]"
        if i % 13 == 12:
            trace.pop("answer", None)  # no answer, no judge: stored at once in batch delivery
        out.append(trace)
    return out


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAnthropicBatches]:
    with FakeAnthropicBatches(hold=True) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(redis_url: str, fake: FakeAnthropicBatches, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(redis_url, tmp_path_factory.mktemp("batch-delivery"), fake, workers=2,
                RAGPULSE_CHUNK_SIZE=str(CHUNK), RAGPULSE_BATCH_POLL_MIN_SECONDS="0.5",
                RAGPULSE_BATCH_POLL_MAX_SECONDS="1", RAGPULSE_JUDGE_MAX_RETRIES="1")
    yield c
    c.stop()


def wait_until(predicate, what: str, timeout: float = 60.0):  # noqa: ANN001, ANN201
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} did not happen within {timeout} s")


def waiting_on_provider(cluster: Cluster, job_id: str, batches: int) -> dict:
    """The job status once all its chunks wait on the provider (`batches` provider batches submitted)."""
    last: dict = {}

    def ready() -> dict | None:
        last["job"] = job = cluster.http.get(f"/v1/jobs/{job_id}").json()
        provider = job.get("provider")
        return job if provider and provider["waiting"] and len(provider["batch_ids"]) == batches else None
    try:
        return wait_until(ready, f"job {job_id} waiting on {batches} provider batches")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the job last read {last.get('job')}") from None


def comparable(item: dict) -> dict:
    """A result without what differs between two runs of the same verdicts (call ids, latency, tokens, delivery; the
    review slot, keyed by a hash of the content, whose query carries the run's tag)."""
    item = {k: v for k, v in item.items()
            if k not in {"judgments", "failed_calls", "trace_id", "content_key", "review_draw"}}
    return json.loads(json.dumps(item).replace("[batch]", "").replace("[inter]", ""))


def started(cluster: Cluster, connection: redis.Redis) -> list[str]:
    """Ids of the RQ jobs started on the cluster's queues and not ended (RQ's StartedJobRegistry)."""
    queues = [Queue(f"{cluster.env['RAGPULSE_QUEUE']}-{name}", connection=connection) for name in ("online", "batch")]
    return [i for q in queues for i in StartedJobRegistry(queue=q).get_job_ids()]


def watch_work_horses(cluster: Cluster, connection: redis.Redis, seconds: float) -> dict[str, float]:
    """Every RQ job seen started within `seconds` (sampled every 50 ms) -> how long it was seen started."""
    seen: dict[str, list[float]] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = time.monotonic()
        for job in started(cluster, connection):
            seen.setdefault(job, [now, now])[1] = now
        time.sleep(0.05)
    return {job: last - first for job, (first, last) in seen.items()}


def test_a_batch_job_gives_the_interactive_results_at_half_price_without_holding_a_worker(
        cluster: Cluster, fake: FakeAnthropicBatches, redis_url: str) -> None:
    connection = redis.Redis.from_url(redis_url)
    interactive = cluster.post(traces(TRACES, "inter"))
    assert wait_for_job(cluster.http, interactive, timeout=240)["status"] == "finished"
    calls_before, batched_before = fake.interactive, fake.batched_requests()

    batch = traces(TRACES, "batch")
    job_id = cluster.post(batch, delivery="batch")
    job = waiting_on_provider(cluster, job_id, batches=BATCHES)
    judged = sum(1 for t in batch if t.get("answer"))
    assert 0 < judged < TRACES
    assert job["delivery"] == "batch" and job["status"] == "running"
    assert job["provider"]["counts"]["processing"] == judged == fake.batched_requests() - batched_before
    # Traces no judge reads were stored at once; the judged ones wait on the provider, their retrieval metrics and
    # checks stored at once too: in the results as `awaiting_judge`, the same as the interactive job's.
    assert job["progress"]["done"] == TRACES - judged
    assert job["provider"]["awaiting_judge"] == judged
    waiting, inter_items = cluster.results(job_id), cluster.results(interactive)
    assert len(waiting) == TRACES and sum(i["status"] == "awaiting_judge" for i in waiting) == judged
    assert sum(i["retrieval"] is not None for i in waiting if i["status"] == "awaiting_judge") > judged / 2
    early = ("retrieval", "labels", "missed_doc_ids", "checks", "sampled", "sample_reason", "pipeline")
    def security(item: dict) -> dict:
        return {k: v for k, v in (item["security"] or {}).items() if k != "injection_followed"}
    for seen, inter in zip(waiting, inter_items):
        assert {k: seen.get(k) for k in early} == {k: inter.get(k) for k in early}
        assert security(seen) == security(inter)
        assert seen["status"] == ("awaiting_judge" if inter["judgments"] else inter["status"])

    # Nothing runs while the batch waits: no started RQ job, and polling leaves the key count unchanged.
    # Once the chunk jobs that submitted have returned, the only work-horses are the polls, each over in a moment.
    wait_until(lambda: not [j for j in started(cluster, connection) if "-poll-" not in j], "the submitters' return")
    horses = watch_work_horses(cluster, connection, 3.0)            # several polls at 0.5-1 s
    assert horses and all("-poll-" in job for job in horses) and max(horses.values()) < 2.0, horses
    transient = (b"-poll-", b":poll")                               # a poll job and its lease, while one runs
    mine = lambda: sorted(k for k in connection.scan_iter(match=f"*{job_id}*")  # noqa: E731
                          if not any(t in k for t in transient))
    before = mine()
    time.sleep(2.5)
    assert mine() == before
    assert sum(1 for k in before if b":provider:" in k) <= BATCHES * 2  # a state per batch (+ a poll lease)
    polls = [k for k in connection.scan_iter(match=f"rq:job:{job_id}*") if b"-poll-" in k]
    assert len(polls) <= BATCHES                                    # a poll job is not kept once it has run
    assert fake.interactive == calls_before                        # not one interactive call

    fake.release()
    done = wait_for_job(cluster.http, job_id, timeout=120)
    assert done["status"] == "finished" and done["provider"]["waiting"] is False
    assert done["provider"]["awaiting_judge"] == 0
    assert done["provider"]["counts"]["succeeded"] == judged
    assert fake.interactive == calls_before                        # every verdict came out of the batch

    batch_items = cluster.results(job_id)
    assert len(batch_items) == len(inter_items) == TRACES
    assert [comparable(i) for i in batch_items] == [comparable(i) for i in inter_items]
    judged_items = [i for i in batch_items if i["judgments"]]
    assert len(judged_items) == judged
    assert all(c["delivery"] == "batch" for i in judged_items for j in i["judgments"] for c in j["calls"])

    # Spend: each call priced at the batch price, as the report and the job's spend agree.
    calls = [c for i in judged_items for j in i["judgments"] for c in j["calls"]]
    prices = DEFAULT_PRICES_PER_MTOK
    billed = sum(call_cost(prices, c["model"], c["input_tokens"], c["output_tokens"], c["cache_read_input_tokens"],
                           c["cache_creation_input_tokens"], "batch") for c in calls)
    cost = cluster.http.get(f"/v1/jobs/{job_id}/report").json()["generation"]["cost"]
    assert cost["batch_calls"] == judged and cost["cost_usd"] == pytest.approx(billed, rel=1e-6)
    assert cost["saving_usd"] > 0.45 * cost["interactive_cost_usd"]
    assert done["spend"]["cost_usd"] == pytest.approx(billed, rel=1e-6)
    inter_spend = cluster.http.get(f"/v1/jobs/{interactive}").json()["spend"]["cost_usd"]
    assert done["spend"]["cost_usd"] < 0.6 * inter_spend

    # The dry run of each job's traces says within 5% what its report says was billed, in each delivery.
    for tag, delivery, billed_job in (("inter", "interactive", interactive), ("batch", "batch", job_id)):
        body = {"traces": traces(TRACES, tag), "options": {"judge": "anthropic", "delivery": delivery}}
        estimate = cluster.http.post("/v1/batches", params={"dry_run": "true"}, json=body).json()["estimate"]
        report = cluster.http.get(f"/v1/jobs/{billed_job}/report").json()["generation"]["cost"]
        assert estimate["cost_usd"] == estimate["cost_by_delivery"][delivery]
        assert estimate["cost_usd"] == pytest.approx(report["cost_usd"], rel=0.05), (delivery, estimate, report)


def test_workers_killed_while_the_batch_runs_and_as_its_results_come_lose_and_duplicate_nothing(
        cluster: Cluster, fake: FakeAnthropicBatches) -> None:
    batch = traces(30, "kill")
    calls_before, batched_before = fake.interactive, fake.batched_requests()
    job_id = cluster.post(batch, delivery="batch")
    waiting_on_provider(cluster, job_id, batches=1)
    first, second = cluster.workers
    os.kill(first.process.pid, signal.SIGKILL)                       # while the batch runs
    first.process.wait()
    time.sleep(1.5)                                                   # polls go on in the other worker
    fake.release()
    time.sleep(0.6)
    os.kill(second.process.pid, signal.SIGKILL)                      # as the results come: polling or storing them
    second.process.wait()
    cluster.workers = [cluster.add_worker(), cluster.add_worker()]    # resume from whatever Redis holds
    job = wait_for_job(cluster.http, job_id, timeout=120)
    judged = sum(1 for t in batch if t.get("answer"))
    items = cluster.results(job_id)
    assert job["status"] == "finished" and job["progress"]["done"] == len(batch) == len(items)
    assert sorted(i["trace_id"] for i in items) == sorted(t["trace_id"] for t in batch)
    assert fake.batched_requests() - batched_before == judged      # submitted once
    assert fake.interactive == calls_before                        # nothing judged twice, nor interactively
    assert job["provider"]["counts"]["succeeded"] == judged
    assert job["spend"]["judge_calls"] == judged                    # each call counted once


def test_expired_and_errored_requests_are_retried_once_interactively_and_a_bad_output_gets_its_repair(
        cluster: Cluster, fake: FakeAnthropicBatches) -> None:
    batch = [t for t in traces(20, "exp") if t.get("answer")][:6]
    expired, errored, repaired = batch[0]["query"], batch[1]["query"], batch[2]["query"]
    fake.expire.add(expired)
    fake.error.add(errored)
    fake.push_for(repaired, Fault(tool_input={"claims": 3}))       # the batch answer is invalid: one repair
    calls_before = fake.interactive
    job_id = cluster.post(batch, delivery="batch")
    waiting_on_provider(cluster, job_id, batches=1)
    fake.release()
    job = wait_for_job(cluster.http, job_id, timeout=120)
    failures = [(i["trace_id"], i["status"], i.get("error")) for i in cluster.results(job_id) if i["status"] != "ok"]
    assert job["status"] == "finished", failures
    assert job["provider"]["counts"] | {"processing": 0} == {
        "processing": 0, "succeeded": 4, "errored": 1, "expired": 1, "canceled": 0}
    assert fake.interactive - calls_before == 3
    items = {i["trace_id"]: i for i in cluster.results(job_id)}
    deliveries = {tid: [c["delivery"] for j in i["judgments"] for c in j["calls"]] for tid, i in items.items()}
    assert deliveries[batch[0]["trace_id"]] == ["interactive"] and deliveries[batch[1]["trace_id"]] == ["interactive"]
    assert deliveries[batch[2]["trace_id"]] == ["batch", "interactive"]
    assert all(i["status"] == "ok" for i in items.values())


def test_cancel_cancels_the_provider_batch(cluster: Cluster, fake: FakeAnthropicBatches) -> None:
    calls_before = fake.interactive
    job_id = cluster.post(traces(10, "cancel"), delivery="batch")
    [batch_id] = waiting_on_provider(cluster, job_id, batches=1)["provider"]["batch_ids"]
    answer = cluster.http.post(f"/v1/jobs/{job_id}/cancel")
    assert answer.status_code == 202 and answer.json()["status"] == "failed"
    job = wait_until(lambda: (j := cluster.http.get(f"/v1/jobs/{job_id}").json())["finished_at"]
                     and not j["provider"]["waiting"] and j, "the cancelled job ended")
    assert fake.batches[batch_id]["status"] == "ended"
    assert job["provider"]["counts"]["canceled"] == len(fake.batches[batch_id]["requests"])
    assert "cancelled by the client" in job["error"]
    wait_until(lambda: cluster.http.get(f"/v1/jobs/{job_id}").json()["progress"]["failed"] == 10, "traces failed")
    assert fake.interactive == calls_before              # the canceled requests are not judged interactively instead
    wait_until(lambda: cluster.http.get(f"/v1/jobs/{job_id}/report").status_code == 200, "the report")
    again = cluster.http.post(f"/v1/jobs/{job_id}/cancel")
    assert again.status_code == 409 and "path.job_id" in again.text


def test_batch_delivery_is_refused_for_a_judge_without_a_batch_api_and_ignored_by_the_local_judge(
        cluster: Cluster) -> None:
    trace = traces(1, "refuse")
    answer = cluster.http.post("/v1/batches", json={"traces": trace, "options": {"judge": "openai",
                                                                                 "delivery": "batch"}})
    assert answer.status_code == 422 and "$.options.delivery" in answer.text and "RAGPULSE_OPENAI_BATCH" in answer.text
    local = cluster.http.post("/v1/batches", json={"traces": trace, "options": {"judge": "local",
                                                                                "delivery": "batch"}})
    assert local.status_code == 202
    job = wait_for_job(cluster.http, local.json()["job_id"])
    assert job["status"] == "finished" and job["provider"] is None


def test_the_dry_run_prices_each_delivery(cluster: Cluster) -> None:
    body = {"traces": traces(50, "dry"), "options": {"judge": "anthropic", "delivery": "batch"}}
    estimate = cluster.http.post("/v1/batches", params={"dry_run": "true"}, json=body).json()["estimate"]
    by = estimate["cost_by_delivery"]
    args = (DEFAULT_PRICES_PER_MTOK, estimate["model"], estimate["input_tokens"], estimate["output_tokens"],
            estimate["cache_read_input_tokens"], estimate["cache_creation_input_tokens"])
    assert by["interactive"] == pytest.approx(call_cost(*args), abs=1e-6)
    assert by["batch"] == pytest.approx(call_cost(*args, "batch"), abs=1e-6)
    assert estimate["delivery"] == "batch" and estimate["cost_usd"] == by["batch"] < 0.55 * by["interactive"]
    assert keys.provider_polls()  # the due-poll set has one home


def test_a_budget_holds_at_the_batch_price_and_the_reservation_is_given_back(
        cluster: Cluster, fake: FakeAnthropicBatches) -> None:
    batch = [t for t in traces(20, "budget") if t.get("answer")][:10]
    prices = DEFAULT_PRICES_PER_MTOK
    estimates = [call_cost(prices, "claude-sonnet-4-6", *estimate_trace_tokens(msgspec.convert(t, Trace)),
                           delivery="batch") for t in batch]
    budget = sum(estimates[:5]) + 0.1 * estimates[5]             # five fit at the batch price, the sixth does not
    batched_before = fake.batched_requests()
    job_id = cluster.post(batch, delivery="batch", budget_usd=budget)
    waiting = waiting_on_provider(cluster, job_id, batches=1)
    assert fake.batched_requests() - batched_before == 5
    assert waiting["spend"]["cost_usd"] == pytest.approx(sum(estimates[:5]), abs=1e-6)   # reserved while the batch runs
    fake.release()
    job = wait_for_job(cluster.http, job_id, timeout=120)
    statuses = [i["status"] for i in cluster.results(job_id)]
    assert statuses == ["ok"] * 5 + ["skipped_budget"] * 5
    items = cluster.results(job_id)[:5]
    billed = sum(call_cost(prices, c["model"], c["input_tokens"], c["output_tokens"], c["cache_read_input_tokens"],
                           c["cache_creation_input_tokens"], "batch")
                 for i in items for j in i["judgments"] for c in j["calls"])
    assert job["spend"]["cost_usd"] == pytest.approx(billed, abs=2e-6)          # the reservation given back


def test_a_retry_sends_the_traces_it_runs_again_in_a_fresh_provider_batch(
        cluster: Cluster, fake: FakeAnthropicBatches) -> None:
    batch = [t for t in traces(12, "retry") if t.get("answer")][:8]
    job_id = cluster.post(batch, delivery="batch")
    [first] = waiting_on_provider(cluster, job_id, batches=1)["provider"]["batch_ids"]
    assert cluster.http.post(f"/v1/jobs/{job_id}/cancel").status_code == 202
    wait_until(lambda: cluster.http.get(f"/v1/jobs/{job_id}").json()["progress"]["failed"] == len(batch),
               "every trace failed by the cancel")
    wait_until(lambda: cluster.http.get(f"/v1/jobs/{job_id}/report").status_code == 200, "the report")
    assert fake.batches[first]["status"] == "ended"                # its requests all ended `canceled`
    calls_before, batched_before = fake.interactive, fake.batched_requests()

    assert cluster.http.post(f"/v1/jobs/{job_id}/retry").status_code == 202
    [second] = waiting_on_provider(cluster, job_id, batches=1)["provider"]["batch_ids"]
    assert second != first                                         # not the ended batch's results again
    fake.release()
    job = wait_for_job(cluster.http, job_id, timeout=120)
    items = cluster.results(job_id)
    assert job["status"] == "finished"
    assert [i["status"] for i in items] == ["ok"] * len(batch), [(i["status"], i.get("error")) for i in items]
    assert fake.batched_requests() - batched_before == len(batch)   # each trace in a fresh request
    assert fake.interactive == calls_before                         # none retried from the canceled outcome
    assert all(c["delivery"] == "batch" for i in items for j in i["judgments"] for c in j["calls"])
    assert job["provider"]["counts"]["succeeded"] == len(batch)


def spent(redis_url: str, job_id: str) -> tuple[float, float]:
    """(the job's spend, the open API's tenant's spend today) as the budgets read them."""
    return Store(redis.Redis.from_url(redis_url), 3600).spend.spent(job_id, "default")


def test_a_garbage_line_and_a_foreign_custom_id_cost_no_other_trace_its_verdict(
        cluster: Cluster, fake: FakeAnthropicBatches, redis_url: str) -> None:
    batch = [t for t in traces(30, "junk") if t.get("answer")][:20]
    calls_before, (_, day_before) = fake.interactive, spent(redis_url, "none")
    fake.extra_lines = ["<html>not a result</html>", json.dumps({"custom_id": "zzz-0", "result": {"type": "expired"}})]
    try:
        job_id = cluster.post(batch, delivery="batch")
        waiting_on_provider(cluster, job_id, batches=1)
        fake.release()
        job = wait_for_job(cluster.http, job_id, timeout=120)
    finally:
        fake.extra_lines = []
    items = cluster.results(job_id)
    assert [i["status"] for i in items] == ["ok"] * len(batch), [(i["status"], i.get("error")) for i in items]
    assert fake.interactive == calls_before                     # every verdict is the batch's own, none bought again
    assert "2 provider batch result lines ignored" in job["error"] and "not JSON" in job["error"]
    job_spent, day_after = spent(redis_url, job_id)
    assert job_spent == pytest.approx(job["spend"]["cost_usd"], abs=1e-6) and job_spent > 0   # shown to 6 places
    assert day_after - day_before == pytest.approx(job_spent, abs=1e-6)   # the reservation given back: only the bill


@pytest.mark.parametrize("answer", [
    (500, {}, {"type": "error", "error": {"type": "api_error", "message": "scripted create failure"}}),
    (200, {"content-type": "text/html"}, b"<html><body>Gateway login</body></html>"),
], ids=["create-500", "create-html-200"])
def test_a_failed_create_fails_its_traces_with_the_reason_and_gives_the_reservation_back(
        cluster: Cluster, fake: FakeAnthropicBatches, redis_url: str, answer: tuple) -> None:
    batch = [t for t in traces(20, f"create-{answer[0]}") if t.get("answer")][:6]
    calls_before, (_, day_before) = fake.interactive, spent(redis_url, "none")
    fake.create_answer = answer
    try:
        job_id = cluster.post(batch, delivery="batch")
        job = wait_for_job(cluster.http, job_id, timeout=120)
    finally:
        fake.create_answer = None
    items = cluster.results(job_id)
    assert [i["status"] for i in items] == ["judge_error"] * len(batch)
    assert all(i["error"].startswith("provider batch not created") for i in items)
    assert all(i["retrieval"] is not None for i in items)              # kept with what needs no judge
    assert job["status"] != "failed" and job["error"].startswith("provider batch not created")
    if answer[0] == 200:
        assert "JudgeResponseInvalid" in job["error"] and "Gateway login" in job["error"]
    assert fake.interactive == calls_before
    job_spent, day_after = spent(redis_url, job_id)
    assert job_spent == pytest.approx(0, abs=1e-9) and job["spend"]["cost_usd"] == pytest.approx(0, abs=1e-9)
    assert day_after == pytest.approx(day_before, abs=1e-9)            # the tenant's day is as it was
