"""One POST /v1/traces as it travels: the stream entry, and the writes that accept it (built in the API)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import msgspec
from ragpulse.config import defaults, keys
from ragpulse.config.settings import Settings
from ragpulse.model.environment import environment_of
from ragpulse.model.trace import Trace
from ragpulse.monitoring.recorder import queue_received_counts
from ragpulse.monitoring.sampling import SamplingPolicy, cheap_checks, sampling_decision
from ragpulse.store import online_records, sessions
from ragpulse.store.online_records import OnlineTrace
from ragpulse.store.atomic import Command, Writes, room_in

POST_FIELD = b"p"
"""The field of a stream entry holding the msgpack-encoded Post."""
TENANT_FIELD = b"t"
"""The field of a stream entry naming its tenant, whose backlog share it holds until it is deleted (a post written
before shares were counted has none, and holds none)."""


class Decision(msgspec.Struct, array_like=True):
    """What the API decided for one trace: judge it or not, why, and the cheap checks that flagged it."""

    sampled: bool
    reason: str
    checks: list[str]
    judge_injection: bool = True
    """The app's always_judge.injection_docs: the worker judges a trace with injection documents whatever the
    sample (the API leaves the costly pattern scan to the worker)."""
    max_source_age_days: float | None = None
    """The app's policy, for the worker's stale-document check."""
    review_share: float | None = None
    """The app's policy's review_sample_rate when the post was taken (None: the worker's
    RAGPULSE_REVIEW_SAMPLE_RATE)."""
    judge: str | None = None
    """The app's policy's judge (`heuristic`, `none`); None: the worker's RAGPULSE_JUDGE."""


class Post(msgspec.Struct, kw_only=True):
    """A stream entry: one accepted POST of a tenant, its traces with their sampling decisions."""

    tenant: str
    received_at: str
    traces: list[Trace]
    decisions: list[Decision]


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(Post)


def decode(raw: bytes) -> Post:
    """A stream entry's post."""
    return _decoder.decode(raw)


def stream_key(settings: Settings) -> str:
    """The online stream of this deployment's online queue."""
    return keys.online_stream(settings.queues[0])


def room_for(settings: Settings, tenant: str) -> Command:
    """The ROOM opening a group that adds a post of `tenant` to the online stream: the stream's cap
    (settings.online_max_backlog) and the tenant's share of it."""
    stream = stream_key(settings)
    return room_in(stream, settings.online_max_backlog, keys.online_backlog_shares(stream), tenant,
                   len(settings.tenants))


def decide(trace: Trace, policy: SamplingPolicy) -> Decision:
    """The cheap checks, then the sampling decision they feed (an always-judge rule, else the deterministic hash)."""
    checks = cheap_checks(trace, policy)
    sampled, reason = sampling_decision(trace, policy, checks)
    return Decision(sampled, reason, checks, policy.always_judge.injection_docs, policy.max_source_age_days,
                    policy.review_sample_rate, policy.judge)


def pending_record(trace: Trace, decision: Decision, received_at: str) -> OnlineTrace:
    """The record of a trace not processed yet."""
    return OnlineTrace(trace_id=trace.trace_id or "", app=trace.app, environment=environment_of(trace.environment),
                       status="pending", sampled=decision.sampled,
                       sample_reason=decision.reason, checks=decision.checks, received_at=received_at,
                       session_id=trace.session_id, turn=trace.turn)


@dataclass
class StagedPost:
    """A post whose decisions are made and whose writes are queued, not yet applied."""

    post: Post
    sampled_ids: list[str]


def stage_post(pipe: Writes, settings: Settings, tenant: str, traces: Sequence[Trace],
               policies: Mapping[str, SamplingPolicy], received_at: str) -> StagedPost:
    """Queue onto `pipe` the writes that accept a post: the stream entry and the tenant's count of posts held, a
    `pending` record per sampled trace, and the received counts (Prometheus and the app's minute bucket). A trace that
names no environment is given `production`. `policies`
    holds the policy of every app posted. The group they go in opens with room_for(settings, tenant)."""
    for trace in traces:
        trace.environment = trace.environment or defaults.ONLINE_ENVIRONMENT
    decisions = [decide(trace, policies[trace.app]) for trace in traces]
    post = Post(tenant=tenant, received_at=received_at, traces=list(traces), decisions=decisions)
    stream = stream_key(settings)
    pipe.xadd(stream, {POST_FIELD: _encoder.encode(post), TENANT_FIELD: tenant})
    pipe.hincrby(keys.online_backlog_shares(stream), tenant, 1)
    pipe.expire(keys.online_backlog_shares(stream), defaults.ONLINE_SHARES_TTL_SECONDS)
    sampled_ids = []
    for trace, decision in zip(traces, decisions, strict=True):
        if decision.sampled:
            record = pending_record(trace, decision, received_at)
            sampled_ids.append(record.trace_id)
            pipe.set(keys.online_trace(tenant, record.trace_id), online_records.encode(record),
                     ex=settings.online_result_ttl_seconds)
            if trace.session_id is not None:
                sessions.queue_turn(pipe, tenant, trace, settings.online_result_ttl_seconds)
    queue_received_counts(pipe, settings.apps, settings.tenants, tenant, traces)
    return StagedPost(post, sampled_ids)

