"""The dataset store against real Redis: content hashing, immutability and idempotent pushes, version numbering,
pages and lookups, drafts, tenant isolation and the per-tenant bounds."""

from __future__ import annotations

import threading
import uuid

import msgspec
import pytest
import redis

from ragpulse.config import keys
from ragpulse.exceptions import Conflict, DatasetNotFound
from ragpulse.model.dataset import DatasetItem, DatasetVersionPost
from ragpulse.store.datasets import DatasetLimits, DatasetStore, content_hash

LIMITS = DatasetLimits(datasets=3, versions=4, items=50)


def item(item_id: str, **fields) -> DatasetItem:
    return DatasetItem(item_id=item_id, query=f"question {item_id}?", **fields)


def post(*items: DatasetItem, description: str | None = None) -> DatasetVersionPost:
    return DatasetVersionPost(items=list(items), description=description)


@pytest.fixture
def store(redis_client: redis.Redis) -> DatasetStore:
    return DatasetStore(redis_client, LIMITS)


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:8]}"


def test_hash_ignores_item_order_and_spelled_out_defaults() -> None:
    a = [item("a", gold_doc_ids=["d1"]), item("b", split="test")]
    b = [item("b", split="test", answerable=True, source="human"), item("a", gold_doc_ids=["d1"])]
    assert content_hash(a) == content_hash(b)
    assert content_hash(a) != content_hash([item("a", gold_doc_ids=["d2"]), item("b", split="test")])
    assert len(content_hash(a)) == 64


def test_push_numbers_versions_and_counts(store: DatasetStore, tenant: str) -> None:
    first = store.create_version(tenant, "qa", post(item("a", question_type="multi_hop", split="test"),
                                                    item("b", answerable=False, source="synthetic")))
    assert (first.version, first.status, first.origin) == (1, "published", "pushed")
    # a: multi_hop/human/test answerable; b: unspecified/synthetic/dev unanswerable
    assert first.counts.by_question_type == {"multi_hop": 1, "unspecified": 1}
    assert first.counts.by_source == {"human": 1, "synthetic": 1}
    assert first.counts.by_split == {"test": 1, "dev": 1}
    assert (first.counts.answerable, first.counts.unanswerable, first.counts.items) == (1, 1, 2)
    second = store.create_version(tenant, "qa", post(item("a"), item("c")))
    assert second.version == 2 and second.content_hash != first.content_hash
    assert [v.version for v in store.list_versions(tenant, "qa")] == [2, 1]
    assert store.get_version(tenant, "qa").version == 2
    assert store.get_version(tenant, "qa", 1) == first


def test_same_items_again_is_the_latest_version(store: DatasetStore, tenant: str, redis_client: redis.Redis) -> None:
    first = store.push(tenant, "qa", post(item("a"), item("b")))
    again = store.push(tenant, "qa", post(item("b"), item("a"), description="other words"))
    assert first.created and not again.created and again.version == first.version
    assert int(redis_client.get(keys.dataset_items_held(tenant))) == 2
    store.push(tenant, "qa", post(item("c")))
    back = store.push(tenant, "qa", post(item("a"), item("b")))   # equal to version 1, not to the latest: new
    assert back.created and back.version.version == 3 and back.version.content_hash == first.version.content_hash


def test_old_versions_stay_as_written(store: DatasetStore, tenant: str) -> None:
    store.create_version(tenant, "qa", post(item("a", reference_answer="one")))
    store.create_version(tenant, "qa", post(item("a", reference_answer="two")))
    assert store.lookup_items(tenant, "qa", 1, ["a"])["a"].reference_answer == "one"
    assert store.lookup_items(tenant, "qa", 2, ["a"])["a"].reference_answer == "two"


def test_pages_and_lookup(store: DatasetStore, tenant: str) -> None:
    items = [item(f"i{n:02d}") for n in range(25)]
    store.create_version(tenant, "qa", post(*items))
    assert [i.item_id for i in store.read_items(tenant, "qa", 1, 20, 10)] == [f"i{n:02d}" for n in range(20, 25)]
    assert store.read_items(tenant, "qa", 1, 25, 10) == []
    found = store.lookup_items(tenant, "qa", 1, ["i03", "nope", "i03"])
    assert list(found) == ["i03"] and found["i03"] == items[3]


