"""Timestamps as the store writes them."""

from __future__ import annotations

import datetime


def utcnow() -> str:
    """Current UTC time in RFC 3339, as every timestamp ragpulse stores."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utcday() -> str:
    """Current UTC day, YYYYMMDD, the unit of tenant budgets."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y%m%d")
