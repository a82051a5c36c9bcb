"""Synthetic generation's pure parts: the plan, related pairs, duplicates, ids and splits, the retrieval filter; and
the index of a dataset's generation jobs, on real Redis."""

from __future__ import annotations

import uuid

import msgspec
import pytest
import redis

from ragpulse.generation.assign import item_id, review_sample, split_of
from ragpulse.generation.dedupe import duplicate_of, normalize
from ragpulse.generation.plan import plan, type_counts
from ragpulse.generation.related import related_pairs
from ragpulse.generation.retrieval_filter import retrieval_filter
from ragpulse.model.dataset import DatasetItem
from ragpulse.config import defaults, keys
from ragpulse.model.generation import CorpusChunk, GenerateRequest, GenerationView, RetrieverRun
from ragpulse.store.generations import GenerationRecord, Generations

CHUNKS = [
    {"doc_id": "refunds", "chunk_id": "r1", "text": "Refunds on annual plans are issued within 14 days."},
    {"doc_id": "refunds", "chunk_id": "r2", "text": "Refunds are paid back to the original card."},
    {"doc_id": "exports", "chunk_id": "e1", "text": "Exports are capped at 10,000 rows per file."},
    {"doc_id": "limits", "chunk_id": "l1", "text": "Each export file holds at most 10,000 rows."},
]


def request(**fields: object) -> GenerateRequest:
    return msgspec.convert({"chunks": CHUNKS, **fields}, GenerateRequest)


def test_fractions_of_a_total_round_by_largest_remainder() -> None:
    # 7 * (0.5, 0.3, 0.2) = 3.5, 2.1, 1.4 -> floors 3, 2, 1 (6); the one left goes to the largest remainder (0.5)
    counts = type_counts(request(mix={"single_fact": 0.5, "multi_hop": 0.3, "unanswerable": 0.2}, total=7))
    assert counts == {"single_fact": 4, "multi_hop": 2, "unanswerable": 1}


@pytest.mark.parametrize(("fields", "message"), [
    ({"mix": {"single_fact": 0.5}}, "give `total` too"),
    ({"mix": {"single_fact": 0.5, "unanswerable": 0.2}, "total": 5}, "must sum to 1"),
    ({"mix": {"single_fact": 1001}}, r"<= 1000.0 - at `\$.mix\[...\]`"),
    ({"mix": {"single_fact": 600, "multi_hop": 600}}, "asks for 1200 candidates; at most 1000"),
    ({"mix": {"single_fact": 1.7976931348623155e+308}}, r"<= 1000.0"),   # was an overflow: a 500
    ({"mix": {"single_fact": 1}, "chunks": [CHUNKS[0], CHUNKS[0]]}, r"`chunks\[1\].chunk_id`"),
])
def test_bad_requests_name_the_field(fields: dict, message: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=message):
        msgspec.convert({"chunks": CHUNKS, **fields}, GenerateRequest)


def test_related_pairs_adjacent_first_then_overlap() -> None:
    chunks = [msgspec.convert(c, CorpusChunk) for c in CHUNKS]
    pairs = [(a.chunk_id, b.chunk_id) for a, b in related_pairs(chunks)]
    # r1-r2: adjacent in one document. e1-l1: words of 4+ letters {exports, capped, rows, file} and {each, export,
    # file, holds, most, rows} share 2 of 8 = 0.25 >= 0.2. r1-e1 share none.
    assert pairs == [("r1", "r2"), ("e1", "l1")]


def test_plan_binds_types_to_chunks_pairs_and_windows() -> None:
    candidates = plan(request(mix={"single_fact": 5, "multi_hop": 1, "unanswerable": 1}))
    assert [(c.question_type, c.chunk_ids) for c in candidates] == [
        ("single_fact", ["r1"]), ("single_fact", ["r2"]), ("single_fact", ["e1"]), ("single_fact", ["l1"]),
        ("single_fact", ["r1"]), ("multi_hop", ["r1", "r2"]), ("unanswerable", ["r1", "r2", "e1"])]


def test_plan_without_related_pairs_plans_no_multi_hop() -> None:
    lone = [CHUNKS[0], CHUNKS[2]]
    candidates = plan(msgspec.convert({"chunks": lone, "mix": {"multi_hop": 3}}, GenerateRequest))
    assert candidates == []


