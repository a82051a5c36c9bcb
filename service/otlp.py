"""POST /v1/otlp/v1/traces: OTLP/HTTP trace exports from an instrumented app (OpenInference or OpenLLMetry / GenAI
spans), buffered by trace and handed to the online path once whole (ragpulse.otlp)."""

from __future__ import annotations

from collections import defaultdict

import anyio.to_thread
from litestar import Request, Response, post

from ragpulse.config import keys
from ragpulse.exceptions import RateLimited
from ragpulse.monitoring import catalog as m
from ragpulse.monitoring.counters import MetricsBatch
from ragpulse.otlp.decode import JSON, PROTOBUF, Decoded, decode_export, response_body
from ragpulse.otlp.encoding import decoded_body
from ragpulse.otlp.spans import SpanRecord
from ragpulse.store.atomic import Writes, take_tokens
from service.batches import INLINE_BODY_BYTES
from service.context import Call
from service.errors import over_ingest_rate

MEDIA_TYPES = (PROTOBUF, JSON)
"""What OTLP/HTTP sends; the request guard answers 415 to anything else before reading the body."""


@post("/v1/otlp/v1/traces", status_code=200, opt={"media_types": MEDIA_TYPES}, tags=["traces"],
      summary="Receive OTLP/HTTP trace exports (protobuf or JSON)")
async def otlp_traces(request: Request, body: bytes, call: Call) -> Response[bytes]:
    """Set `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` to this URL and send `Authorization: Bearer <key>`. Spans are
    buffered by OpenTelemetry trace id; a trace is assembled once its root span has arrived (plus
    RAGPULSE_OTLP_SETTLE_SECONDS), or RAGPULSE_OTLP_MAX_WAIT_SECONDS after its first span, and handed to the online
    path under its OpenTelemetry trace id (GET /v1/traces/{trace_id}); one without a query or documents is recorded
    `incomplete`. A body sent with `Content-Encoding: gzip` or `deflate` (the exporters' `compression`) is inflated up
    to RAGPULSE_MAX_BODY_BYTES (413 past it). Answers ExportTraceServiceResponse in the request's encoding, with `partial_success` counting the
    spans refused (no valid trace id, or over RAGPULSE_OTLP_MAX_SPANS_PER_TRACE)."""
    media, coding = request.content_type[0], request.headers.get("content-encoding", "")
    decoded = _read(body, media, coding, call.settings.max_body_bytes) if len(body) <= INLINE_BODY_BYTES and not \
        coding else await anyio.to_thread.run_sync(_read, body, media, coding, call.settings.max_body_bytes)
    by_trace: dict[str, list[SpanRecord]] = defaultdict(list)
    for span in decoded.spans:
        by_trace[span.trace_id].append(span)
    services, settings = call.services, call.settings
    if by_trace and settings.tenant_traces_per_second:
        try:
            await services.committer.apply([take_tokens(keys.tenant_ingest_bucket(call.tenant), len(by_trace),
                                                        settings.tenant_traces_per_second,
                                                        settings.tenant_traces_burst)])
        except RateLimited as exc:
            raise over_ingest_rate(exc, call.tenant, settings, len(by_trace)) from exc
    invalid = decoded.rejected
    refused = await services.otlp_buffer.add(call.tenant, by_trace)
    if refused:
        decoded.rejected += refused
        decoded.errors.append(f"over {settings.otlp_max_spans_per_trace} spans in one trace")
    await _count_rejected(call, invalid, decoded.rejected - invalid)
    return Response(response_body(decoded, media), media_type=media)


def _read(body: bytes, media: str, coding: str, limit: int) -> Decoded:
    """The export in `body`, inflated first when it is compressed (off the event loop unless small and plain)."""
    return decode_export(decoded_body(body, coding, limit), media)


async def _count_rejected(call: Call, invalid: int, too_many: int) -> None:
    counts = MetricsBatch(())
    for reason, n in (("invalid_id", invalid), ("too_many", too_many)):
        if n:
            counts.inc(m.OTLP_SPANS_REJECTED, {"reason": reason}, n)
    if counts.pending:
        writes = Writes()
        counts.queue_onto(writes)
        await call.services.committer.apply(writes.group)

