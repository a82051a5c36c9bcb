"""Hand assembled OpenTelemetry traces to the online path: every due trace is leased, assembled and either staged
as an online post (sampled, counted, judged like POST /v1/traces) or recorded `incomplete`; its buffer is forgotten
in the same atomic group as those writes, so a trace is handed over exactly once, and a replica that dies mid-way
leaves it to another after the lease."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import msgspec

from ragpulse.config import keys
from ragpulse.config.settings import Settings
from ragpulse.exceptions import Backlogged, RagpulseError
from ragpulse.model.trace import Trace
from ragpulse.monitoring import catalog as m
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.monitoring.policy_store import PolicyCache
from ragpulse.online import records
from ragpulse.online.post import room_for, stage_post
from ragpulse.otlp.assemble import assemble
from ragpulse.otlp.buffer import SpanBuffer, split_member
from ragpulse.store.atomic import GroupCommitter, Writes
from ragpulse.store.clock import utcnow
from ragpulse.store.connection import RETRIED_ERRORS

log = logging.getLogger("ragpulse.otlp")
POLL_SECONDS = 0.2
"""How often a replica looks for due traces."""


class Handover:
    """The loop an API replica runs in its lifespan."""

    def __init__(self, settings: Settings, buffer: SpanBuffer, committer: GroupCommitter,
                 policies: PolicyCache) -> None:
        self.settings, self.buffer, self.committer, self.policies = settings, buffer, committer, policies

    async def run(self, stop: asyncio.Event) -> None:
        """Hand over due traces until `stop` is set; a Redis outage pauses it (logged once, and once when over).

        The loop checks `stop` on every turn, not only its cancellation: a cancel that lands while the Redis client
        times out a connection can come back as a timeout, which the loop would otherwise take for an outage."""
        outage = False
        while not stop.is_set():
            try:
                for member in await self.buffer.due():
                    await self.hand_over(member)
                if outage:
                    log.warning("OTLP hand-over resumed: Redis is back")
                outage = False
            except RETRIED_ERRORS as exc:
                if not outage:
                    log.warning("OTLP hand-over paused: Redis unreachable (%s)", exc)
                outage = True
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_SECONDS)

    async def hand_over(self, member: str) -> str | None:
        """Assemble one due trace and apply its writes; its outcome, or None when another replica has it."""
        spans = await self.buffer.lease(member)
        if spans is None:
            return None
        tenant, trace_id = split_member(member)
        writes, outcome, app = Writes(), "accepted", "default"
        try:
            assembled = assemble(spans)
            app = assembled.trace.get("app", "default")
            if assembled.missing:
                outcome = self._incomplete(writes, tenant, trace_id, app, "no " + " and no ".join(assembled.missing))
            else:
                await self._stage(writes, tenant, msgspec.convert(assembled.trace, Trace))
        except msgspec.ValidationError as exc:
            outcome = self._incomplete(writes, tenant, trace_id, app, f"breaks the trace schema: {exc}", "invalid")
        except RagpulseError as exc:  # a policy read failing for a reason other than Redis: keep the trace as data
            outcome = self._incomplete(writes, tenant, trace_id, app, str(exc), "invalid")
        counts = MetricsBatch(self.settings.apps, self.settings.tenants)
        counts.inc(m.OTLP_TRACES, {**counts.per_app(tenant, app), "outcome": outcome})
        counts.queue_onto(writes)
        group = [*writes.group, *self.buffer.release_commands(member)]
        if outcome == "accepted":
            group.insert(0, room_for(self.settings, tenant))
        try:
            await self.committer.apply(group)
        except Backlogged:
            log.warning("OTLP trace %s waits: the online stream is full", trace_id)  # leased: retried after the lease
            return None
        return outcome

    async def _stage(self, writes: Writes, tenant: str, trace: Trace) -> None:
        policies = await self.policies.policies(tenant, [trace.app])
        stage_post(writes, self.settings, tenant, [trace], policies, utcnow())

    def _incomplete(self, writes: Writes, tenant: str, trace_id: str, app: str, why: str,
                    outcome: str = "incomplete") -> str:
        now = utcnow()
        record = records.OnlineTrace(trace_id=trace_id, app=app, status="incomplete", sampled=False,
                                     sample_reason="incomplete", received_at=now, processed_at=now, error=why)
        writes.set(keys.online_trace(tenant, trace_id), records.encode(record),
                   ex=self.settings.online_result_ttl_seconds)
        return outcome