def test_drafts_publish_once_and_never_merge(store: DatasetStore, tenant: str) -> None:
    draft = store.create_version(tenant, "gen", post(item("a")), status="draft", origin="generated", job_id="j1")
    again = store.create_version(tenant, "gen", post(item("a")), status="draft", origin="generated", job_id="j2")
    assert (draft.version, again.version, again.job_id) == (1, 2, "j2")
    published = store.publish(tenant, "gen", 1)
    assert published.status == "published" and store.get_version(tenant, "gen", 1).status == "published"
    assert store.publish(tenant, "gen", 1) == published
    with pytest.raises(DatasetNotFound):
        store.publish(tenant, "gen", 9)


def test_tenants_are_isolated(store: DatasetStore, tenant: str) -> None:
    store.create_version(tenant, "qa", post(item("a")))
    other = tenant + "x"
    with pytest.raises(DatasetNotFound):
        store.get_version(other, "qa", 1)
    with pytest.raises(DatasetNotFound):
        store.list_versions(other, "qa")
    assert store.list_datasets(other) == []
    assert store.lookup_items(other, "qa", 1, ["a"]) == {}
    assert store.create_version(other, "qa", post(item("z"))).version == 1   # numbered apart


def test_list_datasets(store: DatasetStore, tenant: str) -> None:
    store.create_version(tenant, "b", post(item("a")))
    store.create_version(tenant, "a", post(item("a")))
    store.create_version(tenant, "a", post(item("b")))
    listed = store.list_datasets(tenant)
    assert [(d.name, d.versions, d.latest.version) for d in listed] == [("a", 2, 2), ("b", 1, 1)]


def test_bounds_refuse_and_write_nothing(store: DatasetStore, tenant: str, redis_client: redis.Redis) -> None:
    for name in ("a", "b", "c"):
        store.create_version(tenant, name, post(item("x")))
    with pytest.raises(Conflict) as full:
        store.create_version(tenant, "d", post(item("x")))
    assert full.value.errors[0]["path"] == "path.name" and "RAGPULSE_DATASETS_PER_TENANT" in full.value.detail
    for n in range(3):
        store.create_version(tenant, "a", post(item(f"v{n}")))
    with pytest.raises(Conflict, match="RAGPULSE_DATASET_VERSIONS_MAX"):
        store.create_version(tenant, "a", post(item("more")))
    with pytest.raises(Conflict) as many:   # 6 held, 45 more > 50
        store.create_version(tenant, "b", post(*(item(f"m{n}") for n in range(45))))
    assert many.value.errors[0]["path"] == "$.items"
    assert redis_client.hget(keys.datasets(tenant), "b") == b"1" and not redis_client.exists(
        keys.dataset_items(tenant, "b", 2))


def test_version_numbers_used_up_by_push_and_delete_are_bounded(store: DatasetStore, tenant: str) -> None:
    """Each read of a dataset looks up every version number it used; a loop of push-and-delete grew that without
    bound. Past versions x DATASET_VERSION_NUMBERS (4 x 10 here) a push is 409 until the dataset is deleted whole."""
    for n in range(40):
        made = store.create_version(tenant, "loop", post(item(f"v{n}")))
        store.delete_version(tenant, "loop", made.version)
    with pytest.raises(Conflict) as used:
        store.create_version(tenant, "loop", post(item("one more")))
    assert used.value.errors[0]["path"] == "path.name" and "DELETE /v1/datasets/loop" in used.value.errors[0]["message"]
    store.delete_dataset(tenant, "loop")
    assert store.create_version(tenant, "loop", post(item("again"))).version == 1


def test_concurrent_pushes_get_distinct_numbers(redis_url: str, tenant: str) -> None:
    made: list[int] = []

    def push(n: int) -> None:
        client = redis.Redis.from_url(redis_url)
        made.append(DatasetStore(client, DatasetLimits(10, 100, 1000)).create_version(
            tenant, "qa", post(item(f"p{n}"))).version)
        client.close()

    threads = [threading.Thread(target=push, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(made) == list(range(1, 9))


def test_stored_items_are_msgpack(store: DatasetStore, tenant: str, redis_client: redis.Redis) -> None:
    store.create_version(tenant, "qa", post(item("a", gold_doc_ids=["d"])))
    raw = redis_client.hget(keys.dataset_items(tenant, "qa", 1), "a")
    assert msgspec.msgpack.decode(raw, type=DatasetItem).gold_doc_ids == ["d"]
    assert redis_client.ttl(keys.dataset_items(tenant, "qa", 1)) == -1   # persists by design (bounded, not expiring)
