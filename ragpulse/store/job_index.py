"""The per-tenant job index: a sorted set of job ids scored by creation time (ms), newest read first.

It expires with the jobs (the result TTL) and is trimmed of members older than that on every write, so it never
grows past one retention period of the tenant's jobs. Members whose job hash has expired are dropped when read.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import redis

from ragpulse.config import keys
from ragpulse.exceptions import InvalidParameter

CURSOR = re.compile(r"^([0-9]{1,15})-([0-9a-f]{32})$")
"""A cursor is the last listed job's score and id: `<ms>-<job_id>`; the next page starts strictly after it."""

Entry = tuple[str, int]
"""(job_id, creation time in ms)."""


class JobIndex:
    """Write and read the tenant's job index; every key written carries the job TTL."""

    def __init__(self, client: redis.Redis, ttl_seconds: int) -> None:
        self.redis = client
        self.ttl = ttl_seconds

    def stage(self, pipe: redis.client.Pipeline, tenant: str, job_id: str) -> None:
        """Queue the writes that list a new job onto `pipe`, trimming members past retention."""
        now_ms = int(time.time() * 1000)
        key = keys.tenant_jobs(tenant)
        pipe.zadd(key, {job_id: now_ms})
        pipe.zremrangebyscore(key, "-inf", f"({now_ms - self.ttl * 1000}")
        pipe.expire(key, self.ttl)

    def scan(self, tenant: str, cursor: str | None, limit: int, budget: int,
             keep: Callable[[list[str]], list[bool]]) -> tuple[list[str], str | None]:
        """Up to `limit` job ids after `cursor`, newest first, that `keep` (called once, on every id read) accepts,
        reading at most `budget` index entries; returns them and the next cursor (None at the end of the index)."""
        entries = self._entries(tenant, parse_cursor(cursor), budget)
        kept: list[str] = []
        last: Entry | None = None
        for entry, wanted in zip(entries, keep([job_id for job_id, _ in entries])):
            last = entry
            if wanted:
                kept.append(entry[0])
                if len(kept) == limit:
                    break
        if last is None or not self._entries(tenant, last, 1):
            return kept, None
        return kept, f"{last[1]}-{last[0]}"

    def _entries(self, tenant: str, after: Entry | None, count: int) -> list[Entry]:
        """`count` entries strictly after `after` in (score desc, id desc) order: ZREVRANGEBYSCORE's own order."""
        top = "+inf" if after is None else after[1]
        extra = 0 if after is None else self.redis.zcount(keys.tenant_jobs(tenant), after[1], after[1])
        raw = self.redis.zrevrangebyscore(keys.tenant_jobs(tenant), top, "-inf", start=0, num=count + extra,
                                          withscores=True)
        entries = [(member.decode(), int(score)) for member, score in raw]
        if after is not None:
            entries = [e for e in entries if e[1] < after[1] or e[0] < after[0]]
        return entries[:count]

    def forget(self, tenant: str, job_ids: list[str]) -> None:
        """Drop ids whose job has expired."""
        if job_ids:
            self.redis.zrem(keys.tenant_jobs(tenant), *job_ids)


def parse_cursor(cursor: str | None) -> Entry | None:
    """The entry a cursor names; None for the first page; 400 naming `query.cursor` for anything not issued here."""
    if cursor is None:
        return None
    found = CURSOR.match(cursor)
    if found is None:
        raise InvalidParameter("cursor is not one this API issued",
                               [{"path": "query.cursor", "message": "pass back next_cursor unchanged"}])
    return found.group(2), int(found.group(1))
