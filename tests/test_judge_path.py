"""The batch judge path in one process: a chunk run against real Redis and the fake Messages API on loopback.

The run must never block its event loop on Redis (every sync round trip held up every call in flight), and must keep
what the blocking path guaranteed: each result stored and counted once, spend and request metrics written, a failed
job and a spent budget stopping the judge, and any number of calls in flight up to RAGPULSE_JUDGE_CONCURRENCY.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
import redis.asyncio

from ragpulse.config import keys
from ragpulse.config.settings import Settings
from ragpulse.evaluation.chunk import open_chunk, run_chunk
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.monitoring.counters import read_samples
from ragpulse.store import Store
from tests.fake_anthropic import FakeAnthropic, Fault

PRICES = (3.0, 15.0)
"""USD per million input and output tokens of the test model."""


@dataclass
class Judged:
    """A staged job and what its chunk run left in Redis."""

    store: Store
    job_id: str
    model: str

    def results(self) -> list:
        return self.store.results.all(self.job_id)

    def samples(self, metric: str) -> list[tuple[str, dict[str, str], float]]:
        """This job's model's samples of `metric` (the metrics hash is shared by every test on this Redis)."""
        return [s for s in read_samples(self.store.redis).get(metric, []) if s[1].get("model") == self.model]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeAnthropic(latency=0.05) as server:
        yield server


def traces(n: int) -> list[Trace]:
    return [Trace(trace_id=f"t{i}", query=f"question {i}", answer=f"Fact {i} holds.", gold_doc_ids=["d"],
                  retrieved_docs=[RetrievedDoc(id="d", text=f"Fact {i} holds. Nothing else.")]) for i in range(n)]


def judge_chunk(redis_client: redis.Redis, fake: FakeAnthropic, n: int, options: BatchOptions | None = None,
                forbid_blocking: pytest.MonkeyPatch | None = None, job_id: str | None = None,
                **settings: object) -> Judged:
    """Stage a one-chunk job of `n` traces and run it as a worker does (open_chunk, then run_chunk on a loop).

    With `forbid_blocking`, every connection the sync client would take while the loop runs fails the test.
    """
    model = f"claude-test-{uuid.uuid4().hex[:8]}"
    config = Settings(redis_url=redis_client.connection_pool.connection_kwargs and _url(redis_client),
                      judge_base_url=fake.url, judge_model=model, judge_prices={model: PRICES}, chunk_size=n,
                      **settings)
    store, job_id = Store(redis_client, 600), job_id or uuid.uuid4().hex
    with redis_client.pipeline() as pipe:
        store.stage_job(pipe, job_id, "default", traces(n), options or BatchOptions(judge="anthropic", sample="all"),
                        [], n, "batch", "q")
        pipe.execute()
    work = open_chunk(store, config, job_id, 0)
    blocked: list[str] = []
    if forbid_blocking is not None:
        def refuse(*args: object, **kwargs: object) -> None:
            blocked.append("a blocking Redis call on the chunk run's event loop")
            raise AssertionError(blocked[-1])

        forbid_blocking.setattr(redis_client.connection_pool, "get_connection", refuse)
    asyncio.run(run_chunk(store, config, work))
    if forbid_blocking is not None:
        forbid_blocking.undo()
    assert blocked == []
    return Judged(store, job_id, model)


def _url(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://{kwargs['host']}:{kwargs['port']}/{kwargs.get('db', 0)}"


def test_a_chunk_run_makes_no_blocking_redis_call_and_stores_and_counts_everything(
        redis_client: redis.Redis, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    judged = judge_chunk(redis_client, fake, 40, forbid_blocking=monkeypatch, judge_concurrency=8)
    results = judged.results()
    assert [r.index for r in results] == list(range(40))
    assert all(r.status == "ok" and r.generation is not None for r in results)
    assert judged.store.results.counts(judged.job_id) == (40, 0, 0)
    spend = judged.store.jobs.get(judged.job_id).spend          # written from memory before the run returned
    assert spend.judge_calls == 40 == len(fake.requests) and spend.cost_usd > 0
    [(_, labels, requests)] = [s for s in judged.samples("ragpulse_judge_requests") if s[0] == "total"]
    assert labels["status"] == "ok" and requests == 40
    assert judged.samples("ragpulse_ratelimit_wait_seconds") == []  # no limit held a call: no wait written


def test_a_rejected_credential_fails_the_job_and_the_traces_after_it_are_not_judged(
        redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    fake.push(Fault(status=401))
    judged = judge_chunk(redis_client, fake, 30, judge_concurrency=1)
    record = judged.store.jobs.get(judged.job_id)
    assert record.status == "failed" and "rejected the credentials" in (record.error or "")
    results = judged.results()
    assert all(r.status == "failed" for r in results) and len(results) == 30
    assert all((r.error or "").startswith("job failed: ") for r in results)
    assert len(fake.requests) == 1                              # one call at a time: the first one fails the job


def test_a_spent_job_budget_stops_the_judge(redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    concurrency = 4
    options = BatchOptions(judge="anthropic", sample="all", budget_usd=0.001)
    judged = judge_chunk(redis_client, fake, 40, options, judge_concurrency=concurrency)
    statuses = [r.status for r in judged.results()]
    spend = judged.store.jobs.get(judged.job_id).spend
    per_call = spend.cost_usd / spend.judge_calls
    within_budget = -(-0.001 // per_call)                       # calls until the budget is spent
    assert statuses.count("skipped_budget") > 0
    assert statuses.count("ok") == spend.judge_calls <= within_budget + concurrency   # at most the calls in flight over
    skipped = [r for r in judged.results() if r.status == "skipped_budget"]
    assert all("job budget" in (r.error or "") and r.retrieval is not None for r in skipped)  # kept, not scored


def test_200_calls_in_flight_all_get_a_redis_connection(redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    # A request limit far above the load: every call still takes its slot from the shared pacer, 200 at once.
    judged = judge_chunk(redis_client, fake, 200, judge_concurrency=200, judge_rpm=1_000_000,
                         judge_rate_window_seconds=1)
    results = judged.results()
    assert len(results) == 200 and all(r.status == "ok" for r in results), {r.error for r in results}


def test_a_judge_answering_an_html_page_counts_judge_errors_and_invalid_responses(
        redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    def judge_errors() -> float:
        return sum(value for suffix, labels, value in read_samples(redis_client).get("ragpulse_judge_errors", [])
                   if suffix == "total" and labels.get("app") == "default")

    before = judge_errors()
    fake.push(*[Fault(body=b"<html><body>502 from the proxy</body></html>", headers={"content-type": "text/html"})] * 5)
    judged = judge_chunk(redis_client, fake, 5, judge_concurrency=2)
    results = judged.results()
    assert [r.status for r in results] == ["judge_error"] * 5
    assert all("not a Messages API response" in (r.error or "") for r in results)
    assert judge_errors() - before == 5                          # what JudgeErrorRateHigh reads
    requests = {labels["status"]: value for suffix, labels, value in judged.samples("ragpulse_judge_requests")
                if suffix == "total"}
    assert requests == {"invalid_response": 5}
    assert judged.store.jobs.get(judged.job_id).spend.judge_calls == 0


def test_calls_in_flight_are_counted_in_redis_before_their_answers_and_settled_after(
        redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    """A killed worker must not leave the calls it had sent uncounted: each is reserved (one call, its estimated
    input tokens and cost) before it is sent, where budgets see it, and settled to its actual usage after."""
    import threading  # noqa: PLC0415

    fake.latency, fake.cache_min_tokens = 1.5, 10**9          # no prompt cache: usage is the body's size
    job_id, seen = uuid.uuid4().hex, {}

    def watch() -> None:
        while len(fake.requests) < 4:
            threading.Event().wait(0.01)
        seen["in_flight"] = Store(redis_client, 600).jobs.get(job_id).spend

    watcher = threading.Thread(target=watch)
    watcher.start()
    judged = judge_chunk(redis_client, fake, 4, job_id=job_id, judge_concurrency=4)
    watcher.join(5)
    in_flight = seen["in_flight"]
    # no answer yet: the 4 calls sent, and at most half the concurrency reserved ahead
    assert 4 <= in_flight.judge_calls <= 4 + 2 and in_flight.input_tokens > 0 and in_flight.cost_usd > 0
    spend = judged.store.jobs.get(judged.job_id).spend
    usage = [fake._input_usage(entry["body"]) for entry in fake.requests]
    assert spend.judge_calls == 4 == len(fake.requests)                       # what was reserved ahead given back
    assert spend.input_tokens == sum(u["input_tokens"] for u in usage)          # settled to the actual usage
    assert spend.output_tokens > 0


def test_a_failed_attempt_gives_its_reservation_back(redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    fake.cache_min_tokens = 10**9
    fake.push(Fault(status=500), Fault(status=529))
    judged = judge_chunk(redis_client, fake, 1, judge_concurrency=1)
    assert [r.status for r in judged.results()] == ["ok"]
    spend = judged.store.jobs.get(judged.job_id).spend
    assert len(fake.requests) == 3 and spend.judge_calls == 1                  # the two failed attempts carry no spend
    assert spend.input_tokens == fake._input_usage(fake.requests[-1]["body"])["input_tokens"]


def test_a_reservation_sent_again_applies_once(redis_client: redis.Redis) -> None:
    """A reservation whose reply was lost is sent again under its number; one given up on that reaches Redis after a
    later one (its calls were never sent) applies nothing either. No marker key per reservation: one per run."""
    from ragpulse.config import keys  # noqa: PLC0415
    from ragpulse.model.results import Spend  # noqa: PLC0415
    from ragpulse.store.scripts import RESERVE_SPEND  # noqa: PLC0415
    from ragpulse.store.spend import SpendLedger  # noqa: PLC0415

    reserve = redis_client.register_script(RESERVE_SPEND)
    job_id, run_key = uuid.uuid4().hex, keys.spend_reservations(uuid.uuid4().hex)
    tenant = f"t{uuid.uuid4().hex[:8]}"

    def send(number: int, calls: int) -> int:
        spend = Spend(judge_calls=calls, input_tokens=100 * calls, output_tokens=0, cost_usd=0.25 * calls)
        keys_, args = SpendLedger.reservation(run_key, number, 60, {(job_id, tenant): spend})
        return reserve(keys=keys_, args=args)

    assert [send(1, 3), send(1, 3), send(3, 2), send(2, 5)] == [1, 0, 1, 0]
    assert redis_client.hmget(keys.job(job_id), ["judge_calls", "input_tokens", "cost_usd"]) == [b"5", b"500", b"1.25"]
    assert 0 < redis_client.ttl(run_key) <= 60 and redis_client.ttl(keys.job(job_id)) == -1  # the job's TTL untouched
    day = [k for k in redis_client.scan_iter(f"ragpulse:spend:{tenant}:*")]
    assert len(day) == 1 and redis_client.hget(day[0], "judge_calls") == b"5" and redis_client.ttl(day[0]) > 86400


def test_a_run_goes_on_with_the_jobs_next_chunks_without_a_pause_and_their_rq_jobs_find_them_held(
        redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    """Issue 28: as the last traces of a chunk are in flight, the run takes the job's next waiting chunk and starts
    its traces in the places they free, so the hand-over costs no pause; every trace is judged and stored once, and
    a chunk so taken is held (its own RQ job leaves it alone) until the caller completes it."""
    from ragpulse.evaluation.chunk import take_chunk  # noqa: PLC0415

    fake.latency, size, concurrency = 0.5, 10, 8     # each hand-over falls inside a wave of 8 calls
    model = f"claude-test-{uuid.uuid4().hex[:8]}"
    config = Settings(redis_url=_url(redis_client), judge_base_url=fake.url, judge_model=model,
                      judge_prices={model: PRICES}, chunk_size=size, judge_concurrency=concurrency)
    store, job_id = Store(redis_client, 600), uuid.uuid4().hex
    with redis_client.pipeline() as pipe:
        n_chunks = store.stage_job(pipe, job_id, "default", traces(3 * size),
                                   BatchOptions(judge="anthropic", sample="all"), [], size, "batch", "q")
        pipe.execute()
    assert n_chunks == 3
    work = take_chunk(store, config, job_id, 0)
    assert work is not None and take_chunk(store, config, job_id, 0) is None          # a live lease holds it
    ran = asyncio.run(run_chunk(store, config, work, follow=True))
    assert ran == [0, 1, 2]
    assert take_chunk(store, config, job_id, 1) is None and take_chunk(store, config, job_id, 2) is None
    assert [store.chunks.complete(job_id, n) for n in ran] == [False, False, True]
    assert take_chunk(store, config, job_id, 2) is None                                # done: nothing to run again
    results = store.results.all(job_id)
    assert [r.index for r in results] == list(range(3 * size)) and {r.status for r in results} == {"ok"}
    assert len(fake.requests) == 3 * size == store.jobs.get(job_id).spend.judge_calls
    sent = {entry["body"]["messages"][0]["content"].split("question ")[1].split("<")[0]: entry["at"]
            for entry in fake.requests}
    for chunk in (1, 2):   # its first call went out while the calls of the chunk before were still unanswered
        first_next = min(sent[str(i)] for i in range(chunk * size, (chunk + 1) * size))
        last_before = max(sent[str(i)] for i in range((chunk - 1) * size, chunk * size))
        assert first_next < last_before + fake.latency / 2, (chunk, first_next - last_before)


def test_the_rq_jobs_of_the_chunks_a_run_takes_are_taken_off_the_queue(redis_client: redis.Redis,
                                                                         fake: FakeAnthropic) -> None:
    """A chunk a run took as its next would cost a worker a forked work-horse only to find it held: the run takes
    its RQ job off the queue as it takes it, and the job's hash still expires on its own."""
    from dispatch.chunks import ChunkEnqueuer, withdraw  # noqa: PLC0415
    from dispatch.queues import queue_named  # noqa: PLC0415
    from ragpulse.evaluation.chunk import take_chunk  # noqa: PLC0415

    size, rq_queue = 10, f"withdraw-{uuid.uuid4().hex[:8]}"
    config = Settings(redis_url=_url(redis_client), chunk_size=size, judge_concurrency=4, result_ttl_seconds=600)
    store, job_id = Store(redis_client, 600), uuid.uuid4().hex
    with redis_client.pipeline(transaction=True) as pipe:
        n_chunks = store.stage_job(pipe, job_id, "default", traces(3 * size), BatchOptions(judge="local", sample="all"),
                                   [], size, "batch", rq_queue)
        ChunkEnqueuer(redis_client, config).enqueue(pipe, rq_queue, job_id, range(n_chunks))
        pipe.execute()
    queue = queue_named(rq_queue, redis_client)
    assert queue.job_ids == [f"{job_id}-{n}" for n in range(3)]
    queue.remove(f"{job_id}-0")                                                   # as a worker dequeues it
    work = take_chunk(store, config, job_id, 0)
    assert work is not None
    taken = functools.partial(withdraw, redis_client)
    assert asyncio.run(run_chunk(store, config, work, follow=True, taken=taken)) == [0, 1, 2]
    assert queue.job_ids == []                                                    # before: chunks 1 and 2 waited
    assert all(0 < redis_client.ttl(f"rq:job:{job_id}-{n}") <= 600 for n in (1, 2))
    assert len(store.results.all(job_id)) == 3 * size


