"""Turn a request body into a validated batch, reporting every failing path at once.

Odd input is a 4xx here, never a 500 further on: JSON with trailing bytes, or nested past the decoder's recursion
limit, is a 400; a number out of range (`1e999`), an object naming a key twice, and in `metadata` an integer msgpack
cannot store or nesting deeper than MAX_METADATA_DEPTH are a 422 naming the path. A dry run decodes exactly as a
stored batch does, so the two agree on all of them.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import msgspec

from ragpulse.config import defaults
from ragpulse.exceptions import InputError, InvalidBody, MalformedBody, TooLarge
from ragpulse.intake.duplicates import repeated_keys, step
from ragpulse.intake.validate import MAX_ERRORS, collect_errors, split_message
from ragpulse.intake.whole import whole_floats_as_ints
from ragpulse.model.dataset import BoundBatchRequest
from ragpulse.model.trace import BatchRequest, Trace, TracesPost

_batch_decoder = msgspec.json.Decoder(BatchRequest)
_bound_decoder = msgspec.json.Decoder(BoundBatchRequest)
_post_decoder = msgspec.json.Decoder(TracesPost)
_any_decoder = msgspec.json.Decoder()
T = TypeVar("T")

INT_MIN, INT_MAX = -(2**63), 2**64 - 1
"""The integers msgpack, the stored form of a trace, can hold."""
MAX_METADATA_DEPTH = 64
"""The deepest nesting of arrays and objects accepted in a `metadata` value."""


def decode_batch(body: bytes, max_traces: int = defaults.MAX_TRACES_PER_BATCH) -> BatchRequest:
    """Decode and validate a batch body; give absent trace ids a fresh one.

    The fast path decodes straight into structs. Only when that fails is the body decoded again, untyped, and
    walked against the schema (`validate.collect_errors`), so the 422 lists every failing trace index and field
    path rather than the first one msgspec stops at.
    """
    if _names_dataset(body):
        batch = _decode_traces(body, _bound_decoder, BoundBatchRequest, max_traces, "batch")
    else:
        batch = _decode_traces(body, _batch_decoder, BatchRequest, max_traces, "batch")
    _take_job_environment(batch)
    return batch


class _Head(msgspec.Struct):
    """Just a batch's `dataset`, read past everything else (unknown fields allowed)."""

    dataset: Any = None


_head_decoder = msgspec.json.Decoder(_Head)


def _names_dataset(body: bytes) -> bool:
    """True when the batch names a `dataset`: then its traces may leave `query` out for an `item_id`. The substring
    test keeps the extra read off every batch that does not; a body that cannot be read is left to the full decode."""
    if b'"dataset"' not in body:
        return False
    try:
        return _head_decoder.decode(body).dataset is not None
    except (msgspec.DecodeError, RecursionError):
        return False


def decode_post(body: bytes, max_traces: int = defaults.MAX_TRACES_PER_POST) -> TracesPost:
    """Decode and validate a POST /v1/traces body exactly as a batch is (same checks, same error paths)."""
    return _decode_traces(body, _post_decoder, TracesPost, max_traces, "post")


def _decode_traces(body: bytes, decoder: msgspec.json.Decoder, type_: type[T], max_traces: int, noun: str) -> T:
    try:
        decoded = _decode(body, decoder, type_, f"the {noun} does not match the schema")
    except InvalidBody as exc:
        hint = _unwrapped_hint(body)
        if hint:
            raise InvalidBody(f"{exc.detail}; {hint}", [{"path": "$", "message": hint}, *exc.errors],
                              errors_truncated=exc.errors_truncated) from None
        raise
    traces = decoded.traces
    if len(traces) > max_traces:
        raise TooLarge(f"{noun} holds {len(traces)} traces; the limit is {max_traces}",
                       [{"path": "$.traces", "message": f"at most {max_traces} traces per {noun}"}])
    _check_repeated_keys(body, type_)
    _check_traces(traces, bound=type_ is BoundBatchRequest)
    for trace in traces:
        if trace.trace_id is None:
            trace.trace_id = uuid.uuid4().hex
    return decoded


