"""/v1/datasets against a real API and Redis: push (201, then 200 for the same items), list, versions, pages,
tenant isolation (404), and bad input named by its path (422, 400, 409)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import Tenants, tenant_apis

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tenants(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tenants]:
    with tenant_apis(redis_url, tmp_path_factory.mktemp("datasets"), "datasets",
                     {"RAGPULSE_DATASET_VERSIONS_MAX": "3"}) as apis:
        yield apis


def items(n: int, **extra) -> list[dict]:
    return [{"item_id": f"q{i}", "query": f"question {i}?", "gold_doc_ids": [f"d{i}"], **extra} for i in range(n)]


def test_push_list_and_page(tenants: Tenants) -> None:
    with tenants.api(tenants.ids[0]) as api:
        first = api.post("/v1/datasets/faq/versions", json={"items": items(5, split="test"), "description": "v1"})
        assert first.status_code == 201, first.text
        body = first.json()
        assert (body["name"], body["version"], body["status"]) == ("faq", 1, "published")
        assert body["counts"]["by_split"] == {"test": 5} and len(body["content_hash"]) == 64
        again = api.post("/v1/datasets/faq/versions", json={"items": list(reversed(items(5, split="test")))})
        assert again.status_code == 200 and again.json()["version"] == 1
        second = api.post("/v1/datasets/faq/versions", json={"items": items(7)})
        assert second.status_code == 201 and second.json()["version"] == 2
        listed = api.get("/v1/datasets").json()["items"]
        assert [(d["name"], d["versions"], d["latest"]["version"]) for d in listed] == [("faq", 2, 2)]
        assert [v["version"] for v in api.get("/v1/datasets/faq/versions").json()["items"]] == [2, 1]
        page = api.get("/v1/datasets/faq/versions/2", params={"offset": 0, "limit": 4}).json()
        assert [i["item_id"] for i in page["items"]] == ["q0", "q1", "q2", "q3"] and page["next_offset"] == 4
        last = api.get("/v1/datasets/faq/versions/2", params={"offset": 4, "limit": 4}).json()
        assert [i["item_id"] for i in last["items"]] == ["q4", "q5", "q6"] and last["next_offset"] is None
        assert last["version"]["counts"]["items"] == 7


def test_other_tenant_gets_404(tenants: Tenants) -> None:
    with tenants.api(tenants.ids[0]) as api:
        assert api.post("/v1/datasets/private/versions", json={"items": items(1)}).status_code == 201
    with tenants.api(tenants.ids[1]) as api:
        for path in ("/v1/datasets/private/versions", "/v1/datasets/private/versions/1"):
            missing = api.get(path)
            assert missing.status_code == 404 and missing.json()["title"] == "Dataset not found", missing.text
        assert all(d["name"] != "private" for d in api.get("/v1/datasets").json()["items"])


def test_bad_input_names_its_path(tenants: Tenants) -> None:
    with tenants.api(tenants.ids[0]) as api:
        repeated = api.post("/v1/datasets/bad/versions", json={"items": [*items(2), items(1)[0]]})
        assert repeated.status_code == 422 and "items[2].item_id" in repeated.text, repeated.text
        misspelt = api.post("/v1/datasets/bad/versions", json={"items": [{**items(1)[0], "gold_docs": ["x"]}]})
        assert misspelt.status_code == 422
        assert misspelt.json()["errors"][0]["path"] == "$.items[0]" and "gold_docs" in misspelt.text
        split = api.post("/v1/datasets/bad/versions", json={"items": items(1, split="train")})
        assert split.status_code == 422 and split.json()["errors"][0]["path"] == "$.items[0].split"
        assert api.post("/v1/datasets/bad/versions", content=b"{nope",
                        headers={"content-type": "application/json"}).status_code == 400
        name = api.post("/v1/datasets/.hidden/versions", json={"items": items(1)})
        assert name.status_code == 400 and name.json()["errors"][0]["path"] == "path.name", name.text
        page = api.get("/v1/datasets/faq/versions/1", params={"limit": 0})
        assert page.status_code == 400 and page.json()["errors"][0]["path"] == "query.limit"
        assert api.get("/v1/datasets/faq/versions/99").status_code == 404


def test_versions_are_bounded(tenants: Tenants) -> None:
    with tenants.api(tenants.ids[1]) as api:
        for n in range(3):
            assert api.post("/v1/datasets/full/versions", json={"items": items(n + 1)}).status_code == 201
        refused = api.post("/v1/datasets/full/versions", json={"items": items(9)})
        assert refused.status_code == 409 and "RAGPULSE_DATASET_VERSIONS_MAX" in refused.text
        assert refused.json()["errors"][0]["path"] == "path.name"


def test_deleting_frees_room_and_never_reuses_a_number(tenants: Tenants, redis_client) -> None:
    from ragpulse.config import keys

    with tenants.api(tenants.ids[1]) as api:
        for n in range(3):
            assert api.post("/v1/datasets/churn/versions", json={"items": items(n + 2)}).status_code == 201
        held = int(redis_client.get(keys.dataset_items_held(tenants.ids[1])))
        gone = api.delete("/v1/datasets/churn/versions/3")
        assert gone.status_code == 200 and gone.json() == {"name": "churn", "versions": [3], "items": 4}
        assert int(redis_client.get(keys.dataset_items_held(tenants.ids[1]))) == held - 4
        assert api.get("/v1/datasets/churn/versions/3").status_code == 404
        assert api.delete("/v1/datasets/churn/versions/3").status_code == 404
        listed = next(d for d in api.get("/v1/datasets").json()["items"] if d["name"] == "churn")
        assert (listed["versions"], listed["latest"]["version"]) == (2, 2)     # the latest held is version 2 again
        again = api.post("/v1/datasets/churn/versions", json={"items": items(9)})   # room again under the limit of 3
        assert again.status_code == 201 and again.json()["version"] == 4, again.text
        assert [v["version"] for v in api.get("/v1/datasets/churn/versions").json()["items"]] == [4, 2, 1]
        assert not redis_client.exists(keys.dataset_items(tenants.ids[1], "churn", 3),
                                       keys.dataset_order(tenants.ids[1], "churn", 3))
    with tenants.api(tenants.ids[0]) as other:
        assert other.delete("/v1/datasets/churn").status_code == 404            # another tenant's: not found
    with tenants.api(tenants.ids[1]) as api:
        whole = api.delete("/v1/datasets/churn")
        assert whole.status_code == 200 and whole.json() == {"name": "churn", "versions": [4, 2, 1], "items": 14}
        assert int(redis_client.get(keys.dataset_items_held(tenants.ids[1]))) == held - 4 - 5
        assert api.get("/v1/datasets/churn/versions").status_code == 404
        assert all(d["name"] != "churn" for d in api.get("/v1/datasets").json()["items"])
        assert api.post("/v1/datasets/churn/versions", json={"items": items(1)}).json()["version"] == 1
        assert not redis_client.keys(f"{keys.dataset_version(tenants.ids[1], 'churn', 4)}*")


def test_generations_of_a_dataset_never_made_are_404_naming_the_path(tenants: Tenants) -> None:
    with tenants.api(tenants.ids[0]) as api:
        assert api.post("/v1/datasets/pushed-only/versions", json={"items": items(2)}).status_code in (200, 201)
        assert api.get("/v1/datasets/pushed-only/generations").json() == {"items": []}   # a dataset, no jobs
        never = api.get("/v1/datasets/never-made/generations")
        assert never.status_code == 404 and never.json()["title"] == "Dataset not found"
        assert [e["path"] for e in never.json()["errors"]] == ["path.name"]
        assert "never-made" in never.json()["errors"][0]["message"]
    with tenants.api(tenants.ids[1]) as other:      # another tenant's dataset is not found either
        assert other.get("/v1/datasets/pushed-only/generations").status_code == 404
