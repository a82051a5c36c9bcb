"""Where in an OTLP/JSON export protobuf's JSON parser failed, as a `$.resourceSpans[0]...` path for the 400.

The parser names the path with its indexes for some errors (`... at ExportTraceServiceRequest.resourceSpans[0]
.scopeSpans[0].spans[2].attributes[1].value.doubleValue`), and only the field names for others (`Failed to parse
intValue field: ...`). For those, each span, then each of its attributes, is parsed alone until one fails. Only the
error path runs this.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

_NAMED = re.compile(r" at ExportTraceServiceRequest((?:\.\w+|\[\d+\])*)")


def failing_path(error: json_format.ParseError, data: Any) -> str | None:
    """The path of the value `error` (from parsing `data`) is about; None when no span is at fault."""
    named = _NAMED.search(str(error))
    return "$" + named[1] if named else _first_refused(data)


def _first_refused(data: Any) -> str | None:
    for i, resource in enumerate(_items(data, "resourceSpans")):
        for j, scope in enumerate(_items(resource, "scopeSpans")):
            for k, span in enumerate(_items(scope, "spans")):
                if _refused(span, Span):
                    path = f"$.resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                    bad = next((a for a, kv in enumerate(_items(span, "attributes")) if _refused(kv, KeyValue)), None)
                    return path if bad is None else f"{path}.attributes[{bad}]"
    return None


def _items(node: Any, key: str) -> list[Any]:
    items = node.get(key) if isinstance(node, dict) else None
    return items if isinstance(items, list) else []


def _refused(value: Any, message: type[Message]) -> bool:
    try:
        json_format.ParseDict(value, message(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError, RecursionError):
        return True
    return False
