"""The label store: every reviewer's label of a judged content in one hash, each app's labelled contents in a time
index. A label belongs to the content that was judged (TraceResult.content_key), not to the trace it was given on:
the same item re-run in six jobs holds one set of labels, which every one of its traces reads. Labels stored before
content keys existed stay under their trace.

Bounds: a content holds one label per reviewer; an app keeps defaults.LABELLED_TRACES_PER_APP labelled traces (past
it, the traces labelled longest ago are forgotten, labels and all); every key expires settings.label_ttl_days after
its latest label.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence

import msgspec
import redis

from ragpulse.config import defaults, keys
from ragpulse.model.labels import Label

SEP = "\x1f"
"""Separates the parts of an index member: trace ids cannot hold control characters, job ids only [A-Za-z0-9_-]."""
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Label)


CONTENT = "="
"""Opens the index member of a labelled content: `=<SEP>content`; no job id holds `=`."""


def member_of(label: Label) -> str:
    """A label's entry in its app's index: `=<SEP>content`, or `job<SEP>trace` for a label without a content key."""
    if label.content_key is not None:
        return f"{CONTENT}{SEP}{label.content_key}"
    return f"{label.job_id or ''}{SEP}{label.trace_id}"


def key_of(tenant: str, member: bytes | str) -> str:
    """The labels hash an index member names."""
    text = member.decode() if isinstance(member, bytes) else member
    head, tail = text.split(SEP, 1)
    if head == CONTENT:
        return keys.content_labels(tenant, tail)
    return keys.trace_labels(tenant, head or None, tail)


def labels_key(tenant: str, label: Label) -> str:
    return key_of(tenant, member_of(label))


def epoch(rfc3339: str) -> float:
    """Unix time of a stored timestamp."""
    return datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


class LabelStore:
    """Labels of one Redis; `ttl_seconds` is settings.label_ttl_seconds."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis, self.ttl = client, ttl_seconds

    def put(self, tenant: str, label: Label) -> Label:
        """Store `label`, replacing the same reviewer's earlier label of the content; the label as stored."""
        key = labels_key(tenant, label)
        label = msgspec.structs.replace(label, replaced=bool(self.redis.hexists(key, label.reviewer)))
        return self.put_many(tenant, [label])[0]

    def put_many(self, tenant: str, labels: Sequence[Label]) -> list[Label]:
        """Store labels in one transaction (each replacing its reviewer's earlier one), then apply the app caps."""
        with self.redis.pipeline() as pipe:
            for label in labels:
                self._queue_put(pipe, tenant, label)
            pipe.execute()
        for app in {label.app for label in labels}:
            self._trim(tenant, app)
        return list(labels)

    def _queue_put(self, pipe: redis.client.Pipeline, tenant: str, label: Label) -> None:
        key, at = labels_key(tenant, label), epoch(label.labelled_at)
        pipe.hset(key, label.reviewer, _encoder.encode(label))
        pipe.expire(key, self.ttl)
        if label.content_key is not None:
            pipe.set(keys.labelled_content(tenant, label.job_id, label.trace_id), member_of(label), ex=self.ttl)
        pipe.zadd(keys.app_labels(tenant, label.app), {member_of(label): at})
        pipe.expire(keys.app_labels(tenant, label.app), self.ttl)
        pipe.zadd(keys.labelled_apps(), {f"{len(tenant)}:{tenant}:{label.app}": at})
        pipe.zremrangebyrank(keys.labelled_apps(), 0, -defaults.LABELLED_APPS_MAX - 1)
        pipe.expire(keys.labelled_apps(), self.ttl)

    def _trim(self, tenant: str, app: str) -> None:
        """Forget the app's traces labelled longest ago beyond defaults.LABELLED_TRACES_PER_APP."""
        index = keys.app_labels(tenant, app)
        oldest = self.redis.zrange(index, 0, -defaults.LABELLED_TRACES_PER_APP - 1)
        if oldest:
            with self.redis.pipeline() as pipe:
                pipe.zrem(index, *oldest)
                pipe.delete(*(key_of(tenant, m) for m in oldest))
                pipe.execute()

    def of_trace(self, tenant: str, job_id: str | None, trace_id: str, content: str | None = None) -> list[Label]:
        """Every reviewer's label of the content a trace holds (`content`, else the one it was labelled under, else
        the trace's own labels), oldest first."""
        if content is None:
            stored = self.redis.get(keys.labelled_content(tenant, job_id, trace_id))
            member = stored.decode() if stored is not None else f"{job_id or ''}{SEP}{trace_id}"
        else:
            member = f"{CONTENT}{SEP}{content}"
        return self.of_keys([key_of(tenant, member)])[0]

    def of_contents(self, tenant: str, contents: Iterable[str]) -> list[list[Label]]:
        """The labels of each judged content (in one round trip), oldest first."""
        return self.of_keys([keys.content_labels(tenant, content) for content in contents])

    def of_keys(self, names: Iterable[str]) -> list[list[Label]]:
        """The labels of each labels hash (in one round trip), oldest first."""
        with self.redis.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hvals(name)
            rows = pipe.execute()
        return [sorted((_decoder.decode(raw) for raw in row), key=lambda lab: lab.labelled_at) for row in rows]

    def of_app(self, tenant: str, app: str, since: float = 0.0) -> list[list[Label]]:
        """The labels of every content of the app labelled at or after Unix time `since`, content by content."""
        members = self.redis.zrangebyscore(keys.app_labels(tenant, app), since, "+inf")
        return [labels for labels in self.of_keys(key_of(tenant, m) for m in members) if labels]

    def newest(self) -> float:
        """Unix time of the newest label of any app (0 without any)."""
        top = self.redis.zrevrange(keys.labelled_apps(), 0, 0, withscores=True)
        return top[0][1] if top else 0.0

    def apps(self) -> list[tuple[str, str]]:
        """Every (tenant, app) with labels, as the /metrics scrape reads them."""
        pairs = []
        for raw in self.redis.zrange(keys.labelled_apps(), 0, -1):
            length, _, rest = raw.decode().partition(":")
            pairs.append((rest[:int(length)], rest[int(length) + 1:]))
        return pairs
