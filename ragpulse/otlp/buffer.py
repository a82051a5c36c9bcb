"""Spans wait in Redis, by trace, until their trace is whole: a trace is due `settle` seconds after its latest export
once its root span has arrived, and at most `max_wait` seconds after its first span whatever arrived. Bounded: at most
`max_spans` spans and `max_bytes` bytes of spans per trace (more are refused and counted), and every key expires. A
trace handed over leaves a marker for `done_ttl` seconds (its record's lifetime): spans arriving meanwhile are late,
refused, and never start a second hand-over that would overwrite its record or count it twice."""

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
    max_bytes: int
    done_ttl_seconds: int
    """How long a handed-over trace refuses late spans: its record's lifetime (RAGPULSE_ONLINE_RESULT_TTL_SECONDS)."""

    @property
    def ttl_seconds(self) -> int:
        """Keys outlive the wait by an hour: an API that is down a while still finds its traces."""
        return int(self.max_wait_seconds) + 3600


@dataclass
class Refused:
    """Spans of an export the buffer did not take, by why."""

    too_many: int = 0
    """Over max_spans in their trace."""
    too_large: int = 0
    """Over max_bytes in their trace."""
    late: int = 0
    """Their trace was handed over already."""

    @property
    def total(self) -> int:
        return self.too_many + self.too_large + self.late


class SpanBuffer:
    """Adds exported spans, finds the due traces and leases them, on the API's event loop."""

    def __init__(self, client: redis.asyncio.Redis, queue_prefix: str, limits: BufferLimits) -> None:
        self.client, self.prefix, self.limits = client, queue_prefix, limits
        self.pending = keys.otlp_pending(queue_prefix)
        self._add = client.register_script(scripts.OTLP_ADD)
        self._lease = client.register_script(scripts.OTLP_LEASE)

    async def add(self, tenant: str, by_trace: Mapping[str, Sequence[SpanRecord]]) -> Refused:
        """Buffer an export's spans, trace by trace, in one round trip (a pipeline of script calls); returns the
        spans refused."""
        refused = Refused()
        if not by_trace:
            return refused
        limits, now = self.limits, time.time()
        async with self.client.pipeline(transaction=False) as pipe:
            for trace_id, spans in by_trace.items():
                member = keys.otlp_member(tenant, trace_id)
                has_root = any(not span.parent_id for span in spans)
                await self._add(
                    keys=[self.pending, keys.otlp_spans(self.prefix, member), keys.otlp_meta(self.prefix, member),
                          keys.otlp_done(self.prefix, member)],
                    args=[now, limits.settle_seconds, limits.max_wait_seconds, limits.ttl_seconds, member,
                          limits.max_spans, int(has_root), limits.max_bytes,
                          *(_encoder.encode(span) for span in spans)], client=pipe)
            for too_many, too_large, late in await pipe.execute():
                refused.too_many += int(too_many)
                refused.too_large += int(too_large)
                refused.late += int(late)
        return refused

    async def due(self, limit: int = 100) -> list[str]:
        """Members whose wait is over."""
        found = await self.client.zrangebyscore(self.pending, "-inf", time.time(), start=0, num=limit)
        return [m.decode() if isinstance(m, bytes) else m for m in found]

    async def lease(self, member: str) -> list[SpanRecord] | None:
        """The spans of a due trace, held LEASE_SECONDS for this caller; None when another took it or it is gone."""
        raw = await self._lease(keys=[self.pending, keys.otlp_spans(self.prefix, member),
                                      keys.otlp_meta(self.prefix, member)],
                                args=[time.time(), LEASE_SECONDS, member])
        if raw is None:
            return None
        return [_decoder.decode(item) for item in raw]

    def release_commands(self, member: str) -> list[tuple[object, ...]]:
        """The commands that forget a handed-over trace and mark it done, for the same atomic group as its hand-over
        writes."""
        return [("ZREM", self.pending, member),
                ("DEL", keys.otlp_spans(self.prefix, member), keys.otlp_meta(self.prefix, member)),
                ("SET", keys.otlp_done(self.prefix, member), "1", "EX", self.limits.done_ttl_seconds)]


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
