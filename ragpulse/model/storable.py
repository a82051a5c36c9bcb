"""What msgpack, the stored form of traces and dataset items, can hold: integers of at most 64 bits.

msgspec decodes an integer of any size (into `int` and into free-form `Any` alike), so a value past this range decodes
fine and then fails the msgpack write with OverflowError. Every decoder checks against these bounds first.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

INT_MIN, INT_MAX = -(2**63), 2**64 - 1
"""The integers msgpack can hold."""
MAX_FREE_FORM_DEPTH = 64
"""The deepest nesting of arrays and objects accepted in free-form JSON (`metadata`)."""
OUT_OF_RANGE = f"integer out of range: msgpack stores {INT_MIN} .. {INT_MAX}"
TOO_DEEP = f"nested too deeply: at most {MAX_FREE_FORM_DEPTH} levels in metadata"

Trail = tuple[Any, ...]
"""A chain of keys, (parent chain, key), from the root of a value: a path that costs nothing until it is shown."""


def storable_int(value: int) -> bool:
    return INT_MIN <= value <= INT_MAX


def unstorable(value: Any, trail: Trail = (), depth: int = 1) -> Iterator[tuple[Trail, str]]:
    """Each place in free-form JSON `value` msgpack cannot store: (trail, reason) for an integer out of range, or for
    a container nested deeper than MAX_FREE_FORM_DEPTH (counting `value` itself as level `depth`).

    Walked without recursion; integers are checked where they sit and only containers are visited, so a body with a
    million values costs one pass and no string per node.
    """
    stack: list[tuple[Any, Trail, int]] = [(value, trail, depth)]
    while stack:
        node, trail, depth = stack.pop()
        if depth > MAX_FREE_FORM_DEPTH:
            yield trail, TOO_DEEP
            continue
        for key, item in node.items() if type(node) is dict else enumerate(node):
            kind = type(item)
            if kind is int and not INT_MIN <= item <= INT_MAX:   # bool is not `int` by type, and always in range
                yield (trail, key), OUT_OF_RANGE
            elif kind is dict or kind is list:
                stack.append((item, (trail, key), depth + 1))