def _unwrapped_hint(body: bytes) -> str:
    """What to do when the body is one trace, or a bare list of them, instead of `{"traces": [...]}`."""
    try:
        value = _any_decoder.decode(body)
    except (msgspec.DecodeError, RecursionError):
        return ""
    if isinstance(value, dict) and "traces" not in value and "query" in value:
        return 'this is one trace: wrap it as {"traces": [<the trace>]}'
    if isinstance(value, list) and value and all(isinstance(item, dict) and "query" in item for item in value):
        return 'this is a list of traces: wrap it as {"traces": [...]}'
    return ""


def decode_body(body: bytes, type_: type[T]) -> T:
    """Decode a small JSON body into `type_`: 400 when it is not JSON, 422 naming every failing path otherwise."""
    value = _decode(body, msgspec.json.Decoder(type_), type_, "the body does not match the schema")
    _check_repeated_keys(body, type_)
    return value


def _decode(body: bytes, decoder: msgspec.json.Decoder, type_: type[T], detail: str) -> T:
    try:
        return decoder.decode(body)
    except msgspec.ValidationError as first:
        return _decode_refused(body, type_, first, detail)
    except msgspec.DecodeError as exc:
        raise MalformedBody(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise MalformedBody("body is nested too deeply to be read") from None


def _decode_refused(body: bytes, type_: type[T], first: msgspec.ValidationError, detail: str) -> T:
    """A body the strict decoder refused: read with its whole floats at integer positions as ints (`3.0` for 3,
    intake.whole) when that is all it lacked, else the 422 (or 400) of `_invalid`."""
    try:
        value = whole_floats_as_ints(_any_decoder.decode(body), type_)
        return msgspec.convert(value, type_)
    except (msgspec.DecodeError, RecursionError):   # ValidationError included
        raise _invalid(body, type_, first, detail) from None


def _invalid(body: bytes, type_: type, first: msgspec.ValidationError, detail: str) -> InputError:
    """The 422 for a body msgspec rejected: every failing path (at most MAX_ERRORS), found by walking the type.

    The walk needs the body decoded without a type. Should that fail too, the body is not JSON after all (`[]x`:
    trailing bytes after a value the schema had already refused; 400), or it holds a number no type takes (`1e999`;
    the 422 names the path msgspec gave for it). Whole floats at integer positions are not errors (intake.whole).
    """
    try:
        found = collect_errors(whole_floats_as_ints(_any_decoder.decode(body), type_), type_)
    except msgspec.ValidationError:
        return InvalidBody(detail, [_error(*split_message(str(first)))])
    except msgspec.DecodeError as exc:
        return MalformedBody(f"body is not valid JSON: {exc}")
    except RecursionError:
        return MalformedBody("body is nested too deeply to be read")
    errors = found.errors or [_error(*split_message(str(first)))]
    if found.truncated:
        detail += f"; the first {len(errors)} errors are listed"
    return InvalidBody(detail, errors, errors_truncated=found.truncated)


def _take_job_environment(batch: BatchRequest) -> None:
    """Give every trace of a batch the job's environment; 422 naming each trace that names another: a job is in one
    environment, which its status and report show and its counts are labelled with."""
    job = batch.options.environment
    others = [{"path": f"$.traces[{i}].environment",
               "message": f"the batch's environment is {job!r} ($.options.environment); a trace may only repeat it"}
              for i, trace in enumerate(batch.traces) if trace.environment not in (None, job)]
    if others:
        raise _bounded(InvalidBody, "a trace names another environment than its batch", others)
    for trace in batch.traces:
        trace.environment = job


def _check_traces(traces: list[Trace], bound: bool = False) -> None:
    """422 when a trace_id repeats within the batch, a `metadata` value cannot be stored (_check_metadata), or a
    trace names a dataset item outside a batch bound to a dataset (or, inside one, names neither item nor query)."""
    items = _check_items(traces, bound)
    if items:
        raise _bounded(InvalidBody, "item_id names an item of the batch's `dataset`; a trace without one needs its "
                                    "query", items)
    seen: dict[str, int] = {}
    repeated: list[dict[str, str]] = []
    unstorable: list[dict[str, str]] = []
    for index, trace in enumerate(traces):
        if trace.metadata:
            _check_metadata(trace.metadata, f"$.traces[{index}].metadata", unstorable)
        for rank, doc in enumerate(trace.retrieved_docs):
            if doc.metadata:
                _check_metadata(doc.metadata, f"$.traces[{index}].retrieved_docs[{rank}].metadata", unstorable)
        if trace.trace_id is None:
            continue
        if trace.trace_id in seen:
            repeated.append(_error(f"$.traces[{index}].trace_id",
                                   f"duplicate trace_id {trace.trace_id!r}, first used at $.traces[{seen[trace.trace_id]}]"))
        else:
            seen[trace.trace_id] = index
    if repeated or unstorable:
        reasons = (["trace_id must be unique within a batch"] if repeated else []) + (
            [f"metadata must hold integers of at most 64 bits, nested at most {MAX_METADATA_DEPTH} levels"]
            if unstorable else [])
        raise _bounded(InvalidBody, "; ".join(reasons), repeated + unstorable)


def _check_items(traces: list[Trace], bound: bool) -> list[dict[str, str]]:
    """In a bound batch, traces with neither query nor item_id; elsewhere, traces naming an item_id."""
    if bound:
        return [_error(f"$.traces[{i}].query", "required: the trace names no item_id to take it from")
                for i, trace in enumerate(traces) if not trace.query and trace.item_id is None]
    return [_error(f"$.traces[{i}].item_id", "names a dataset item, but the batch names no `dataset` (only a batch "
                                             "bound to a dataset takes item_id)")
            for i, trace in enumerate(traces) if trace.item_id is not None]


def _check_metadata(value: dict[str, Any], path: str, errors: list[dict[str, str]]) -> None:
    """Add the integers msgpack cannot hold (outside -2**63 .. 2**64-1) and nesting deeper than MAX_METADATA_DEPTH.

    `metadata` is free-form JSON, the one part of a trace whose values msgspec takes as they come: without this a
    20-digit integer passed a dry run and then failed the msgpack write of the batch with a 500. Walked without
    recursion; integers are checked where they sit and only containers are visited, each carrying its path as a
    chain of keys that becomes a string only for an error (a string per node made a body with a million values
    cost seconds). Traces without metadata cost nothing.
    """
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(value, (), 1)]
    while stack and len(errors) <= MAX_ERRORS:
        node, trail, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            errors.append(_error(_joined(path, trail),
                                 f"nested too deeply: at most {MAX_METADATA_DEPTH} levels in metadata"))
            continue
        for key, item in node.items() if type(node) is dict else enumerate(node):
            kind = type(item)
            if kind is int and not INT_MIN <= item <= INT_MAX:   # bool is not `int` by type, and always in range
                errors.append(_error(_joined(path, (trail, key)),
                                     f"integer out of range: msgpack stores {INT_MIN} .. {INT_MAX}"))
            elif kind is dict or kind is list:
                stack.append((item, (trail, key), depth + 1))


def _joined(path: str, trail: tuple[Any, ...]) -> str:
    """The JSON path of a chain of keys (parent chain, key) under `path`."""
    keys: list[str | int] = []
    while trail:
        trail, key = trail
        keys.append(key)
    return path + "".join(step(key) for key in reversed(keys))


def _check_repeated_keys(body: bytes, type_: Any) -> None:
    """422 naming each key an object repeats (see intake.duplicates for how that is kept cheap)."""
    errors = repeated_keys(body, type_)
    if errors:
        raise _bounded(InvalidBody, "an object names a key twice; each key may appear once per object", errors)


def _bounded(error: type[InputError], detail: str, errors: list[dict[str, str]]) -> InputError:
    truncated = len(errors) > MAX_ERRORS
    return error(detail + (f"; the first {MAX_ERRORS} errors are listed" if truncated else ""), errors[:MAX_ERRORS],
                 errors_truncated=truncated)


def _error(path: str, message: str) -> dict[str, str]:
    return {"path": path, "message": message}
