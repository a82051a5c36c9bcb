"""Turn a request body into a validated batch, reporting every failing path at once.

Odd input is a 4xx here, never a 500 further on: JSON with trailing bytes, or nested past the decoder's recursion
limit, is a 400; a number out of range (`1e999`), an object naming a key twice, an integer msgpack cannot store (in
any field, `metadata` of every kind included, intake.bounded) and `metadata` nested deeper than MAX_FREE_FORM_DEPTH
are a 422 naming the path. A dry run decodes exactly as a stored batch does, so the two agree on all of them.
"""

from __future__ import annotations

import uuid
from typing import Any, TypeVar

import msgspec

from ragpulse.config import defaults
from ragpulse.exceptions import InputError, InvalidBody, MalformedBody, TooLarge
from ragpulse.intake.bounded import unstorable_ints
from ragpulse.intake.duplicates import repeated_keys
from ragpulse.intake.validate import MAX_ERRORS, collect_errors, split_message
from ragpulse.intake.whole import whole_floats_as_ints
from ragpulse.model.dataset import BoundBatchRequest
from ragpulse.model.storable import INT_MAX, INT_MIN, MAX_FREE_FORM_DEPTH
from ragpulse.model.trace import BatchRequest, Trace, TracesPost

_batch_decoder = msgspec.json.Decoder(BatchRequest)
_bound_decoder = msgspec.json.Decoder(BoundBatchRequest)
_post_decoder = msgspec.json.Decoder(TracesPost)
_any_decoder = msgspec.json.Decoder()
T = TypeVar("T")


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
    _check_storable(decoded, type_)
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
    _check_storable(value, type_)
    return value


def _decode(body: bytes, decoder: msgspec.json.Decoder, type_: type[T], detail: str) -> T:
    try:
        value = decoder.decode(body)
    except msgspec.ValidationError as first:
        value = _decode_refused(body, type_, first, detail)
    except msgspec.DecodeError as exc:
        raise MalformedBody(f"body is not valid JSON: {exc}") from None
    except RecursionError:
        raise MalformedBody("body is nested too deeply to be read") from None
    return value


def _check_storable(value: Any, type_: Any) -> None:
    """422 naming each integer msgpack cannot store, and each `metadata` nested too deeply (intake.bounded): every
    decoder here calls it, so the dry run and the stored batch, a trace, a dataset item and a label agree."""
    errors = unstorable_ints(value, type_, MAX_ERRORS)
    if errors:
        raise _bounded(InvalidBody, f"integers must fit in 64 bits ({INT_MIN} .. {INT_MAX}) and metadata nest at "
                                    f"most {MAX_FREE_FORM_DEPTH} levels", errors)


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
    """422 when a trace_id repeats within the batch, or a trace names a dataset item outside a batch bound to a dataset
    (or, inside one, names neither item nor query)."""
    items = _check_items(traces, bound)
    if items:
        raise _bounded(InvalidBody, "item_id names an item of the batch's `dataset`; a trace without one needs its "
                                    "query", items)
    seen: dict[str, int] = {}
    repeated: list[dict[str, str]] = []
    for index, trace in enumerate(traces):
        if trace.trace_id is None:
            continue
        if trace.trace_id in seen:
            repeated.append(_error(f"$.traces[{index}].trace_id",
                                   f"duplicate trace_id {trace.trace_id!r}, first used at $.traces[{seen[trace.trace_id]}]"))
        else:
            seen[trace.trace_id] = index
    if repeated:
        raise _bounded(InvalidBody, "trace_id must be unique within a batch", repeated)


def _check_items(traces: list[Trace], bound: bool) -> list[dict[str, str]]:
    """In a bound batch, traces with neither query nor item_id; elsewhere, traces naming an item_id."""
    if bound:
        return [_error(f"$.traces[{i}].query", "required: the trace names no item_id to take it from")
                for i, trace in enumerate(traces) if not trace.query and trace.item_id is None]
    return [_error(f"$.traces[{i}].item_id", "names a dataset item, but the batch names no `dataset` (only a batch "
                                             "bound to a dataset takes item_id)")
            for i, trace in enumerate(traces) if trace.item_id is not None]


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
