"""The shipped suite, read from package data: every item, or those of one split, optionally the first few."""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

import msgspec

from ragpulse.qualification.model import SplitChoice, SuiteItem

SUITE_FILE = "suite/items.jsonl"
"""The suite inside the package (pyproject's package-data ships it)."""

_decode = msgspec.json.Decoder(SuiteItem).decode


@cache
def _raw() -> bytes:
    return resources.files("ragpulse.qualification").joinpath(SUITE_FILE).read_bytes()


def suite_version() -> str:
    """A short hash of the suite file: results say which suite they were measured on."""
    return hashlib.sha256(_raw()).hexdigest()[:12]


@cache
def all_items() -> tuple[SuiteItem, ...]:
    """Every item of the suite, in file order."""
    return tuple(_decode(line) for line in _raw().splitlines() if line.strip())


def select(split: SplitChoice = "all", limit: int | None = None) -> list[SuiteItem]:
    """The items of `split` (`all`: both), the first `limit` of them when given.

    A limit takes items spread over the whole file (every k-th), not its head: the file is ordered by class, and the
    first 20 items would all be one class."""
    items = [item for item in all_items() if split == "all" or item.split == split]
    if limit is None or limit >= len(items):
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]
