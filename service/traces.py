"""POST /v1/traces: the online path (production traces as they happen, no job); GET /v1/traces/{trace_id}."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
import msgspec
from litestar import Controller, Response, get, post
from litestar.params import Parameter

from ragpulse.config import defaults, keys
from ragpulse.exceptions import AlreadyAnswered, Backlogged, RateLimited
from ragpulse.intake.decode import decode_post
from ragpulse.model.trace import TracesPost
from ragpulse.store import online_records
from ragpulse.online.post import room_for, stage_post
from ragpulse.store.online_records import OnlineTrace
from ragpulse.store.atomic import Group, Writes, take_tokens
from ragpulse.store.clock import utcnow
from service.batches import INLINE_BODY_BYTES
from service.context import Call
from service.errors import backlogged, over_ingest_rate
from service.idempotency import IdempotencyKey, kept_answer, replay


class TracesAccepted(msgspec.Struct, kw_only=True):
    """202 answer of POST /v1/traces: the traces are on the online stream; no job is created."""

    accepted: int
    trace_ids: list[str]
    """In the order posted; ids the client left out were given one."""
    sampled_trace_ids: list[str]
    """Those the apps' sampling policies send to the judge: GET /v1/traces/{trace_id} answers for these (and for any
    trace whose processing fails). The others are counted only."""


TraceIdParam = Annotated[str, Parameter(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f]+$",
                                        description="trace_id as posted, or as POST /v1/traces returned it.")]


def _decoded(body: bytes) -> TracesPost:
    return decode_post(body, defaults.MAX_TRACES_PER_POST)


async def accept_traces(body: bytes, call: Call, key: str | None = None) -> TracesAccepted | Response[bytes]:
    """Decode and check the post, decide what is sampled, and apply its writes atomically (group-committed); with an
    Idempotency-Key `key`, keep the answer with them, or replay the one kept for that key."""
    settings, services = call.settings, call.services
    small = len(body) <= INLINE_BODY_BYTES
    posted = _decoded(body) if small else await anyio.to_thread.run_sync(_decoded, body)
    traces = posted.traces
    policies = await services.online_policies.policies(call.tenant, (t.app for t in traces))
    queued = Writes()
    staged = stage_post(queued, settings, call.tenant, traces, policies, utcnow())
    answer = TracesAccepted(accepted=len(traces), trace_ids=[t.trace_id or "" for t in traces],
                            sampled_trace_ids=staged.sampled_ids)
    writes: Group = [room_for(settings, call.tenant), *queued.group]
    if settings.tenant_traces_per_second:
        writes.insert(1, take_tokens(keys.tenant_ingest_bucket(call.tenant), len(traces),
                                     settings.tenant_traces_per_second, settings.tenant_traces_burst))
    kept = await kept_answer(key, call.tenant, "traces", body, answer, 202, settings, on_loop=small)
    try:
        await services.committer.apply(kept.guard(writes, call.tenant) if kept else writes, alone=not small)
    except AlreadyAnswered as exc:
        return replay(exc)
    except RateLimited as exc:
        raise over_ingest_rate(exc, call.tenant, settings, len(traces)) from exc
    except Backlogged as exc:
        raise backlogged(exc, call.tenant, settings) from exc
    services.api_metrics.online_posts.inc()
    return kept.response() if kept else answer


class TraceController(Controller):
    """Online traces: posted as they happen, sampled, counted, judged when sampled."""

    path = "/v1/traces"
    tags = ["traces"]

    @post("/", status_code=202, summary="Post production traces as they happen")
    async def create(self, body: bytes, call: Call,
                     idempotency_key: IdempotencyKey = None) -> TracesAccepted | Response[bytes]:
        """Accept 1 to 1,000 traces onto the online stream, with no job: every trace gets the cheap checks and is
        counted (ragpulse_traces_*, /v1/monitor/{app}); those the app's sampling policy picks are judged.

        Same schema and errors as POST /v1/batches: 400 on malformed JSON, 422 listing every schema violation, 413
        over the limits, 429 (with Retry-After) over the tenant's ingest rate; and 503 (with Retry-After) when the
        online stream holds RAGPULSE_ONLINE_MAX_BACKLOG unprocessed posts, or the tenant holds its share of them (the
        cap divided among the tenants with posts waiting, one share kept free for a tenant with none).

        With an `Idempotency-Key`, a retry of a committed post gets its first answer again and is not counted again
        (RAGPULSE_IDEMPOTENCY_TTL_SECONDS); the same key with another body is 422."""
        return await accept_traces(body, call, idempotency_key)

    @get("/{trace_id:str}", sync_to_thread=True, summary="An online trace's status and result")
    def read(self, trace_id: TraceIdParam, call: Call) -> OnlineTrace:
        """`pending`, `done` or `failed`, whether it was sampled and why, its checks and, once judged, the generation
        result with its claims. Kept RAGPULSE_ONLINE_RESULT_TTL_SECONDS for sampled traces (and failed ones); 404 for
        a trace that was not sampled (only counted), expired, or belongs to another tenant."""
        return online_records.read(call.store.redis, call.tenant, trace_id)
