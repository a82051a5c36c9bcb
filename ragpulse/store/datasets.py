"""Eval datasets in Redis: named per tenant, each push a new immutable, content-hashed version.

A version is written whole, in one WATCHed MULTI/EXEC transaction on the tenant's dataset hash: its number (the
hash's counter for the name, plus one), its header, its items (a hash by item id, for lookup) and their order (a list,
for pages) appear together or not at all, and two concurrent pushes never get the same number. After that only the
header's status changes, once, from draft to published.

Retention: datasets are user data, kept without a TTL. They are bounded per tenant instead (DatasetLimits: datasets,
versions per dataset, items over all versions), and a push over a bound is refused (409), never made room for by
dropping an old version a run may name.

Pushing the items of the latest version again (same content hash) is idempotent when both are pushed versions with the
same status: the latest version is answered and nothing is written (a description that differs is not a new version).
Generated drafts always get a version of their own, since each belongs to its job.

Deleting frees room: a version (or a whole dataset) is removed with its items in one WATCHed transaction on the same
keys a push watches, so a push and a delete never interleave. Numbers are never reused while the dataset exists: the
next push after deleting version 3 of 3 is version 4, so a job bound to the deleted version 3 can never be matched to
different items under the same number (its content hash, kept on the job, tells them apart in any case). Deleting
the whole dataset forgets its counter; the name then starts again from 1.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import msgspec
import redis

from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from ragpulse.exceptions import Conflict, DatasetNotFound
from ragpulse.model.dataset import (
    DatasetCounts, DatasetItem, DatasetSummary, DatasetVersion, DatasetVersionPost, Origin, VersionStatus,
)
from ragpulse.store.clock import utcnow

WRITE_BATCH = 1000
"""Items per HSET / RPUSH command of a version's write (one command per item would be 100,000 round trips' worth)."""

_canonical = msgspec.json.Encoder(order="sorted").encode
_pack = msgspec.msgpack.Encoder().encode
_unpack_item = msgspec.msgpack.Decoder(DatasetItem).decode
_unpack_version = msgspec.msgpack.Decoder(DatasetVersion).decode


def content_hash(items: Iterable[DatasetItem]) -> str:
    """sha256 (hex) of the items sorted by id, as JSON with sorted keys and defaults left out: the same items give the
    same hash whatever their order, field order or spelled-out defaults."""
    ordered = sorted(items, key=lambda item: item.item_id)
    return hashlib.sha256(_canonical(ordered)).hexdigest()


def count(items: Sequence[DatasetItem]) -> DatasetCounts:
    """A version's counts by question type (`unspecified` when an item has none), source and split."""
    answerable = sum(item.answerable for item in items)
    return DatasetCounts(
        items=len(items), answerable=answerable, unanswerable=len(items) - answerable,
        by_question_type=dict(Counter(item.question_type or "unspecified" for item in items)),
        by_source=dict(Counter(item.source for item in items)), by_split=dict(Counter(item.split for item in items)))


@dataclass(frozen=True)
class DatasetLimits:
    """Per-tenant bounds on dataset storage (datasets keep no TTL)."""

    datasets: int
    versions: int
    items: int

    @classmethod
    def from_settings(cls, settings: Settings) -> DatasetLimits:
        return cls(datasets=settings.datasets_per_tenant, versions=settings.dataset_versions_max,
                   items=settings.dataset_items_per_tenant)


class Pushed(NamedTuple):
    """A push's answer: the version, and whether this push wrote it (False: the latest had the same items)."""

    version: DatasetVersion
    created: bool


