"""The record of one online trace that GET /v1/traces/{trace_id} answers: kept for sampled traces (written `pending`
when the API accepts them, replaced by `done` or `failed` when a worker has processed them) and for any trace whose
processing failed. Unsampled traces that pass keep no record: they live on only in the counters."""

from __future__ import annotations

from typing import Literal

import msgspec
import redis

from ragpulse.config import keys
from ragpulse.exceptions import TraceNotFound
from ragpulse.model.environment import StoredEnvironment
from ragpulse.model.results import TraceResult

OnlineStatus = Literal["pending", "done", "failed", "incomplete", "invalid"]


class OnlineTrace(msgspec.Struct, kw_only=True):
    """One online trace as its app sees it."""

    trace_id: str
    app: str
    environment: StoredEnvironment = "production"
    """Where it was produced (the trace's `environment`; `production` when it named none)."""
    status: OnlineStatus
    """`pending` until a worker has processed it; `done`; `failed` (the judge failed, a budget ran out, or the
    evaluation could not run: `error` says which); or `incomplete`: an OpenTelemetry trace (POST /v1/otlp/v1/traces)
    whose spans held no query or no documents (`error` names what was missing), counted and never evaluated; or
    `invalid`: an OpenTelemetry trace whose spans could not make a trace at all (a value no trace can hold, its
    buffered spans expired; `error` says why), counted and never evaluated."""
    sampled: bool
    """True when the app's sampling policy sent it to the judge."""
    sample_reason: str
    """`sampled` (the hash of trace_id, or of app and session_id for a session sampled whole, fell under the sample
    rate), `always:<check>` (an always-judge rule), or
    `not_sampled`."""
    checks: list[str] = []
    """The cheap programmatic checks that flagged it (every trace gets them, judged or not)."""
    received_at: str
    """When the API accepted it (RFC 3339, UTC)."""
    processed_at: str | None = None
    """When a worker finished it."""
    error: str | None = None
    """Why it failed."""
    session_id: str | None = None
    """The conversation this trace is a turn of (the trace's `session_id`); GET /v1/sessions/{session_id} lists its
    sampled turns."""
    turn: int | None = None
    """The turn's index in its session (the trace's `turn`)."""
    result: TraceResult | None = None
    """Once processed: retrieval metrics when it has gold labels, and, when judged, the generation metrics and the
    judge's claims with their verdicts."""


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(OnlineTrace)


def finished(record: OnlineTrace, result: TraceResult, processed_at: str) -> OnlineTrace:
    """The record once a worker has the result: `done` when it evaluated fully, else `failed` with the reason."""
    status: OnlineStatus = "done" if result.status == "ok" else "failed"
    return msgspec.structs.replace(record, status=status, processed_at=processed_at, result=result,
                                   error=result.error if status == "failed" else None,
                                   sampled=bool(result.sampled), sample_reason=result.sample_reason)


def encode(record: OnlineTrace) -> bytes:
    """The stored form of a record."""
    return _encoder.encode(record)


def decode(raw: bytes) -> OnlineTrace:
    """A stored record."""
    return _decoder.decode(raw)


def read(client: redis.Redis, tenant: str, trace_id: str) -> OnlineTrace:
    """The tenant's record of `trace_id`; TraceNotFound when there is none (never sampled, expired, or another
    tenant's)."""
    raw = client.get(keys.online_trace(tenant, trace_id))
    if raw is None:
        raise TraceNotFound(f"no record of trace {trace_id!r} for this tenant: only sampled or failed traces keep "
                            "one, for RAGPULSE_ONLINE_RESULT_TTL_SECONDS (unsampled traces are only counted)")
    return _decoder.decode(raw)
