"""Timestamps as the store writes them."""

from __future__ import annotations

import datetime
import time

_second: tuple[int, str] = (0, "1970-01-01T00:00:00")
"""The last whole second formatted, and its text (one tuple, swapped whole, so threads never mix two): the online
ingest path stamps every post, and formatting a datetime costs three times more than reusing the second's text."""


def utcnow() -> str:
    """Current UTC time in RFC 3339 with milliseconds (`2026-11-30T17:01:02.345Z`), as every timestamp ragpulse
    stores."""
    global _second  # noqa: PLW0603 - a one-entry memo
    now = time.time()
    second, text = cached = _second
    if second != int(now):
        second = int(now)
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        if cached is _second:
            _second = (second, text)
    return f"{text}.{int((now - second) * 1000):03d}Z"


def utcday() -> str:
    """Current UTC day, YYYYMMDD, the unit of tenant budgets."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%d")
