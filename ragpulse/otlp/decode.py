"""Decode an OTLP/HTTP trace export (`application/x-protobuf` or `application/json`) with the OpenTelemetry
project's protobuf classes into SpanRecords; spans that cannot be read are counted as rejected, never dropped
silently. OTLP/JSON nested deeper than MAX_JSON_DEPTH is a MalformedBody naming the path where it goes too deep (no
export nests that far; Python's JSON parser cannot even read ~1,000 levels)."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest, ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ragpulse.exceptions import MalformedBody
from ragpulse.otlp.spans import DEPLOYMENT_ATTRIBUTES, SpanRecord, capped, kept
from ragpulse.otlp.where import failing_path

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
ID_FIELDS = ("traceId", "spanId", "parentSpanId")
"""OTLP/JSON writes these ids as hex, where protobuf's JSON mapping expects base64."""
MAX_JSON_DEPTH = 128
"""The deepest nesting of arrays and objects read in OTLP/JSON: a span attribute sits 10 levels down and each nested
array or key-value list adds 3, so 128 is far past any export (protobuf itself stops at 100 nested messages)."""


@dataclass
class Decoded:
    """The readable spans of an export and how many were rejected, with why."""

    spans: list[SpanRecord] = field(default_factory=list)
    rejected: int = 0
    errors: list[str] = field(default_factory=list)
    """Why spans were rejected, and warnings (attributes cut or dropped), for the partial success's message."""
    attributes: dict[str, int] = field(default_factory=dict)
    """Attributes over the byte cap by what was done: `truncated` or `dropped`."""