def test_a_chunk_whose_lease_lapsed_is_taken_again(redis_client: redis.Redis, fake: FakeAnthropic) -> None:
    from ragpulse.config import keys  # noqa: PLC0415
    from ragpulse.evaluation.chunk import take_chunk  # noqa: PLC0415

    config = Settings(redis_url=_url(redis_client), judge_base_url=fake.url, chunk_size=5)
    store, job_id = Store(redis_client, 600), uuid.uuid4().hex
    with redis_client.pipeline() as pipe:
        store.stage_job(pipe, job_id, "default", traces(10), BatchOptions(judge="none"), [], 5, "batch", "q")
        pipe.execute()
    assert take_chunk(store, config, job_id, 1) is not None and take_chunk(store, config, job_id, 1) is None
    assert store.chunks.take_next(job_id, 30) == 0 and store.chunks.take_next(job_id, 30) is None
    redis_client.delete(keys.job_lease(job_id, 1))                 # its worker died
    assert take_chunk(store, config, job_id, 1) is not None


def test_the_run_ends_though_a_lease_renewal_in_progress_swallows_cancellation(
        redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """The heartbeat is stopped by the run's end, not cancelled: a cancelled heartbeat was seen to lose the
    cancellation inside the Redis client and renew the leases for ever (the work-horse never returned)."""
    renewals: list[list[int]] = []

    async def renew_swallowing_cancel(self: object, chunks: list[int], lease_seconds: int) -> None:
        renewals.append(list(chunks))
        try:
            await asyncio.sleep(1.5)          # a slow round trip, in progress as the run ends
        except asyncio.CancelledError:
            pass                              # what the client did with the cancellation

    monkeypatch.setattr("ragpulse.store.aio.AsyncJobStore.renew", renew_swallowing_cancel)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with FakeAnthropic(latency=0.6) as slow:   # the run outlasts the first renewal (lease 1 s: every 0.33 s)
        thread_result: list[Judged] = []
        runner = threading.Thread(target=lambda: thread_result.append(
            judge_chunk(redis_client, slow, 4, judge_concurrency=4, lease_seconds=1)), daemon=True)
        runner.start()
        runner.join(timeout=20)
    assert not runner.is_alive(), "the chunk run never ended: its heartbeat kept renewing"
    assert [r.status for r in thread_result[0].results()] == ["ok"] * 4
    assert renewals and all(chunks == [0] for chunks in renewals)


def test_every_held_lease_is_renewed_in_one_round_trip(redis_client: redis.Redis,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One after the other, a CPU-bound run with twenty chunks chained took longer than a lease to renew them all."""
    from ragpulse.config import keys
    from ragpulse.store.aio import AsyncJobStore

    job_id = uuid.uuid4().hex
    sent: list[int] = []
    execute = redis.asyncio.client.Pipeline.execute

    async def counted(self: redis.asyncio.client.Pipeline, *args: object, **kwargs: object) -> object:
        sent.append(len(self.command_stack))
        return await execute(self, *args, **kwargs)

    monkeypatch.setattr(redis.asyncio.client.Pipeline, "execute", counted)

    async def renew() -> None:
        client = redis.asyncio.Redis.from_url(_url(redis_client))
        job = AsyncJobStore(Store(redis_client, 600), client, job_id, "default")
        await job.renew(list(range(20)), 30)
        await client.aclose()

    asyncio.run(renew())
    assert sent == [20]
    assert all(0 < redis_client.ttl(keys.job_lease(job_id, chunk)) <= 30 for chunk in range(20))


def _count_round_trips(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every round trip of an asyncio client from now on: a command's name, or a pipeline's number of commands."""
    sent: list[object] = []
    execute, command = redis.asyncio.client.Pipeline.execute, redis.asyncio.Redis.execute_command

    async def counted_pipeline(self: redis.asyncio.client.Pipeline, *args: object, **kwargs: object) -> object:
        sent.append(len(self.command_stack))
        return await execute(self, *args, **kwargs)

    async def counted_command(self: redis.asyncio.Redis, *args: object, **options: object) -> object:
        sent.append(args[0])
        return await command(self, *args, **options)

    monkeypatch.setattr(redis.asyncio.client.Pipeline, "execute", counted_pipeline)
    monkeypatch.setattr(redis.asyncio.Redis, "execute_command", counted_command)
    return sent


def _counting_one(key: str):  # noqa: ANN202 - a Counting
    def counting(pipe: object) -> None:
        pipe.hincrbyfloat(key, "results", 1)
        pipe.expire(key, 600)
    return counting


def test_results_finishing_together_are_stored_and_counted_in_one_script_call_each_once(
        redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragpulse.evaluation.trace import failed_result
    from ragpulse.store import scripts
    from ragpulse.store.aio import AsyncJobStore

    redis_client.script_load(scripts.RECORD_RESULTS)   # loaded: a first call is one EVALSHA, not a NOSCRIPT and a load
    redis_client.script_load(scripts.RECORD_RESULT)
    job_id, counter = uuid.uuid4().hex, f"test:counted:{uuid.uuid4().hex}"
    results = [failed_result(trace, i, "kept as data") for i, trace in enumerate(traces(20))]
    sent = _count_round_trips(monkeypatch)

    async def record_all() -> tuple[list[bool], list[bool], list[bool]]:
        client = redis.asyncio.Redis.from_url(_url(redis_client))
        job = AsyncJobStore(Store(redis_client, 600), client, job_id, "default")
        first = await asyncio.gather(*(job.record(r, _counting_one(counter)) for r in results[:15]))
        # sent again (all stored), and a group of stored and new ones: each on its own, the new ones counted
        again = await asyncio.gather(*(job.record(r, _counting_one(counter)) for r in results[:5]))
        mixed = await asyncio.gather(*(job.record(r, _counting_one(counter)) for r in results[13:]))
        await client.aclose()
        return first, again, mixed

    first, again, mixed = asyncio.run(record_all())
    assert first == [True] * 15 and again == [False] * 5 and mixed == [False] * 2 + [True] * 5
    assert sent == ["EVALSHA", "EVALSHA", 5, "EVALSHA", 7]   # one script call a group; a group sent again: one more
    assert float(redis_client.hget(counter, "results")) == 20  # each result counted exactly once
    assert 0 < redis_client.ttl(counter) <= 600
    assert [r.index for r in Store(redis_client, 600).results.all(job_id)] == list(range(20))
    assert redis_client.scard(keys.job_failed(job_id)) == 20


def test_a_group_commit_leaves_the_counts_that_recording_each_result_in_turn_leaves(redis_client: redis.Redis) -> None:
    """The real counting of varied results (judged by the local judge, failed, skipped), applied merged for a group
    and one result after the other: the same metric fields with the same values, the same rolling-window buckets."""
    from ragpulse.evaluation.trace import evaluate_trace, failed_result, skipped_result
    from ragpulse.judges import kinds
    from ragpulse.monitoring.recorder import queue_result_counts
    from ragpulse.store.aio import AsyncJobStore

    run = uuid.uuid4().hex[:8]
    judge = kinds.make_judge("local", Settings())
    options = BatchOptions(judge="local", k=[1, 3])
    batch = traces(12) + [Trace(trace_id=f"x{i}", query="q?", answer=f"Answer {i} is 42 but the docs say 7.",
                                retrieved_docs=[RetrievedDoc(id="a", text="The answer is 7.")]) for i in range(6)]

    async def judged() -> list:
        out = [await evaluate_trace(trace, i, options, judge) for i, trace in enumerate(batch)]
        return out + [failed_result(batch[0], 18, "kept as data"), skipped_result(batch[1], 19, "budget", options)]

    results = asyncio.run(judged())

    def recorded(path: str) -> tuple[dict[str, float], dict[str, dict[bytes, float]]]:
        tenant = f"t-{run}-{path}"

        def counting(result: object):  # noqa: ANN202 - a Counting
            return lambda pipe: queue_result_counts(pipe, frozenset(), frozenset({tenant}), tenant, result)

        async def record() -> None:
            client = redis.asyncio.Redis.from_url(_url(redis_client))
            job = AsyncJobStore(Store(redis_client, 600), client, uuid.uuid4().hex, tenant)
            if path == "group":
                assert all(await asyncio.gather(*(job.record(r, counting(r)) for r in results)))
            else:
                for r in results:
                    assert await job.record(r, counting(r))
            await client.aclose()

        asyncio.run(record())
        fields = {name.decode().replace(tenant, "T"): float(value)
                  for name, value in redis_client.hgetall(keys.metrics()).items() if f"tenant={tenant}".encode() in name}
        buckets = {key.decode().replace(tenant, "T"): {f: float(v) for f, v in redis_client.hgetall(key).items()}
                   for key in redis_client.scan_iter(match=f"*{tenant}*")}
        return fields, buckets

    merged_fields, merged_buckets = recorded("group")
    each_fields, each_buckets = recorded("each")
    assert len(merged_fields) >= 20 and merged_buckets
    assert merged_fields.keys() == each_fields.keys()
    assert all(merged_fields[f] == pytest.approx(each_fields[f]) for f in each_fields)
    assert merged_buckets.keys() == each_buckets.keys()
    assert all(merged_buckets[k] == pytest.approx(each_buckets[k]) for k in each_buckets)


def test_an_error_of_a_group_commit_reaches_every_caller(redis_client: redis.Redis,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from ragpulse.evaluation.trace import failed_result
    from ragpulse.store.aio import AsyncJobStore

    async def refused(self: object, *args: object, **kwargs: object) -> object:
        raise redis.ConnectionError("Redis went away")

    monkeypatch.setattr(redis.asyncio.client.Pipeline, "execute", refused)
    monkeypatch.setattr(redis.asyncio.Redis, "execute_command", refused)

    async def record_all() -> list[object]:
        client = redis.asyncio.Redis.from_url(_url(redis_client))
        job = AsyncJobStore(Store(redis_client, 600), client, uuid.uuid4().hex, "default")
        answers = await asyncio.gather(*(job.record(failed_result(trace, i, "kept as data"))
                                         for i, trace in enumerate(traces(3))), return_exceptions=True)
        await client.aclose()
        return answers

    assert all(isinstance(a, redis.ConnectionError) for a in asyncio.run(record_all()))
