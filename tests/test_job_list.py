"""GET /v1/jobs against a real API and Redis: newest first, cursor pagination, filters, tenant isolation, bad
parameters, and the per-tenant index's TTL and trimming. No worker runs: jobs stay queued unless a test finishes
them through the store, as the worker would."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
import redis

from ragpulse.config import keys
from ragpulse.store import Store
from ragpulse.store.job_index import JobIndex
from tests.support import Tenants, tenant_apis

pytestmark = pytest.mark.integration

TTL = 3600


def trace(app: str, n: int) -> dict:
    return {"trace_id": f"t{n}", "app": app, "query": f"question {n}",
            "retrieved_docs": [{"id": "d1", "text": "a document"}], "gold_doc_ids": ["d1"]}


def submit(http: httpx.Client, apps: list[str], run: str | None = None) -> str:
    options = {"judge": "none", **({"run": run} if run else {})}
    accepted = http.post("/v1/batches", json={"traces": [trace(a, n) for n, a in enumerate(apps)],
                                              "options": options})
    assert accepted.status_code == 202, accepted.text
    return accepted.json()["job_id"]


@pytest.fixture(scope="module")
def tenants(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenants]:
    with tenant_apis(redis_url, tmp_path_factory.mktemp("joblist"), "joblist",
                     {"RAGPULSE_RESULT_TTL_SECONDS": str(TTL)}) as apis:
        yield apis


def first(t: Tenants) -> str:
    return next(iter(t.keys))


def second(t: Tenants) -> str:
    return list(t.keys)[1]


def all_pages(http: httpx.Client, **params: object) -> tuple[list[dict], int]:
    """Every item across pages (following next_cursor) and how many pages it took."""
    items, cursor, pages = [], None, 0
    while True:
        page = http.get("/v1/jobs", params={**params, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        body = page.json()
        items += body["items"]
        pages += 1
        if body["next_cursor"] is None:
            return items, pages
        cursor = body["next_cursor"]


def test_lists_newest_first_across_pages_without_duplicates(tenants: Tenants) -> None:
    with tenants.api(first(tenants)) as http:
        made = [submit(http, ["shop"], run=f"page-{n}") for n in range(7)]
        items, pages = all_pages(http, limit=3)
    ids = [i["job_id"] for i in items]
    assert ids[:7] == made[::-1]             # newest first
    assert len(ids) == len(set(ids))         # no job twice across pages
    assert pages == -(-len(ids) // 3)        # 3 per page: ceil(n / 3) pages, the last one ending the list


def test_item_carries_counts_apps_run_and_links(tenants: Tenants) -> None:
    with tenants.api(first(tenants)) as http:
        job_id = submit(http, ["shop", "docs", "shop"], run="items")
        item = next(i for i in http.get("/v1/jobs", params={"run": "items"}).json()["items"] if i["job_id"] == job_id)
        status = http.get(f"/v1/jobs/{job_id}").json()
        for link in item["links"].values():
            assert link.startswith("/")
        assert http.get(item["links"]["report"]).status_code == 202   # queued: the report is pending
    assert item["apps"] == ["docs", "shop"] and item["run"] == "items" and item["variant"] == "rag"
    assert item["environment"] == "evaluation"                          # a batch that did not say otherwise
    assert item["dataset"] is None and item["delivery"] == "interactive"
    assert item["judge"] == "none" and item["progress"] == status["progress"] == {
        "total": 3, "done": 0, "failed": 0, "skipped": 0}
    assert item["status"] == status["status"] and item["created_at"] == status["created_at"]
    assert item["links"] == {"report": f"/v1/jobs/{job_id}/report", "page": f"/jobs/{job_id}"}


def test_a_bound_batch_lists_its_dataset_version(tenants: Tenants) -> None:
    name = f"set-{uuid.uuid4().hex[:6]}"
    with tenants.api(first(tenants)) as http:
        items = [{"item_id": "i1", "query": "question", "gold_doc_ids": ["d1"]}]
        assert http.post(f"/v1/datasets/{name}/versions", json={"items": items}).status_code == 201
        accepted = http.post("/v1/batches", json={
            "dataset": {"name": name, "version": 1}, "options": {"judge": "none", "run": "bound"},
            "traces": [{"item_id": "i1", "retrieved_docs": [{"id": "d1", "text": "a document"}]}]})
        assert accepted.status_code == 202, accepted.text
        listed = http.get("/v1/jobs", params={"run": "bound"}).json()["items"]
    item = next(i for i in listed if i["job_id"] == accepted.json()["job_id"])
    assert item["dataset"] == {"name": name, "version": 1}


def test_filters_by_app_run_and_status(tenants: Tenants, redis_url: str) -> None:
    run = f"filter-{uuid.uuid4().hex[:6]}"
    with tenants.api(first(tenants)) as http:
        shop = submit(http, ["shop"], run=run)
        docs = submit(http, ["docs"], run=run)
        other = submit(http, ["docs"], run=f"{run}-other")
        Store(redis.Redis.from_url(redis_url), TTL).jobs.finish(docs, "finished")
        by_run, _ = all_pages(http, run=run)
        by_app, _ = all_pages(http, run=run, app="docs")
        finished, _ = all_pages(http, run=run, status="finished")
        queued, _ = all_pages(http, status="queued", limit=100)
    assert [i["job_id"] for i in by_run] == [docs, shop]
    assert [i["job_id"] for i in by_app] == [docs]
    assert [i["job_id"] for i in finished] == [docs] and finished[0]["status"] == "finished"
    assert shop in {i["job_id"] for i in queued} and other in {i["job_id"] for i in queued}
    assert docs not in {i["job_id"] for i in queued}


def test_another_tenants_jobs_are_never_listed(tenants: Tenants) -> None:
    with tenants.api(first(tenants)) as a, tenants.api(second(tenants)) as b:
        mine = submit(a, ["shop"], run="isolation")
        theirs = submit(b, ["shop"], run="isolation")
        listed_a, _ = all_pages(a, limit=100)
        listed_b, _ = all_pages(b, limit=100)
    assert mine in {i["job_id"] for i in listed_a} and theirs not in {i["job_id"] for i in listed_a}
    assert {i["job_id"] for i in listed_b} == {theirs}


@pytest.mark.parametrize(("params", "path"), [
    ({"limit": 0}, "query.limit"), ({"limit": 101}, "query.limit"), ({"limit": "x"}, "query.limit"),
    ({"status": "done"}, "query.status"), ({"app": "no spaces"}, "query.app"), ({"run": "a b"}, "query.run"),
    ({"cursor": "12"}, "query.cursor"), ({"cursor": "1-" + "z" * 32}, "query.cursor"), ({"cursor": ""}, "query.cursor"),
])
def test_bad_parameters_are_400_naming_the_parameter(tenants: Tenants, params: dict, path: str) -> None:
    with tenants.api(first(tenants)) as http:
        answer = http.get("/v1/jobs", params=params)
    assert answer.status_code == 400, answer.text
    assert path in {e["path"] for e in answer.json()["errors"]}


def test_listing_needs_a_key(tenants: Tenants) -> None:
    assert httpx.get(f"{tenants.url}/v1/jobs").status_code == 401


def test_expired_jobs_leave_the_list_and_the_index(tenants: Tenants, redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    with tenants.api(first(tenants)) as http:
        gone = submit(http, ["shop"], run="expiry")
        client.delete(keys.job(gone))            # what the job hash's TTL does
        listed, _ = all_pages(http, run="expiry")
    assert gone not in {i["job_id"] for i in listed}
    assert client.zscore(keys.tenant_jobs(first(tenants)), gone) is None
    assert 0 < client.ttl(keys.tenant_jobs(first(tenants))) <= TTL


def test_index_trims_members_older_than_retention(redis_client: redis.Redis) -> None:
    tenant = f"trim-{uuid.uuid4().hex[:8]}"
    index = JobIndex(redis_client, ttl_seconds=60)
    old = "0" * 32
    redis_client.zadd(keys.tenant_jobs(tenant), {old: 1_000})   # created in 1970: past any retention
    with redis_client.pipeline() as pipe:
        index.stage(pipe, tenant, "1" * 32)
        pipe.execute()
    assert [m.decode() for m in redis_client.zrange(keys.tenant_jobs(tenant), 0, -1)] == ["1" * 32]
    assert 0 < redis_client.ttl(keys.tenant_jobs(tenant)) <= 60


def test_ties_in_creation_time_are_neither_lost_nor_repeated(redis_client: redis.Redis) -> None:
    tenant = f"ties-{uuid.uuid4().hex[:8]}"
    ids = [f"{n:032x}" for n in range(5)]
    redis_client.zadd(keys.tenant_jobs(tenant), dict.fromkeys(ids, 5_000))
    index, seen, cursor = JobIndex(redis_client, 60), [], None
    while True:
        page, cursor = index.scan(tenant, cursor, 2, 2, lambda ids: [True] * len(ids))
        seen += page
        if cursor is None:
            break
    redis_client.delete(keys.tenant_jobs(tenant))
    assert seen == sorted(ids, reverse=True)
