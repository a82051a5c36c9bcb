"""POST /v1/otlp/v1/traces: OTLP/HTTP trace exports from an instrumented app (OpenInference or OpenLLMetry / GenAI
spans), buffered by trace and handed to the online path once whole (ragpulse.otlp)."""

from __future__ import annotations

from collections import defaultdict

import anyio.to_thread
from litestar import Request, Response, post

from ragpulse.config import keys
from ragpulse.config.settings import Settings
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
    `incomplete`, one whose spans cannot make a trace `invalid`. A body sent with `Content-Encoding: gzip` or `deflate`
    (the exporters' `compression`) is inflated up to RAGPULSE_MAX_BODY_BYTES (413 past it). Answers
    ExportTraceServiceResponse in the request's encoding, with `partial_success` counting the spans refused (no valid
    trace id, over RAGPULSE_OTLP_MAX_SPANS_PER_TRACE or RAGPULSE_OTLP_MAX_TRACE_BYTES in their trace, or late: their
    trace was handed over already) and warning of attribute values cut or dropped at
    RAGPULSE_OTLP_MAX_ATTRIBUTE_BYTES."""
    media, coding = request.content_type[0], request.headers.get("content-encoding", "")
    decoded = _read(body, media, coding, call.settings) if len(body) <= INLINE_BODY_BYTES and not coding else \
        await anyio.to_thread.run_sync(_read, body, media, coding, call.settings)
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
    decoded.rejected += refused.total
    for n, why in ((refused.too_many, f"over {settings.otlp_max_spans_per_trace} spans in one trace"),
                   (refused.too_large, f"over {settings.otlp_max_trace_bytes} bytes buffered for one trace"),
                   (refused.late, "their trace was handed over already (late spans are ignored)")):
        if n:
            decoded.errors.append(why)
    await _count(call, decoded, {"invalid_id": invalid, "too_many": refused.too_many,
                                 "too_large": refused.too_large, "late": refused.late})
    return Response(response_body(decoded, media), media_type=media)


def _read(body: bytes, media: str, coding: str, settings: Settings) -> Decoded:
    """The export in `body`, inflated first when it is compressed (off the event loop unless small and plain)."""
    return decode_export(decoded_body(body, coding, settings.max_body_bytes), media, settings.otlp_max_attribute_bytes)


async def _count(call: Call, decoded: Decoded, rejected: dict[str, int]) -> None:
    """Count the spans refused, by reason, and the attributes cut or dropped."""
    counts = MetricsBatch(())
    for reason, n in rejected.items():
        if n:
            counts.inc(m.OTLP_SPANS_REJECTED, {"reason": reason}, n)
    for action, n in decoded.attributes.items():
        counts.inc(m.OTLP_ATTRIBUTES_FIXED, {"action": action}, n)
    if counts.pending:
        writes = Writes()
        counts.queue_onto(writes)
        await call.services.committer.apply(writes.group)