class DatasetStore:
    """Write and read one tenant-scoped set of datasets; every read checks the tenant through its keys."""

    def __init__(self, client: redis.Redis, limits: DatasetLimits) -> None:
        self.redis = client
        self.limits = limits

    def create_version(self, tenant: str, name: str, post: DatasetVersionPost, status: VersionStatus = "published",
                       origin: Origin = "pushed", job_id: str | None = None) -> DatasetVersion:
        """Store `post` as the dataset's next version (or answer the latest, see the module docstring)."""
        return self.push(tenant, name, post, status, origin, job_id).version

    def push(self, tenant: str, name: str, post: DatasetVersionPost, status: VersionStatus = "published",
             origin: Origin = "pushed", job_id: str | None = None) -> Pushed:
        """As create_version, saying whether a version was written; 409 over a tenant's limit."""
        digest, counts, now = content_hash(post.items), count(post.items), utcnow()
        packed = [(item.item_id, _pack(item)) for item in post.items]

        def write(pipe: redis.client.Pipeline) -> Pushed:
            latest = int(pipe.hget(keys.datasets(tenant), name) or 0)
            held = self._existing(pipe, tenant, name, latest)
            if held:
                previous = held[0]
                if (previous.content_hash, previous.status, previous.origin, origin) == (digest, status, "pushed",
                                                                                        "pushed"):
                    return Pushed(previous, False)
            self._check_room(pipe, tenant, len(held), latest, name, counts.items)
            version = DatasetVersion(name=name, version=latest + 1, content_hash=digest, status=status,
                                     created_at=now, counts=counts, description=post.description, origin=origin,
                                     job_id=job_id)
            pipe.multi()
            self._stage(pipe, tenant, version, packed)
            return Pushed(version, True)

        return self.redis.transaction(write, keys.datasets(tenant), keys.dataset_items_held(tenant),
                                      value_from_callable=True)

    def _check_room(self, pipe: redis.client.Pipeline, tenant: str, held_versions: int, latest: int, name: str,
                    items: int) -> None:
        limits = self.limits
        if latest >= limits.versions * defaults.DATASET_VERSION_NUMBERS:
            raise _full("path.name", f"dataset {name!r} has used {latest} version numbers, its limit (deleted versions "
                                     f"keep theirs); delete the dataset (DELETE /v1/datasets/{name}) to start it again")
        if latest == 0 and pipe.hlen(keys.datasets(tenant)) >= limits.datasets:
            raise _full("path.name", f"the tenant holds {limits.datasets} datasets, its limit "
                                     "(RAGPULSE_DATASETS_PER_TENANT)")
        if held_versions >= limits.versions:
            raise _full("path.name", f"dataset {name!r} holds {held_versions} versions, its limit "
                                     "(RAGPULSE_DATASET_VERSIONS_MAX); delete one to make room")
        held = int(pipe.get(keys.dataset_items_held(tenant)) or 0)
        if held + items > limits.items:
            raise _full("$.items", f"the tenant's datasets hold {held} items; {items} more exceed its limit of "
                                   f"{limits.items} (RAGPULSE_DATASET_ITEMS_PER_TENANT)")

    @staticmethod
    def _stage(pipe: redis.client.Pipeline, tenant: str, version: DatasetVersion,
               packed: list[tuple[str, bytes]]) -> None:
        name, number = version.name, version.version
        for start in range(0, len(packed), WRITE_BATCH):
            part = packed[start:start + WRITE_BATCH]
            pipe.hset(keys.dataset_items(tenant, name, number), mapping=dict(part))
            pipe.rpush(keys.dataset_order(tenant, name, number), *(item_id for item_id, _ in part))
        pipe.set(keys.dataset_version(tenant, name, number), _pack(version))
        pipe.hset(keys.datasets(tenant), name, number)
        pipe.incrby(keys.dataset_items_held(tenant), len(packed))

    @staticmethod
    def _existing(client: redis.Redis | redis.client.Pipeline, tenant: str, name: str,
                  latest: int) -> list[DatasetVersion]:
        """The versions 1..latest still held (deleted ones leave gaps), newest first."""
        if not latest:
            return []
        raws = client.mget([keys.dataset_version(tenant, name, n) for n in range(latest, 0, -1)])
        return [_unpack_version(raw) for raw in raws if raw is not None]

    def get_version(self, tenant: str, name: str, version: int | None = None) -> DatasetVersion:
        """One version (the latest held when `version` is None); DatasetNotFound when the tenant has no such
        version."""
        if version is None:
            held = self._existing(self.redis, tenant, name, int(self.redis.hget(keys.datasets(tenant), name) or 0))
            if not held:
                raise DatasetNotFound(name)
            return held[0]
        raw = self.redis.get(keys.dataset_version(tenant, name, version))
        if raw is None:
            raise DatasetNotFound(name, version)
        return _unpack_version(raw)

    def exists(self, tenant: str, name: str) -> bool:
        """Whether the tenant has a dataset of this name (with a version held, or one number taken)."""
        return bool(self.redis.hexists(keys.datasets(tenant), name))

    def list_versions(self, tenant: str, name: str) -> list[DatasetVersion]:
        """Every version of the dataset, newest first (numbers run 1..latest without gaps)."""
        held = self._existing(self.redis, tenant, name, int(self.redis.hget(keys.datasets(tenant), name) or 0))
        if not held:
            raise DatasetNotFound(name)
        return held

    def list_datasets(self, tenant: str) -> list[DatasetSummary]:
        """The tenant's datasets by name, each with its number of versions held and its latest version."""
        latest = sorted((name.decode(), int(n)) for name, n in self.redis.hgetall(keys.datasets(tenant)).items())
        summaries = []
        for name, n in latest:
            held = self._existing(self.redis, tenant, name, n)
            if held:
                summaries.append(DatasetSummary(name=name, versions=len(held), latest=held[0]))
        return summaries

    def delete_version(self, tenant: str, name: str, version: int) -> DatasetVersion:
        """Remove one version and its items (its number is not reused); DatasetNotFound when not held."""
        def remove(pipe: redis.client.Pipeline) -> DatasetVersion:
            raw = pipe.get(keys.dataset_version(tenant, name, version))
            if raw is None:
                raise DatasetNotFound(name, version)
            found = _unpack_version(raw)
            pipe.multi()
            self._unstage(pipe, tenant, [found])
            return found

        return self.redis.transaction(remove, keys.datasets(tenant), keys.dataset_items_held(tenant),
                                      keys.dataset_version(tenant, name, version), value_from_callable=True)

    def delete_dataset(self, tenant: str, name: str) -> list[DatasetVersion]:
        """Remove every version of the dataset and its name; the versions removed, newest first."""
        def remove(pipe: redis.client.Pipeline) -> list[DatasetVersion]:
            latest = int(pipe.hget(keys.datasets(tenant), name) or 0)
            if not latest:
                raise DatasetNotFound(name)
            held = self._existing(pipe, tenant, name, latest)
            pipe.multi()
            self._unstage(pipe, tenant, held)
            pipe.hdel(keys.datasets(tenant), name)
            return held

        return self.redis.transaction(remove, keys.datasets(tenant), keys.dataset_items_held(tenant),
                                      value_from_callable=True)

    @staticmethod
    def _unstage(pipe: redis.client.Pipeline, tenant: str, versions: Sequence[DatasetVersion]) -> None:
        for found in versions:
            pipe.delete(keys.dataset_version(tenant, found.name, found.version),
                        keys.dataset_items(tenant, found.name, found.version),
                        keys.dataset_order(tenant, found.name, found.version))
        if versions:
            pipe.decrby(keys.dataset_items_held(tenant), sum(v.counts.items for v in versions))

    def read_items(self, tenant: str, name: str, version: int, offset: int, limit: int) -> list[DatasetItem]:
        """Items offset..offset+limit-1 of the version, in push order (fewer at its end)."""
        ids = self.redis.lrange(keys.dataset_order(tenant, name, version), offset, offset + limit - 1)
        if not ids:
            return []
        return [_unpack_item(raw) for raw in self.redis.hmget(keys.dataset_items(tenant, name, version), ids)]

    def lookup_items(self, tenant: str, name: str, version: int, item_ids: Iterable[str]) -> dict[str, DatasetItem]:
        """The version's items with these ids; ids it does not hold are absent from the answer."""
        wanted = list(dict.fromkeys(item_ids))
        if not wanted:
            return {}
        raws = self.redis.hmget(keys.dataset_items(tenant, name, version), wanted)
        return {item_id: _unpack_item(raw) for item_id, raw in zip(wanted, raws) if raw is not None}

    def publish(self, tenant: str, name: str, version: int) -> DatasetVersion:
        """Mark a draft version published (its items unchanged); a published one is answered as it is."""
        key = keys.dataset_version(tenant, name, version)

        def flip(pipe: redis.client.Pipeline) -> DatasetVersion:
            raw = pipe.get(key)
            if raw is None:
                raise DatasetNotFound(name, version)
            current = _unpack_version(raw)
            if current.status == "published":
                return current
            published = msgspec.structs.replace(current, status="published")
            pipe.multi()
            pipe.set(key, _pack(published))
            return published

        return self.redis.transaction(flip, key, value_from_callable=True)


def _full(path: str, message: str) -> Conflict:
    return Conflict(f"dataset storage is full: {message}", [{"path": path, "message": message}])
