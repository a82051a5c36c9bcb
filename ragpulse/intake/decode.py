"""Turn a request body into a validated batch, reporting every failing path at once."""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import msgspec

from ragpulse.config import defaults
from ragpulse.exceptions import InvalidBody, MalformedBody, TooLarge
from ragpulse.intake.validate import collect_errors, split_message
from ragpulse.model.trace import BatchRequest, Trace

_batch_decoder = msgspec.json.Decoder(BatchRequest)
_any_decoder = msgspec.json.Decoder()
T = TypeVar("T")


def decode_batch(body: bytes, max_traces: int = defaults.MAX_TRACES_PER_BATCH) -> BatchRequest:
    """Decode and validate a batch body; give absent trace ids a fresh one.

    The fast path decodes straight into structs. Only when that fails is the body decoded again, untyped, and
    walked against the schema (`validate.collect_errors`), so the 422 lists every failing trace index and field
    path rather than the first one msgspec stops at.
    """
    try:
        batch = _batch_decoder.decode(body)
    except msgspec.ValidationError as first:
        raise _invalid(body, BatchRequest, first, "the batch does not match the schema") from None
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


def _invalid(body: bytes, type_: type, first: msgspec.ValidationError, detail: str) -> InvalidBody:
    """The 422 for a body msgspec rejected: every failing path (at most MAX_ERRORS), found by walking the type."""
    found = collect_errors(_any_decoder.decode(body), type_)
    errors = found.errors or [_error(*split_message(str(first)))]
    if found.truncated:
        detail += f"; the first {len(errors)} errors are listed"
    return InvalidBody(detail, errors, errors_truncated=found.truncated)


def _error(path: str, message: str) -> dict[str, str]:
    return {"path": path, "message": message}


def decode_body(body: bytes, type_: type[T]) -> T:
    """Decode a small JSON body into `type_`: 400 when it is not JSON, 422 naming every failing path otherwise."""
    try:
        return msgspec.json.decode(body, type=type_)
    except msgspec.ValidationError as exc:
        raise _invalid(body, type_, exc, "the body does not match the schema") from None
    except msgspec.DecodeError as exc:
        raise MalformedBody(f"body is not valid JSON: {exc}") from None
