"""The online stream's consumer group, seen from one worker: read new posts, claim posts whose worker died, keep
the posts it is still working on from being claimed, and acknowledge processed posts together with their counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import redis
import redis.asyncio

from ragpulse.config import defaults, keys
from ragpulse.store import scripts
from ragpulse.store.atomic import Group, pack_group

Entry = tuple[bytes, dict[bytes, bytes]]
"""A stream entry: its id and its fields."""


class Done(NamedTuple):
    """A processed post, to acknowledge."""

    entry_id: bytes
    writes: Group
    """What counts it, applied only by the acknowledgement that finds it pending."""
    tenant: bytes = b""
    """Its entry's tenant field, whose backlog share it gives back once deleted; empty for a post holding none."""


@dataclass
class Claimed:
    """Posts taken over from a worker that stopped acknowledging them, with how often each was delivered."""

    entries: list[Entry]
    deliveries: dict[bytes, int]


class OnlineStream:
    """One consumer of the online stream's group, on the worker's async Redis client."""

    def __init__(self, client: redis.asyncio.Redis, key: str, consumer: str, group: str = keys.ONLINE_GROUP,
                 marker_seconds: int = defaults.ONLINE_ACK_MARKER_SECONDS) -> None:
        self.client, self.key, self.consumer, self.group = client, key, consumer, group
        self.marker_seconds = marker_seconds
        self.shares = keys.online_backlog_shares(key)
        self._ack = client.register_script(scripts.ACK_POSTS)
        self._forget = client.register_script(scripts.FORGET_GONE_CONSUMERS)
        self._claim_cursor = b"0-0"

    async def ensure_group(self) -> None:
        """Create the group (and the stream) unless it exists, and this consumer in it (so it is listed before its
        first post: Redis 7.0 adds a consumer only once a read returns something). A new group reads the stream from
        its start, so posts accepted before the first worker ever ran are processed too."""
        try:
            await self.client.xgroup_create(self.key, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        await self.client.xgroup_createconsumer(self.key, self.group, self.consumer)

    async def read(self, count: int, block_ms: int) -> list[Entry]:
        """Up to `count` posts never delivered to any consumer, waiting up to `block_ms` for the first."""
        reply = await self.client.xreadgroup(self.group, self.consumer, {self.key: ">"}, count=count, block=block_ms)
        return list(reply[0][1]) if reply else []

    async def claim_stale(self, min_idle_ms: int, count: int) -> Claimed:
        """Take over up to `count` posts that their consumer has not acknowledged nor refreshed for `min_idle_ms`
        (it died), walking the pending list a page per call; and how often each has now been delivered."""
        cursor, entries, *_ = await self.client.xautoclaim(self.key, self.group, self.consumer, min_idle_ms,
                                                          start_id=self._claim_cursor, count=count)
        self._claim_cursor = cursor
        entries = [(entry_id, fields) for entry_id, fields in entries if fields is not None]
        return Claimed(entries, await self.deliveries([entry_id for entry_id, _ in entries]))

    async def deliveries(self, ids: Sequence[bytes]) -> dict[bytes, int]:
        """How many times each pending post was delivered (XPENDING's counter)."""
        if not ids:
            return {}
        async with self.client.pipeline(transaction=False) as pipe:
            for entry_id in ids:
                pipe.xpending_range(self.key, self.group, min=entry_id, max=entry_id, count=1)
            replies = await pipe.execute()
        return {entry_id: (reply[0]["times_delivered"] if reply else 0) for entry_id, reply in zip(ids, replies)}

    async def refresh(self, ids: Sequence[bytes]) -> None:
        """Reset the idle time of posts this consumer is still working on (a slow judge call), so no other worker
        claims them; JUSTID leaves their delivery counters alone."""
        if ids:
            await self.client.xclaim(self.key, self.group, self.consumer, 0, list(ids), justid=True)

    async def forget_gone_consumers(self, idle_ms: int) -> None:
        """Delete the group's consumers with nothing pending that have been idle `idle_ms` (stopped workers), so the
        consumer list does not grow with every worker ever started. A consumer holding posts is kept: they are
        claimed from it first. (Redis 7.0 does not count a blocking read that returned nothing as activity, so a
        live worker on a quiet stream may be deleted too; its next read that returns posts adds it back.)"""
        await self._forget(keys=[self.key], args=[self.group, idle_ms, self.consumer])

    async def acknowledge(self, processed: Sequence[Done], shared: Group, nonce: str) -> list[bool]:
        """Acknowledge and delete processed posts, applying each post's writes only if this acknowledgement is the
        one that found it pending (scripts.ACK_POSTS), and the `shared` writes once per `nonce` (the same call sent
        again after a lost reply applies them no more); one round trip. A post deleted gives its tenant's backlog
        share back. Returns, per post, True when this call counted it."""
        args: list[bytes | str | int] = [self.group, pack_group(shared), self.marker_seconds]
        for entry_id, writes, tenant in processed:
            args += [entry_id, tenant, pack_group(writes)]
        counted = await self._ack(keys=[self.key, self.shares, keys.online_ack(self.key, nonce)], args=args)
        return [bool(flag) for flag in counted]


@dataclass(frozen=True)
class Backlog:
    """What the online stream holds unprocessed."""

    posts: int
    oldest_age_seconds: float
    """Age of the oldest unprocessed post (0 when there is none), on Redis's clock."""


def backlog(client: redis.Redis, key: str) -> Backlog:
    """The stream's unprocessed posts and the age of the oldest: acknowledged posts are deleted, so the first entry
    is the oldest one still pending or undelivered. Its id is its arrival time in ms, on Redis's clock."""
    with client.pipeline(transaction=False) as pipe:
        pipe.xlen(key)
        pipe.xrange(key, count=1)
        pipe.time()
        length, first, (seconds, micros) = pipe.execute()
    if not first:
        return Backlog(length, 0.0)
    arrived_ms = int(first[0][0].split(b"-")[0])
    return Backlog(length, max(0.0, seconds + micros / 1e6 - arrived_ms / 1000))
