"""Every failing path of a JSON value against a msgspec type, not only the first one msgspec stops at.

msgspec raises on the first error of a decode. To list them all, the type is compiled once from msgspec's own type
info (`msgspec.inspect`) into a tree of checkers that walk the value: objects report each unknown field, each missing
required field and then descend into each present field; arrays and maps check their length and descend into each
item. Every check is `msgspec.convert` against the type rebuilt from the same type info, so the constraints and
the messages are msgspec's and follow the structs when fields are added. A node that converts cleanly is not
descended into, so valid parts of a large body cost one conversion each.

Only the error path uses this: callers decode with msgspec first.
"""

from __future__ import annotations

import datetime
import decimal
import functools
import re
import typing
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta
from msgspec import inspect as mi

MAX_ERRORS = 100
"""At most this many errors are reported for one body; `ErrorList.truncated` says when more were cut."""

_AT = re.compile(r"^(?P<message>.*) - at `(?:key` in `)?(?P<path>\$[^`]*)`$", re.S)


@dataclass
class ErrorList:
    """The errors found so far, each `{"path", "message"}`, at most `limit`; duplicates are kept once."""

    limit: int = MAX_ERRORS
    errors: list[dict[str, str]] = field(default_factory=list)
    truncated: bool = False
    _seen: set[tuple[str, str]] = field(default_factory=set)

    def add(self, path: str, message: str) -> None:
        if (path, message) in self._seen:
            return
        if len(self.errors) >= self.limit:
            self.truncated = True
            raise _Full
        self._seen.add((path, message))
        self.errors.append({"path": path, "message": message})

    def add_exception(self, prefix: str, exc: msgspec.ValidationError) -> None:
        """Add msgspec's error, its `$`-relative path rebased under `prefix`."""
        path, message = split_message(str(exc))
        self.add(prefix + path[1:], message)


class _Full(Exception):
    """The error list reached its limit: stop walking."""


def split_message(text: str) -> tuple[str, str]:
    """msgspec's "message - at `$.path`" as ("$.path", "message"); "$" when it names no path."""
    match = _AT.match(text)
    return (match["path"], match["message"]) if match else ("$", text)


def collect_errors(value: Any, type_: Any, limit: int = MAX_ERRORS) -> ErrorList:
    """Every failing path of `value` (JSON decoded without a type) against `type_`, up to `limit` of them."""
    found = ErrorList(limit)
    try:
        _checker(type_).check(value, "$", found)
    except _Full:
        pass
    return found


@functools.cache
def _checker(type_: Any) -> _Node:
    return _compile(mi.type_info(type_), {})


class _Node:
    """Checks one value against one type; `annotation` is the type msgspec.convert validates against."""

    annotation: Any

    def check(self, value: Any, path: str, found: ErrorList) -> None:
        try:
            msgspec.convert(value, self.annotation)
        except msgspec.ValidationError as exc:
            self.descend(value, path, found, exc)

    def descend(self, value: Any, path: str, found: ErrorList, exc: msgspec.ValidationError) -> None:
        """Report the failure of `value`; composite nodes look inside it for every failing part."""
        found.add_exception(path, exc)


class _Leaf(_Node):
    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation


class _Object(_Node):
    """A struct: unknown fields, missing required fields, then each present field."""

    def __init__(self, info: mi.StructType) -> None:
        self.annotation = info.cls
        self.info = info
        self.fields: dict[str, tuple[bool, _Node]] = {}
        self.known = {f.encode_name for f in info.fields} | ({info.tag_field} if info.tag_field else set())

    def descend(self, value: Any, path: str, found: ErrorList, exc: msgspec.ValidationError) -> None:
        if not isinstance(value, dict) or self.info.array_like:
            return found.add_exception(path, exc)
        before = len(found.errors)
        if self.info.forbid_unknown_fields:
            for name in value:
                if name not in self.known:
                    found.add(path, f"Object contains unknown field `{name}`")
        for name, (required, node) in self.fields.items():
            if name in value:
                node.check(value[name], f"{path}.{name}", found)
            elif required:
                found.add(path, f"Object missing required field `{name}`")
        if len(found.errors) == before:
            found.add_exception(path, exc)   # every field is valid alone: a cross-field check (__post_init__)


class _Array(_Node):
    """A list, set or variable-length tuple: its length, then each item."""

    def __init__(self, annotation: Any, shape: Any, item: _Node) -> None:
        self.annotation, self.shape, self.item = annotation, shape, item

    def descend(self, value: Any, path: str, found: ErrorList, exc: msgspec.ValidationError) -> None:
        if not isinstance(value, list):
            return found.add_exception(path, exc)
        _check_shape(value, self.shape, path, found)
        for index, item in enumerate(value):
            self.item.check(item, f"{path}[{index}]", found)


