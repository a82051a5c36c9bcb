"""Spans wait in Redis, by trace, until their trace is whole: a trace is due `settle` seconds after its latest export
once its root span has arrived, and at most `max_wait` seconds after its first span whatever arrived. Bounded: at most
`max_spans` spans per trace (more are refused and counted), and every key expires."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec
import redis
import redis.asyncio

from ragpulse.config import keys
from ragpulse.otlp.spans import SpanRecord
from ragpulse.store import scripts

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(SpanRecord)
LEASE_SECONDS = 30
"""How long a replica holds a due trace it is assembling before another may take it."""


@dataclass(frozen=True)
class BufferLimits:
    settle_seconds: float
    max_wait_seconds: float
    max_spans: int

    @property
    def ttl_seconds(self) -> int:
        """Keys outlive the wait by an hour: an API that is down a while still finds its traces."""
        return int(self.max_wait_seconds) + 3600


class SpanBuffer:
    """Adds exported spans, finds the due traces and leases them, on the API's event loop."""

    def __init__(self, client: redis.asyncio.Redis, queue_prefix: str, limits: BufferLimits) -> None:
        self.client, self.prefix, self.limits = client, queue_prefix, limits
        self.pending = keys.otlp_pending(queue_prefix)
        self._add = client.register_script(scripts.OTLP_ADD)
        self._lease = client.register_script(scripts.OTLP_LEASE)

    async def add(self, tenant: str, by_trace: Mapping[str, Sequence[SpanRecord]]) -> int:
        """Buffer an export's spans, trace by trace, in one round trip (a pipeline of script calls); returns how many
        were refused (over max_spans)."""
        if not by_trace:
            return 0
        limits, now = self.limits, time.time()
        async with self.client.pipeline(transaction=False) as pipe:
            for trace_id, spans in by_trace.items():
                member = keys.otlp_member(tenant, trace_id)
                has_root = any(not span.parent_id for span in spans)
                await self._add(
                    keys=[self.pending, keys.otlp_spans(self.prefix, member), keys.otlp_meta(self.prefix, member)],
                    args=[now, limits.settle_seconds, limits.max_wait_seconds, limits.ttl_seconds, member,
                          limits.max_spans, int(has_root), *(_encoder.encode(span) for span in spans)], client=pipe)
            refused = await pipe.execute()
        return sum(int(n) for n in refused)

    async def due(self, limit: int = 100) -> list[str]:
        """Members whose wait is over."""
        found = await self.client.zrangebyscore(self.pending, "-inf", time.time(), start=0, num=limit)
        return [m.decode() if isinstance(m, bytes) else m for m in found]

    async def lease(self, member: str) -> list[SpanRecord] | None:
        """The spans of a due trace, held LEASE_SECONDS for this caller; None when another took it or it is gone."""
        raw = await self._lease(keys=[self.pending, keys.otlp_spans(self.prefix, member)],
                                args=[time.time(), LEASE_SECONDS, member])
        if raw is None:
            return None
        return [_decoder.decode(item) for item in raw]

    def release_commands(self, member: str) -> list[tuple[str, ...]]:
        """The commands that forget a handed-over trace, for the same atomic group as its hand-over writes."""
        return [("ZREM", self.pending, member),
                ("DEL", keys.otlp_spans(self.prefix, member), keys.otlp_meta(self.prefix, member))]


def split_member(member: str) -> tuple[str, str]:
    """(tenant, trace id) of a pending member."""
    length, rest = member.split(":", 1)
    tenant = rest[: int(length)]
    return tenant, rest[int(length) + 1:]


def handover_lag(client: redis.Redis, queue_prefix: str) -> float:
    """Seconds the oldest due trace has been due (0 when none is), read at scrape time: the API's loops take a due
    trace within a poll, and a leased one is not due, so this grows only when no replica's hand-over works."""
    oldest = client.zrange(keys.otlp_pending(queue_prefix), 0, 0, withscores=True)
    return max(0.0, time.time() - oldest[0][1]) if oldest else 0.0
