"""Turn a request body into a validated batch, reporting every failing path at once."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import msgspec

from ragpulse.config import defaults
from ragpulse.exceptions import InvalidBody, MalformedBody, TooLarge
from ragpulse.model.trace import BatchOptions, BatchRequest, Trace

_batch_decoder = msgspec.json.Decoder(BatchRequest)
_any_decoder = msgspec.json.Decoder()
_ENVELOPE_FIELDS = {"traces", "options"}
T = TypeVar("T")


def decode_batch(body: bytes, max_traces: int = defaults.MAX_TRACES_PER_BATCH) -> BatchRequest:
    """Decode and validate a batch body; give absent trace ids a fresh one.

    The fast path decodes straight into structs. Only when that fails is the body decoded again, trace by trace,
    so the 422 lists every failing trace index and field path rather than the first one.
    """
    try:
        batch = _batch_decoder.decode(body)
    except msgspec.ValidationError as first:
        raise InvalidBody("the batch does not match the schema", _all_errors(body, first)) from None
    except msgspec.DecodeError as exc:
        raise MalformedBody(f"body is not valid JSON: {exc}") from None
    if len(batch.traces) > max_traces:
        raise TooLarge(f"batch holds {len(batch.traces)} traces; the limit is {max_traces}",
                       [{"path": "$.traces", "message": f"at most {max_traces} traces per batch"}])
    _check_unique_trace_ids(batch.traces)
    for trace in batch.traces:
        if trace.trace_id is None:
            trace.trace_id = uuid.uuid4().hex
    return batch


def _check_unique_trace_ids(traces: list[Trace]) -> None:
    seen: dict[str, int] = {}
    errors = []
    for index, trace in enumerate(traces):
        if trace.trace_id is None:
            continue
        if trace.trace_id in seen:
            errors.append(_error(f"$.traces[{index}].trace_id",
                                 f"duplicate trace_id {trace.trace_id!r}, first used at $.traces[{seen[trace.trace_id]}]"))
        else:
            seen[trace.trace_id] = index
    if errors:
        raise InvalidBody("trace_id must be unique within a batch", errors)


def _all_errors(body: bytes, first: msgspec.ValidationError) -> list[dict[str, str]]:
    raw = _any_decoder.decode(body)
    if not isinstance(raw, dict):
        return [_split(str(first))]
    errors = [_error(f"$.{name}", f"Object contains unknown field `{name}`") for name in raw if name not in _ENVELOPE_FIELDS]
    errors += _convert_errors(raw.get("options", {}), BatchOptions, "$.options")
    traces = raw.get("traces")
    if not isinstance(traces, list):
        errors.append(_split(str(first)))
        return errors
    if not traces:
        errors.append(_error("$.traces", "Expected `array` of length >= 1"))
    for index, trace in enumerate(traces):
        errors += _convert_errors(trace, Trace, f"$.traces[{index}]")
    return errors or [_split(str(first))]


def _convert_errors(value: Any, type_: type, prefix: str) -> list[dict[str, str]]:
    try:
        msgspec.convert(value, type_)
    except msgspec.ValidationError as exc:
        err = _split(str(exc))
        return [_error(prefix + err["path"][1:], err["message"])]
    return []


def _split(message: str) -> dict[str, str]:
    """Split msgspec's "message - at `$.path`" into its parts."""
    text, sep, path = message.rpartition(" - at `")
    if not sep:
        return _error("$", message)
    return _error(path.rstrip("`"), text)


def _error(path: str, message: str) -> dict[str, str]:
    return {"path": path, "message": message}


def decode_body(body: bytes, type_: type[T]) -> T:
    """Decode a small JSON body into `type_`: 400 when it is not JSON, 422 naming the failing path otherwise."""
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.ValidationError as exc:
        raise InvalidBody("the body does not match the schema", [_split(str(exc))]) from None
    except msgspec.DecodeError as exc:
        raise MalformedBody(f"body is not valid JSON: {exc}") from None
