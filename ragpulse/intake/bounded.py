"""Integers bounded wherever they enter: each place of a decoded body where msgspec takes an integer msgpack cannot
hold.

msgspec's `int` without bounds, and free-form `Any` (`metadata`), take an integer of any size; the stored form holds
64 bits (model.storable), so a larger one decoded fine and failed the write with a 500. Every decoder of intake.decode
runs this on what it decoded, so a dry run and a stored batch, a trace, a dataset item and a label agree. The type is
compiled once (`msgspec.inspect`) into a walk over only the fields, items and values where such an integer can sit:
parts that cannot hold one (a bounded `int`, a string) are never visited, and a trace without metadata costs a few
attribute reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from msgspec import inspect as mi

from ragpulse.intake.duplicates import step
from ragpulse.model.storable import INT_MAX, INT_MIN, OUT_OF_RANGE, Trail, unstorable

Walk = Callable[[Any, Trail, "_Found"], None]


def unstorable_ints(value: Any, type_: Any, limit: int) -> list[dict[str, str]]:
    """`{"path", "message"}` for each integer (or free-form nesting) in `value`, decoded as `type_`, that cannot be
    stored; at most `limit` + 1 of them (one past the limit tells the caller the list was cut), in the order met."""
    walk = _compile_type(type_)
    found = _Found(limit + 1)
    if walk is not None:
        try:
            walk(value, (), found)
        except _Full:
            pass
    return [{"path": _joined(trail), "message": message} for trail, message in found]


class _Full(Exception):
    """Enough errors were found: stop walking."""


class _Found(list[tuple[Trail, str]]):
    """The places found so far; adding the `limit`-th stops the walk."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def add(self, place: tuple[Trail, str]) -> None:
        self.append(place)
        if len(self) >= self.limit:
            raise _Full


def _joined(trail: Trail) -> str:
    keys: list[Any] = []
    while trail:
        trail, key = trail
        keys.append(key)
    return "$" + "".join(step(key) for key in reversed(keys))


@functools.cache
def _compile_type(type_: Any) -> Walk | None:
    return _compile(mi.type_info(type_))


def _compile(info: mi.Type) -> Walk | None:
    """The walk of one type, or None when no unstorable integer can sit in its values."""
    match info:
        case mi.Metadata():
            return _compile(info.type)
        case mi.IntType():
            low = info.ge if info.ge is not None else None if info.gt is None else info.gt + 1
            high = info.le if info.le is not None else None if info.lt is None else info.lt - 1
            bounded = low is not None and high is not None and INT_MIN <= low and high <= INT_MAX
            return None if bounded else _int
        case mi.AnyType():
            return _free_form
        case mi.StructType():
            return _struct(info.cls)
        case mi.ListType() | mi.DictType() if _free(info):
            return _free_form   # as a whole, so that its own level counts toward the nesting depth
        case mi.ListType() | mi.SetType() | mi.FrozenSetType() | mi.VarTupleType():
            item = _compile(info.item_type)
            return None if item is None else functools.partial(_items, item)
        case mi.DictType():
            key, item = _compile(info.key_type), _compile(info.value_type)
            return None if key is None and item is None else functools.partial(_values, key, item)
        case mi.UnionType():
            return _union(info)
        case _:
            return None


def _free(info: mi.ListType | mi.DictType) -> bool:
    """True for free-form JSON: a list of anything, or an object of string keys to anything (`metadata`)."""
    item = info.item_type if isinstance(info, mi.ListType) else info.value_type
    keyed = isinstance(info, mi.ListType) or isinstance(info.key_type, mi.StrType)
    return keyed and isinstance(item.type if isinstance(item, mi.Metadata) else item, mi.AnyType)


def _int(value: Any, trail: Trail, found: _Found) -> None:
    if type(value) is int and not INT_MIN <= value <= INT_MAX:
        found.add((trail, OUT_OF_RANGE))


def _free_form(value: Any, trail: Trail, found: _Found) -> None:
    kind = type(value)
    if kind is dict or kind is list:
        for place in unstorable(value, trail):
            found.add(place)
    else:
        _int(value, trail, found)


def _items(item: Walk, value: Any, trail: Trail, found: _Found) -> None:
    for index, x in enumerate(value):
        item(x, (trail, index), found)


def _values(key: Walk | None, item: Walk | None, value: Any, trail: Trail, found: _Found) -> None:
    for k, x in value.items():
        if key is not None:
            key(k, trail, found)
        if item is not None:
            item(x, (trail, k), found)


def _struct(cls: type) -> Walk | None:
    """A struct's walk, built on first use so that a struct holding itself compiles once."""
    fields = _fields(cls)
    if fields is None:
        return None

    def walk(value: Any, trail: Trail, found: _Found) -> None:
        for name, encoded, field_walk in _fields(cls) or ():
            x = getattr(value, name)
            if x is not None:
                field_walk(x, (trail, encoded), found)

    return walk


_COMPILING: set[type] = set()


@functools.cache
def _fields(cls: type) -> tuple[tuple[str, str, Walk], ...] | None:
    """(attribute, JSON name, walk) of each field that can hold an unstorable integer; None when none can."""
    if cls in _COMPILING:   # a struct within itself: assume it can, and let the outer compile decide its fields
        return ()
    _COMPILING.add(cls)
    try:
        info = mi.type_info(cls)
        assert isinstance(info, mi.StructType)
        walks = [(f.name, f.encode_name, _compile(f.type)) for f in info.fields]
    finally:
        _COMPILING.discard(cls)
    kept = tuple((name, encoded, walk) for name, encoded, walk in walks if walk is not None)
    return kept or None


def _union(info: mi.UnionType) -> Walk | None:
    """A union's walk: each value goes to the one member that takes its Python type."""
    members = [(m.type if isinstance(m, mi.Metadata) else m) for m in info.types]
    walks: list[tuple[tuple[type, ...], Walk]] = []
    for member in members:
        walk = _compile(member)
        if walk is not None:
            walks.append((_python_types(member), walk))
    if not walks:
        return None

    def walk_union(value: Any, trail: Trail, found: _Found) -> None:
        for types, walk in walks:
            if not types or type(value) in types:
                return walk(value, trail, found)

    return walk_union


def _python_types(info: mi.Type) -> tuple[type, ...]:
    """The Python types a decoded value of `info` has (empty: any)."""
    match info:
        case mi.IntType():
            return (int,)
        case mi.StructType():
            return (info.cls,)
        case mi.ListType():
            return (list,)
        case mi.SetType():
            return (set,)
        case mi.FrozenSetType():
            return (frozenset,)
        case mi.VarTupleType():
            return (tuple,)
        case mi.DictType():
            return (dict,)
        case _:
            return ()
