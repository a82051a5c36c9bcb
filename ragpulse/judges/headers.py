"""Reading the provider's rate-limit headers: `retry-after`, `anthropic-ratelimit-*` and OpenAI's `x-ratelimit-*`."""

from __future__ import annotations

import datetime
import email.utils
import re
from collections.abc import Mapping

RATELIMIT_KINDS = ("requests", "tokens", "input-tokens", "output-tokens")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_HINT_SECONDS = 120.0
"""Longest pause we accept from a header; a larger value is treated as a provider glitch and capped."""


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date), or None."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return min(float(ms) / 1000, MAX_HINT_SECONDS)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return min(max(float(value), 0.0), MAX_HINT_SECONDS)
    except ValueError:
        moment = email.utils.parsedate_to_datetime(value)
        if moment is None:
            return None
        delta = (moment - datetime.datetime.now(datetime.UTC)).total_seconds()
        return min(max(delta, 0.0), MAX_HINT_SECONDS)


def pause_from_headers(headers: Mapping[str, str]) -> float | None:
    """Seconds until the provider's exhausted limit resets, when a `*-remaining` header reached 0."""
    waits = []
    for kind in RATELIMIT_KINDS:
        remaining = headers.get(f"anthropic-ratelimit-{kind}-remaining")
        reset = headers.get(f"anthropic-ratelimit-{kind}-reset")
        if remaining is None or reset is None or remaining.strip() != "0":
            continue
        try:
            moment = datetime.datetime.fromisoformat(reset.replace("Z", "+00:00"))
        except ValueError:
            continue
        waits.append((moment - datetime.datetime.now(datetime.UTC)).total_seconds())
    positive = [w for w in waits if w > 0]
    return min(max(positive), MAX_HINT_SECONDS) if positive else None


def openai_pause_from_headers(headers: Mapping[str, str]) -> float | None:
    """Seconds until an exhausted OpenAI-style limit resets: `x-ratelimit-remaining-{requests,tokens}` at 0 and
    `x-ratelimit-reset-*` as a Go duration (`6m0s`, `1.5s`, `20ms`). Servers that send neither give None."""
    waits = []
    for kind in ("requests", "tokens"):
        remaining = headers.get(f"x-ratelimit-remaining-{kind}")
        reset = headers.get(f"x-ratelimit-reset-{kind}")
        if remaining is None or reset is None or remaining.strip() != "0":
            continue
        parts = _DURATION_PART.findall(reset)
        waits.append(sum(float(n) * _UNIT_SECONDS[unit] for n, unit in parts))
    positive = [w for w in waits if w > 0]
    return min(max(positive), MAX_HINT_SECONDS) if positive else None
