"""When a security check must stop: a per-trace time budget the checks' loops read cooperatively.

A check runs in a worker thread so that it cannot stall the event loop, and a thread cannot be killed: the check
itself asks its deadline once per match (the clock is read every CLOCK_EVERY asks) and, once it has passed, returns
what it found so far with `timed_out` set. The caller records the check as skipped for its time budget, never as
passed.
"""

from __future__ import annotations

import time
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")

CLOCK_EVERY = 64
"""Asks between two reads of the clock: a read costs about as much as examining one candidate, so the check spends
under 2% on the clock and overruns its budget by at most 64 candidates' work (well under a millisecond)."""


class Deadline:
    """A point in monotonic time past which a check stops (never, without `seconds`)."""

    __slots__ = ("at", "asks", "expired")

    def __init__(self, seconds: float | None = None) -> None:
        self.at = None if seconds is None else time.monotonic() + seconds
        self.asks = 0
        self.expired = False

    def passed(self) -> bool:
        """True once the deadline has passed (checked against the clock every CLOCK_EVERY calls)."""
        if self.at is None or self.expired:
            return self.expired
        self.asks += 1
        if self.asks >= CLOCK_EVERY:
            self.asks = 0
            self.expired = time.monotonic() > self.at
        return self.expired

    def passed_now(self) -> bool:
        """True once the deadline has passed, reading the clock now (between documents, between checks)."""
        if self.at is not None and not self.expired:
            self.expired = time.monotonic() > self.at
        return self.expired


NEVER = Deadline()
"""The deadline of a check with no budget (it keeps no state: `passed` is always False)."""


class Scan(NamedTuple, Generic[T]):
    """What a check found, and whether it stopped at its deadline before it had looked at everything."""

    found: T
    timed_out: bool
