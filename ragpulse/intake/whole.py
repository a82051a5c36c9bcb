"""Whole floats for integer fields: `3.0` where the schema says integer is read as 3, as JSON Schema reads it.

JSON Schema (draft 6 on) counts 3.0 as an integer, and writers such as Python's `json` print a float that holds a
whole number as `3.0`; msgspec's strict decoder refuses it. Its lax mode would take it, but also `"3"` for 3 and `1`
for true, which the schema refuses. So on the error path only (a body the strict decoder refused), the value decoded
without a type is walked against the type and each whole float at an integer position (not in free-form `metadata`,
not where a float is also allowed) becomes an int; `3.5`, `"3"`, `true`, NaN and infinities stay as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from msgspec import inspect as mi

Walk = Callable[[Any], Any]


def whole_floats_as_ints(value: Any, type_: Any) -> Any:
    """`value` (JSON decoded without a type) with every whole float at an integer position of `type_` an int."""
    return _compile(mi.type_info(type_))(value)


def _same(value: Any) -> Any:
    return value


def _int(value: Any) -> Any:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _compile(info: mi.Type) -> Walk:
    match info:
        case mi.IntType():
            return _int
        case mi.Metadata():
            return _compile(info.type)
        case mi.StructType():
            return functools.partial(_struct, info.cls)   # by class, so a recursive struct compiles once
        case mi.ListType() | mi.SetType() | mi.FrozenSetType() | mi.VarTupleType():
            return functools.partial(_items, _compile(info.item_type))
        case mi.DictType():
            return functools.partial(_values, _compile(info.value_type))
        case mi.UnionType():
            return _union(info)
        case _:
            return _same


def _items(item: Walk, value: Any) -> Any:
    return [item(x) for x in value] if isinstance(value, list) else value


def _values(item: Walk, value: Any) -> Any:
    return {key: item(x) for key, x in value.items()} if isinstance(value, dict) else value


def _struct(cls: type, value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    fields = _fields(cls)
    return {key: fields[key](x) if key in fields else x for key, x in value.items()}


@functools.cache
def _fields(cls: type) -> dict[str, Walk]:
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    return {field.encode_name: _compile(field.type) for field in info.fields}


def _union(info: mi.UnionType) -> Walk:
    """A whole float is an int when the union takes an int and no float; an object or array goes to the member
    that takes its JSON kind (for tagged structs, the one its tag names)."""
    members = [m.type if isinstance(m, mi.Metadata) else m for m in info.types]
    whole = any(isinstance(m, mi.IntType) for m in members) and not any(isinstance(m, mi.FloatType) for m in members)
    objects = [m for m in members if isinstance(m, mi.StructType | mi.DictType)]
    arrays = [m for m in members if isinstance(m, mi.ListType | mi.SetType | mi.FrozenSetType | mi.VarTupleType)]
    by_tag = {m.tag: _compile(m) for m in objects if isinstance(m, mi.StructType) and m.tag_field}
    tag_field = next((m.tag_field for m in objects if isinstance(m, mi.StructType) and m.tag_field), None)
    walk_object = _compile(objects[0]) if len(objects) == 1 else None
    walk_array = _compile(arrays[0]) if len(arrays) == 1 else None

    def walk(value: Any) -> Any:
        if isinstance(value, float):
            return _int(value) if whole else value
        if isinstance(value, dict):
            tag = value.get(tag_field) if tag_field else None
            chosen = (by_tag.get(tag) if isinstance(tag, str | int) else None) if tag_field else walk_object
            return chosen(value) if chosen else value
        if isinstance(value, list) and walk_array:
            return walk_array(value)
        return value

    return walk