def test_duplicates_exact_and_near() -> None:
    assert normalize("What is the row LIMIT of an export file?") == "what is the row limit of an export file"
    earlier = ["What is the row limit of an export file?"]
    assert duplicate_of("what is the row limit of an export file", earlier) == earlier[0]
    # tokens differ in one word of nine each: 8 shared / 10 in all = 0.8, at the threshold
    assert duplicate_of("What is the row limit of each export file?", earlier) == earlier[0]
    # 7 shared / 11 = 0.64: a different question
    assert duplicate_of("What's the row limit of one export file?", earlier) is None


def test_ids_splits_and_samples_are_deterministic() -> None:
    assert item_id("single_fact", "What is X?") == item_id("single_fact", "what is x")
    ids = [f"syn-single_fact-{n:04d}" for n in range(1000)]
    test_share = sum(split_of(i, 0.2) == "test" for i in ids) / len(ids)
    assert 0.15 < test_share < 0.25
    assert all(split_of(i, 0.0) == "dev" for i in ids) and all(split_of(i, 1.0) == "test" for i in ids)
    assert review_sample(ids, 5) == review_sample(list(reversed(ids)), 5)
    assert len(set(review_sample(ids, 5))) == 5


def _item(item_id_: str, chunks: list[str] | None, answerable: bool = True) -> DatasetItem:
    return DatasetItem(item_id=item_id_, query="q", answerable=answerable, gold_chunk_ids=chunks,
                       gold_doc_ids=["d"] if chunks else None, source="synthetic")


def test_retrieval_filter_sets_aside_items_whose_chunks_miss_the_top_k() -> None:
    items = [_item("one", ["c1"]), _item("two", ["c2"]), _item("hop", ["c1", "c3"]), _item("unrun", ["c4"]),
             _item("none", None, answerable=False)]
    ranked = [{"doc_id": "d", "chunk_id": f"x{n}"} for n in range(4)]
    runs = [msgspec.convert(r, RetrieverRun) for r in [
        {"item_id": "one", "retrieved": [{"doc_id": "d", "chunk_id": "c1"}, *ranked]},
        {"item_id": "two",
         "retrieved": [*ranked, {"doc_id": "e", "chunk_id": "x9"}, {"doc_id": "d", "chunk_id": "c2"}]},
        {"item_id": "hop", "retrieved": [{"doc_id": "d", "chunk_id": "c3"}, {"doc_id": "d", "chunk_id": "c1"}]},
        {"item_id": "ghost", "retrieved": []},
    ]]
    flagged, outcome = retrieval_filter(items, runs, k=5)
    # "two": c2 is 6th, outside the top 5; "hop" needs both c1 and c3, both in the top 2
    assert outcome.set_aside == ["two"] and outcome.found == 2 and outcome.checked == 3
    assert outcome.not_run == ["unrun"] and outcome.unknown_items == ["ghost"]
    assert [i.retrieval_answerable for i in flagged] == [True, False, True, None, None]
    _, wider = retrieval_filter(items, runs, k=6)
    assert wider.set_aside == []


def test_retrieval_filter_matches_documents_when_the_retriever_names_no_chunks() -> None:
    item = DatasetItem(item_id="a", query="q", gold_chunk_ids=["c1"], gold_doc_ids=["refunds"])
    run = msgspec.convert({"item_id": "a", "retrieved": [{"doc_id": "other"}, {"doc_id": "refunds"}]}, RetrieverRun)
    assert retrieval_filter([item], [run], k=2)[1].found == 1
    assert retrieval_filter([item], [run], k=1)[1].set_aside == ["a"]


def _asker(calls: list[str]):  # noqa: ANN202 - a scripted stand-in for the LLM, in process
    from ragpulse.generation.outputs import ClosedBook, Verdict, Written  # noqa: PLC0415

    async def ask(task, message, kind):  # noqa: ANN001, ANN202
        calls.append(task.name)
        if kind is Written:
            return Written(question=f"What does {message[-30:]} say?", answer="It says so.", key_facts=[])
        if kind is ClosedBook:
            return ClosedBook(answer=None)
        if kind is Verdict:
            return Verdict(passage_answers=True, closed_book_correct=False, reason="ok")
        raise AssertionError(kind)

    return ask


