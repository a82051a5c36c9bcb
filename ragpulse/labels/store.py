"""The label store: every reviewer's label of a trace in one hash, each app's labelled traces in a time index.

Bounds: a trace holds one label per reviewer; an app keeps defaults.LABELLED_TRACES_PER_APP labelled traces (past
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
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Label)


def trace_member(job_id: str | None, trace_id: str) -> str:
    """A labelled trace in its app's index: `job<SEP>trace` (no job for an online trace)."""
    return f"{job_id or ''}{SEP}{trace_id}"


def parse_member(member: bytes | str) -> tuple[str | None, str]:
    text = member.decode() if isinstance(member, bytes) else member
    job_id, trace_id = text.split(SEP, 1)
    return job_id or None, trace_id


def epoch(rfc3339: str) -> float:
    """Unix time of a stored timestamp."""
    return datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


class LabelStore:
    """Labels of one Redis; `ttl_seconds` is settings.label_ttl_seconds."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis, self.ttl = client, ttl_seconds

    def put(self, tenant: str, label: Label) -> Label:
        """Store `label`, replacing the same reviewer's earlier label of the trace; the label as stored."""
        key = keys.trace_labels(tenant, label.job_id, label.trace_id)
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
        key, at = keys.trace_labels(tenant, label.job_id, label.trace_id), epoch(label.labelled_at)
        pipe.hset(key, label.reviewer, _encoder.encode(label))
        pipe.expire(key, self.ttl)
        pipe.zadd(keys.app_labels(tenant, label.app), {trace_member(label.job_id, label.trace_id): at})
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
                pipe.delete(*(keys.trace_labels(tenant, *parse_member(m)) for m in oldest))
                pipe.execute()

    def of_trace(self, tenant: str, job_id: str | None, trace_id: str) -> list[Label]:
        """Every reviewer's label of one trace, oldest first."""
        return self.of_traces(tenant, [(job_id, trace_id)])[0]

    def of_traces(self, tenant: str, traces: Iterable[tuple[str | None, str]]) -> list[list[Label]]:
        """The labels of each trace (in one round trip), oldest first."""
        with self.redis.pipeline(transaction=False) as pipe:
            for job_id, trace_id in traces:
                pipe.hvals(keys.trace_labels(tenant, job_id, trace_id))
            rows = pipe.execute()
        return [sorted((_decoder.decode(raw) for raw in row), key=lambda lab: lab.labelled_at) for row in rows]

    def of_app(self, tenant: str, app: str, since: float = 0.0) -> list[list[Label]]:
        """The labels of every trace of the app labelled at or after Unix time `since`, trace by trace."""
        members = self.redis.zrangebyscore(keys.app_labels(tenant, app), since, "+inf")
        return [labels for labels in self.of_traces(tenant, map(parse_member, members)) if labels]

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