def decode_export(body: bytes, media_type: str, max_attribute_bytes: int = 2**62) -> Decoded:
    """Every span of the export with a valid trace id, each attribute within `max_attribute_bytes`; MalformedBody
    when the body is not an export at all."""
    request = ExportTraceServiceRequest()
    data: Any = None
    try:
        if media_type == PROTOBUF:
            request.ParseFromString(body)
        else:
            data = _loads(body)
            _check_shape(data)
            json_format.ParseDict(_ids_to_base64(data), request, ignore_unknown_fields=True)
    except TooDeep as exc:
        raise MalformedBody(f"OTLP/JSON nested deeper than {MAX_JSON_DEPTH} levels at {exc.path}",
                            [{"path": exc.path, "message": f"nested deeper than {MAX_JSON_DEPTH} levels"}]) from None
    except Misshapen as exc:
        raise MalformedBody(f"not an OTLP ExportTraceServiceRequest ({media_type}): {exc.path}: {exc.what}",
                            [{"path": exc.path, "message": exc.what}]) from None
    except (DecodeError, json_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        path = failing_path(exc, data) if isinstance(exc, json_format.ParseError) else None
        raise MalformedBody(f"not an OTLP ExportTraceServiceRequest ({media_type}): {exc}",
                            [{"path": path, "message": "not a valid value of its field"}] if path else None) from None
    decoded = Decoded()
    for resource_spans in request.resource_spans:
        resource = {a.key: a.value for a in resource_spans.resource.attributes}
        service = _resource_text(resource, ("service.name",))
        deployment = _resource_text(resource, DEPLOYMENT_ATTRIBUTES)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                _add(decoded, span, service, deployment, max_attribute_bytes)
    return decoded


def _resource_text(resource: dict[str, AnyValue], keys: tuple[str, ...]) -> str:
    """The first of `keys` the resource sets, as text cut to 256 characters ("" when none is set)."""
    value = next((_value(resource[key]) for key in keys if key in resource), "")
    return str(value or "")[:256]


def response_body(decoded: Decoded, media_type: str) -> bytes:
    """ExportTraceServiceResponse, with partial_success when spans were rejected, in the request's encoding."""
    response = ExportTraceServiceResponse()
    if decoded.rejected:
        response.partial_success.rejected_spans = decoded.rejected
    if decoded.errors:          # with no span rejected, a warning: OTLP lets error_message carry one
        response.partial_success.error_message = "; ".join(dict.fromkeys(decoded.errors))[:1000]
    if media_type == PROTOBUF:
        return response.SerializeToString()
    return json.dumps(json_format.MessageToDict(response)).encode()


def _add(decoded: Decoded, span: Any, service: str, deployment: str, max_attribute_bytes: int) -> None:
    trace_id, span_id = span.trace_id.hex(), span.span_id.hex()
    if len(trace_id) != 32 or trace_id == "0" * 32 or len(span_id) != 16:
        decoded.rejected += 1
        decoded.errors.append("a span without a valid trace id or span id")
        return
    decoded.spans.append(SpanRecord(
        trace_id=trace_id, span_id=span_id, parent_id=span.parent_span_id.hex(), name=span.name,
        start_ns=span.start_time_unix_nano, end_ns=span.end_time_unix_nano, service=service,
        attributes=_attributes(decoded, span, max_attribute_bytes), deployment=deployment))


def _attributes(decoded: Decoded, span: Any, limit: int) -> dict[str, Any]:
    """The span's attributes assembly reads, each within `limit` bytes (cut or dropped, with a warning)."""
    attributes = {}
    for attribute in span.attributes:
        if not kept(attribute.key):
            continue
        value, action = capped(_value(attribute.value), limit)
        if action:
            decoded.attributes[action] = decoded.attributes.get(action, 0) + 1
            decoded.errors.append(f"attribute values over {limit} bytes were {action}")
        if value is not None:
            attributes[attribute.key] = value
    return attributes


def _value(value: AnyValue) -> Any:
    """An OTLP AnyValue as a plain value (arrays as lists, key-value lists as dicts, bytes as hex)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return value.bytes_value.hex()
    return getattr(value, kind) if kind else None


_LEVELS = ("resourceSpans", "scopeSpans", "spans")
"""The nesting of an export: protobuf's JSON parser lets a non-object through where these list objects."""


class Misshapen(Exception):
    """The export's nesting is not objects in lists at `path`."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: {what}")
        self.path, self.what = path, what


def _check_shape(node: Any, depth: int = 0, path: str = "$") -> None:
    """Misshapen naming the path where the export's nesting is not objects in lists (null reads as empty)."""
    if not isinstance(node, dict):
        raise Misshapen(path, f"expected an object, got {_json_kind(node)}")
    if depth == len(_LEVELS):
        return
    items = node.get(_LEVELS[depth])
    if items is None:
        return
    if not isinstance(items, list):
        raise Misshapen(f"{path}.{_LEVELS[depth]}", f"expected a list, got {_json_kind(items)}")
    for i, item in enumerate(items):
        _check_shape(item, depth + 1, f"{path}.{_LEVELS[depth]}[{i}]")


def _json_kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _refuse_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (RFC 8259): Python's parser takes them unless told not to."""
    raise ValueError(f"{name} is not a JSON number; OTLP/JSON writes it as the string \"{name}\"")


class TooDeep(Exception):
    """OTLP/JSON nests past MAX_JSON_DEPTH at `path`."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


Steps = tuple[Any, ...] | None
"""A JSON path kept as linked (parent, step) pairs: built for every node, spelled out only for an error."""


def _spelled(steps: Steps) -> str:
    parts: list[str] = []
    while steps is not None:
        steps, step = steps
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return "$" + "".join(reversed(parts))


def _loads(body: bytes) -> Any:
    """The body's JSON; TooDeep naming the path where Python's parser ran out of recursion."""
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except RecursionError:
        raise TooDeep(_deep_path(body)) from None


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"\s*(:)?|[\[\]{},]', re.S)


def _deep_path(body: bytes) -> str:
    """The path to the first array or object opened MAX_JSON_DEPTH levels down, found by a scan of the tokens that
    stops there (only bodies json.loads could not read are scanned)."""
    frames: list[list[Any]] = []          # per open container: [is_object, its current key or index]
    for match in _TOKEN.finditer(body):
        token = match.group(0)[:1]
        if token in (b"{", b"["):
            if len(frames) >= MAX_JSON_DEPTH:
                break
            frames.append([token == b"{", None if token == b"{" else 0])
        elif token in (b"}", b"]") and frames:
            frames.pop()
        elif token == b"," and frames and not frames[-1][0]:
            frames[-1][1] += 1
        elif match.group(1) and frames:
            frames[-1][1] = match.group(0).rsplit(b":", 1)[0].strip()[1:-1].decode("utf-8", "replace")
    steps: Steps = None
    for _, step in frames:
        steps = (steps, step)
    return _spelled(steps)


def _ids_to_base64(data: Any) -> Any:
    """OTLP/JSON's hex ids rewritten to the base64 protobuf's JSON parser reads (in place; returns the data);
    TooDeep past MAX_JSON_DEPTH. Walked without recursion."""
    stack: list[tuple[Any, Steps, int]] = [(data, None, 1)]
    while stack:
        node, steps, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise TooDeep(_spelled(steps))
        for key, item in node.items() if isinstance(node, dict) else enumerate(node):
            if key in ID_FIELDS and isinstance(item, str):
                try:
                    node[key] = base64.b64encode(bytes.fromhex(item)).decode()
                except ValueError:
                    pass  # not hex: left for the parser, which rejects it by name
            elif isinstance(item, dict | list):
                stack.append((item, (steps, key), depth + 1))
    return data