def test_a_spent_budget_sends_nothing_more_and_every_unsent_call_is_a_failure() -> None:
    import asyncio  # noqa: PLC0415

    from ragpulse.generation.run import Generation  # noqa: PLC0415

    calls: list[str] = []
    left = iter([None, None])   # two calls fit, then the job budget is spent

    async def budget() -> str | None:
        return next(left, "job budget of $0.0100 spent ($0.0100)")

    outcome = asyncio.run(Generation(request(mix={"single_fact": 2}), _asker(calls), budget, 1, {}).run())
    # the two writes are sent; every check call after them is not, and neither item is kept without its checks
    assert calls == ["write_question", "write_question"]
    assert outcome.items == [] and len(outcome.failures) == 2
    assert all(f.stage == "closed_book" and f.error.startswith("not sent: job budget") for f in outcome.failures)


def test_a_credentials_error_ends_the_generation() -> None:
    import asyncio  # noqa: PLC0415

    from ragpulse.exceptions import JudgeAuthError  # noqa: PLC0415
    from ragpulse.generation.run import Generation  # noqa: PLC0415

    async def refused(task, message, kind):  # noqa: ANN001, ANN202
        raise JudgeAuthError("401 invalid x-api-key")

    async def no_budget() -> None:
        return None

    with pytest.raises(JudgeAuthError):
        asyncio.run(Generation(request(mix={"single_fact": 1}), refused, no_budget, 1, {}).run())


def test_kept_items_keep_their_chunk_as_gold_and_a_deterministic_split() -> None:
    import asyncio  # noqa: PLC0415

    from ragpulse.generation.run import Generation  # noqa: PLC0415

    async def no_budget() -> None:
        return None

    calls: list[str] = []
    outcome = asyncio.run(Generation(request(mix={"single_fact": 2}, test_fraction=1.0), _asker(calls), no_budget, 4,
                                     {"generation_job": "j"}).run())
    assert calls.count("verify_question") == 2 and calls.count("answer_closed_book") == 2
    assert [(i.gold_chunk_ids, i.gold_doc_ids, i.split) for i in outcome.items] == [
        (["r1"], ["refunds"], "test"), (["r2"], ["refunds"], "test")]
    assert all(i.source == "synthetic" and i.metadata == {"generation_job": "j"} for i in outcome.items)


def stage_generation(store: Generations, tenant: str, dataset: str) -> str:
    job_id = uuid.uuid4().hex
    view = GenerationView(job_id=job_id, dataset=dataset, status="queued", created_at="2026-12-03T08:00:00Z",
                          judge="anthropic", model="m", planned={"single_fact": 1})
    with store.redis.pipeline(transaction=True) as pipe:
        store.stage(pipe, GenerationRecord(tenant=tenant, view=view))
        pipe.execute()
    return job_id


