"""Hand assembled OpenTelemetry traces to the online path: every due trace is leased, assembled and either staged
as an online post (sampled, counted, judged like POST /v1/traces) or recorded `incomplete` or `invalid`; its buffer
is forgotten in the same atomic group as those writes, so a trace is handed over exactly once, and a replica that dies
mid-way leaves it to another after the lease.

One bad trace never stops the loop: whatever a trace raises (Redis being unreachable aside, which pauses the loop),
it is recorded `invalid` with the reason, counted and forgotten, and the loop goes on to the next."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import msgspec

from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from ragpulse.exceptions import Backlogged, RagpulseError
from ragpulse.model.trace import Trace
from ragpulse.monitoring import catalog as m
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.monitoring.policy_store import PolicyCache
from ragpulse.store import online_records
from ragpulse.online.post import room_for, stage_post
from ragpulse.otlp.assemble import app_name, assemble, trace_environment
from ragpulse.otlp.buffer import SpanBuffer, split_member
from ragpulse.otlp.spans import SpanRecord
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
                    await self.settle(member)
                if outage:
                    log.warning("OTLP hand-over resumed: Redis is back")
                outage = False
            except RETRIED_ERRORS as exc:
                if not outage:
                    log.warning("OTLP hand-over paused: Redis unreachable (%s)", exc)
                outage = True
            except Exception:  # noqa: BLE001 - the loop serves every tenant: log, and try again next turn
                log.exception("OTLP hand-over turn failed; retrying")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), POLL_SECONDS)

    async def settle(self, member: str) -> str | None:
        """Hand over one due trace, or, should that fail for any reason but Redis, record it `invalid` and forget it."""
        try:
            return await self.hand_over(member)
        except RETRIED_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - one trace's failure is that trace's, recorded as data
            log.exception("OTLP trace %s could not be handed over; recorded invalid", member)
            tenant, trace_id = split_member(member)
            writes = Writes()
            self._record(writes, tenant, trace_id, "default", f"could not be handed over: {_reason(exc)}", "invalid")
            await self._apply(writes, tenant, "default", "invalid", member)
            return "invalid"

    async def hand_over(self, member: str) -> str | None:
        """Assemble one due trace and apply its writes; its outcome, or None when another replica has it."""
        spans = await self.buffer.lease(member)
        if spans is None:
            return None
        tenant, trace_id = split_member(member)
        writes = Writes()
        environment = trace_environment(spans) or defaults.ONLINE_ENVIRONMENT   # assembled or not
        try:
            outcome, app = await self._build(writes, tenant, trace_id, spans)
        except RETRIED_ERRORS:
            raise
        except (msgspec.ValidationError, RagpulseError) as exc:  # SpansInvalid, a policy read failing: data
            writes, app = Writes(), _app_of(spans)
            prefix = "breaks the trace schema: " if isinstance(exc, msgspec.ValidationError) else ""
            outcome = self._record(writes, tenant, trace_id, app, prefix + str(exc), "invalid")
        return await self._apply(writes, tenant, app, outcome, member, environment)

    async def _build(self, writes: Writes, tenant: str, trace_id: str, spans: list[SpanRecord]) -> tuple[str, str]:
        """Queue the trace's writes onto `writes`: staged as a post, or recorded incomplete; (outcome, app)."""
        assembled = assemble(spans)
        app = assembled.trace.get("app", "default")
        counts = MetricsBatch(())
        for action, what in assembled.notes:
            log.warning("OTLP trace %s: attribute %s (%s)", trace_id, action, what)
            counts.inc(m.OTLP_ATTRIBUTES_FIXED, {"action": action})
        counts.queue_onto(writes)
        if assembled.missing:
            return self._record(writes, tenant, trace_id, app, "no " + " and no ".join(assembled.missing)), app
        trace = msgspec.convert(assembled.trace, Trace)
        policies = await self.policies.policies(tenant, [trace.app])
        stage_post(writes, self.settings, tenant, [trace], policies, utcnow())
        return "accepted", app

    async def _apply(self, writes: Writes, tenant: str, app: str, outcome: str, member: str,
                     environment: str = defaults.ONLINE_ENVIRONMENT) -> str | None:
        """Apply the trace's writes, its count (under the trace's environment) and its buffer's release as one group;
        None when it must wait."""
        counts = MetricsBatch(self.settings.apps, self.settings.tenants)
        counts.inc(m.OTLP_TRACES, {**counts.per_app(tenant, app, environment), "outcome": outcome})
        counts.queue_onto(writes)
        group = [*writes.group, *self.buffer.release_commands(member)]
        if outcome == "accepted":
            group.insert(0, room_for(self.settings, tenant))
        try:
            await self.committer.apply(group)
        except Backlogged:
            log.warning("OTLP trace %s waits: the online stream is full", member)  # leased: retried after the lease
            return None
        return outcome

    def _record(self, writes: Writes, tenant: str, trace_id: str, app: str, why: str,
                outcome: str = "incomplete") -> str:
        """Queue the record of a trace that is not evaluated: `incomplete` or `invalid`, with why."""
        now = utcnow()
        record = online_records.OnlineTrace(trace_id=trace_id, app=app, status=outcome, sampled=False,  # type: ignore[arg-type]
                                     sample_reason=outcome, received_at=now, processed_at=now, error=why)
        writes.set(keys.online_trace(tenant, trace_id), online_records.encode(record),
                   ex=self.settings.online_result_ttl_seconds)
        return outcome


def _app_of(spans: list[SpanRecord]) -> str:
    """The app a trace that could not be assembled is counted under (its first span's service)."""
    return app_name(spans[0].service) if spans else "default"


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]