class _Map(_Node):
    """A dict: its size, then each key and each value (values at msgspec's `[...]` path)."""

    def __init__(self, annotation: Any, shape: Any, key: _Node, item: _Node) -> None:
        self.annotation, self.shape, self.key, self.item = annotation, shape, key, item

    def descend(self, value: Any, path: str, found: ErrorList, exc: msgspec.ValidationError) -> None:
        if not isinstance(value, dict):
            return found.add_exception(path, exc)
        _check_shape(value, self.shape, path, found)
        for key, item in value.items():
            try:
                msgspec.convert(key, self.key.annotation)
            except msgspec.ValidationError as key_exc:
                found.add(path, f"Invalid key {key!r}: {split_message(str(key_exc))[1]}")
            self.item.check(item, f"{path}[...]", found)


class _Union(_Node):
    """A union: descend into the one member that takes this JSON kind (object or array), else msgspec's error."""

    def __init__(self, annotation: Any, members: list[_Node]) -> None:
        self.annotation, self.members = annotation, members

    def descend(self, value: Any, path: str, found: ErrorList, exc: msgspec.ValidationError) -> None:
        kind = _Object if isinstance(value, dict) else _Array if isinstance(value, list) else None
        takers = [m for m in self.members
                  if kind is not None and (isinstance(m, kind) or (kind is _Object and isinstance(m, _Map)))]
        tagged = [m for m in takers if isinstance(m, _Object) and m.info.tag_field]
        if len(takers) > 1 and tagged and isinstance(value, dict):
            takers = [m for m in tagged if value.get(m.info.tag_field) == m.info.tag]
        if len(takers) == 1:
            return takers[0].check(value, path, found)
        found.add_exception(path, exc)


def _check_shape(value: Any, shape: Any, path: str, found: ErrorList) -> None:
    if shape is None:
        return
    try:
        msgspec.convert(value, shape)
    except msgspec.ValidationError as exc:
        found.add_exception(path, exc)


_SCALARS: dict[type[mi.Type], Any] = {
    mi.AnyType: Any, mi.NoneType: None, mi.BoolType: bool, mi.IntType: int, mi.FloatType: float, mi.StrType: str,
    mi.BytesType: bytes, mi.ByteArrayType: bytearray, mi.MemoryViewType: memoryview,
    mi.DateTimeType: datetime.datetime, mi.DateType: datetime.date, mi.TimeType: datetime.time,
    mi.TimeDeltaType: datetime.timedelta, mi.UUIDType: uuid.UUID, mi.DecimalType: decimal.Decimal,
}
_CONSTRAINTS = ("gt", "ge", "lt", "le", "multiple_of", "pattern", "min_length", "max_length", "tz")
_ARRAYS: dict[type[mi.Type], Any] = {mi.ListType: list, mi.SetType: set, mi.FrozenSetType: frozenset}


def _meta(info: mi.Type, base: Any) -> Any:
    """`base` annotated with the constraints msgspec.inspect reports on `info`."""
    constraints = _constraints(info)
    return Annotated[base, Meta(**constraints)] if constraints else base


def _shape(info: mi.Type, base: Any) -> Any:
    """The length constraints of a container on items of any type, or None when it has none."""
    return _meta(info, base) if _constraints(info) else None


def _constraints(info: mi.Type) -> dict[str, Any]:
    return {name: getattr(info, name) for name in _CONSTRAINTS if getattr(info, name, None) is not None}


def _compile(info: mi.Type, memo: dict[int, _Node]) -> _Node:
    """The checker of one msgspec.inspect type; `memo` ties recursive structs into a cycle."""
    if isinstance(info, mi.Metadata):
        return _compile(info.type, memo)
    if type(info) in _SCALARS:
        return _Leaf(_meta(info, _SCALARS[type(info)]))
    if isinstance(info, mi.LiteralType):
        return _Leaf(Literal[info.values])
    if isinstance(info, mi.StructType):
        if id(info.cls) not in memo:
            node = memo[id(info.cls)] = _Object(info)
            node.fields = {f.encode_name: (f.required, _compile(f.type, memo)) for f in info.fields}
        return memo[id(info.cls)]
    if type(info) in _ARRAYS or isinstance(info, mi.VarTupleType):
        item = _compile(info.item_type, memo)
        container = _ARRAYS.get(type(info))
        if container is None:
            annotation, shape = tuple[item.annotation, ...], tuple[Any, ...]
        else:
            annotation, shape = container[item.annotation], container[Any]
        return _Array(_meta(info, annotation), _shape(info, shape), item)
    if isinstance(info, mi.DictType):
        key, item = _compile(info.key_type, memo), _compile(info.value_type, memo)
        return _Map(_meta(info, dict[key.annotation, item.annotation]), _shape(info, dict[Any, Any]), key, item)
    if isinstance(info, mi.UnionType):
        members = [_compile(member, memo) for member in info.types]
        return _Union(typing.Union[tuple(m.annotation for m in members)], members)
    if hasattr(info, "cls"):   # enums, typed dicts, dataclasses, named tuples, custom types: checked as a whole
        return _Leaf(info.cls)
    if isinstance(info, mi.TupleType):
        return _Leaf(tuple[tuple(_compile(t, memo).annotation for t in info.item_types)])
    return _Leaf(Any)   # a type this walker does not know: the caller keeps msgspec's own first error