def test_a_datasets_generation_jobs_are_listed_newest_first_per_tenant_bounded_and_expiring(
        redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(defaults, "GENERATIONS_LISTED", 3)
    store, ours, theirs, name = Generations(redis_client, 600), f"t-{uuid.uuid4().hex[:6]}", "other", "faq"
    made = [stage_generation(store, ours, name) for _ in range(5)]
    their_job = stage_generation(store, theirs, name)
    stage_generation(store, ours, "another")
    listed = [view.job_id for view in store.recent(ours, name, 10)]
    assert listed == made[:1:-1]                                          # the 3 newest, newest first
    assert [view.job_id for view in store.recent(ours, name, 2)] == made[:2:-1]
    index = keys.dataset_generations(ours, name)
    assert redis_client.zcard(index) == 3 and 0 < redis_client.ttl(index) <= 600
    redis_client.delete(keys.generation(made[4]))                         # its record expired before the index
    assert [view.job_id for view in store.recent(ours, name, 10)] == [made[3], made[2]]
    assert redis_client.zcard(index) == 2                                 # and the index forgot it
    assert store.recent(ours, "never-generated", 10) == []
    assert [view.job_id for view in store.recent(theirs, name, 10)] == [their_job]


def test_calls_in_flight_are_held_against_the_job_budget(redis_url: str) -> None:
    import asyncio  # noqa: PLC0415

    import redis.asyncio  # noqa: PLC0415

    from ragpulse.config.settings import Settings  # noqa: PLC0415
    from ragpulse.evaluation.reserve import SpendReservations  # noqa: PLC0415
    from ragpulse.generation.llm import GenerationBudget, GenerationCalls  # noqa: PLC0415
    from ragpulse.generation.run import Generation  # noqa: PLC0415

    model, budget_usd = "m", 0.05
    # every call is estimated at 1000 input and 1000 output tokens at $1 and $9 per million: $0.01, and costs $0.012
    settings = Settings(judge_prices={model: (1.0, 9.0)})
    sent: list[str] = []

    async def main() -> tuple[object, GenerationCalls]:
        client = redis.asyncio.Redis.from_url(redis_url)
        calls = GenerationCalls(settings, f"t-{uuid.uuid4().hex[:6]}", SpendReservations(client, 60), budget_usd)
        answer = _asker(sent)

        async def ask(task, message, kind):  # noqa: ANN001, ANN202 - the judge's reserve, send, settle
            reserved = await calls.reserve(model, 1000, 1000)
            await asyncio.sleep(0.01)              # in flight together: 8 at once
            calls.request(model, "ok", 0.01, 1200, 1200, reserved=reserved)
            return await answer(task, message, kind)

        budget = GenerationBudget(client, "t", calls, budget_usd, None)
        try:
            outcome = await Generation(request(mix={"single_fact": 8}), ask, budget.spent, 8, {}).run()
        finally:
            await calls.give_back_unused()
            await client.aclose()
        return outcome, calls

    outcome, calls = asyncio.run(main())
    # 8 writes start together; holds of $0.01 each stop at $0.05 held: 5 writes sent and 3 refused, then every
    # closed-book call finds $0.06 spent and is refused too; nothing is left in flight
    assert len(sent) == 5 and outcome.items == [] and calls.in_flight == 0
    assert calls.total.cost_usd == pytest.approx(5 * 0.012)
    assert calls.total.cost_usd <= budget_usd + 0.01 + 5 * 0.002    # one estimate over, plus what estimates missed
    assert all(f.error.startswith("not sent: job budget") for f in outcome.failures)


def test_queued_generation_requests_are_capped_per_tenant_and_freed_as_a_worker_takes_one(
        redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragpulse.exceptions import JobNotFound, TooManyQueued  # noqa: PLC0415

    store, tenant = Generations(redis_client, 600), f"t-{uuid.uuid4().hex[:6]}"
    queued = [uuid.uuid4().hex for _ in range(defaults.GENERATION_QUEUED_PER_TENANT)]
    for job_id in queued:
        store.queue_request(tenant, job_id, request(mix={"single_fact": 1}))
    refused = uuid.uuid4().hex
    with pytest.raises(TooManyQueued) as caught:
        store.queue_request(tenant, refused, request(mix={"single_fact": 1}))
    assert "4 generation jobs queued" in caught.value.errors[0]["message"]
    assert not redis_client.exists(keys.generation_request(refused))
    store.queue_request("another-tenant", refused, request(mix={"single_fact": 1}))   # a cap per tenant
    # a worker takes a request: read once, deleted, and its place in the cap is free
    assert store.take_request(tenant, queued[0]).mix == {"single_fact": 1}
    assert not redis_client.exists(keys.generation_request(queued[0]))
    with pytest.raises(JobNotFound):
        store.take_request(tenant, queued[0])
    store.queue_request(tenant, uuid.uuid4().hex, request(mix={"single_fact": 1}))
    # a request that expired unread frees its place too
    redis_client.delete(keys.generation_request(queued[1]))
    store.queue_request(tenant, uuid.uuid4().hex, request(mix={"single_fact": 1}))
    assert redis_client.hlen(keys.tenant_generations_queued(tenant)) == 4


def test_queued_generation_bytes_are_capped_per_tenant(redis_client: redis.Redis,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from ragpulse.exceptions import TooManyQueued  # noqa: PLC0415

    store, tenant = Generations(redis_client, 600), f"t-{uuid.uuid4().hex[:6]}"
    size = len(msgspec.msgpack.encode(request(mix={"single_fact": 1})))
    monkeypatch.setattr(defaults, "GENERATION_QUEUED_BYTES_PER_TENANT", 2 * size)
    store.queue_request(tenant, uuid.uuid4().hex, request(mix={"single_fact": 1}))
    store.queue_request(tenant, uuid.uuid4().hex, request(mix={"single_fact": 1}))
    with pytest.raises(TooManyQueued, match="too many queued") as caught:
        store.queue_request(tenant, uuid.uuid4().hex, request(mix={"single_fact": 1}))
    assert "GENERATION_QUEUED_BYTES_PER_TENANT" in caught.value.errors[0]["message"]
