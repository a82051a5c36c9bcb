"""What the SDK did with the traces it was given: counters the sender updates and a snapshot for the caller."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field


QUEUE_FULL = "queue_full"
"""A drop reason: pushed out of a queue holding `max_queue` traces or `max_queue_bytes` (the oldest go first)."""
LARGER_THAN_QUEUE = "larger_than_queue"
"""A drop reason: one trace larger than `max_queue_bytes` on its own; it never entered the queue."""
TOO_LARGE = "too_large"
"""A drop reason: refused by the service as too large (413) even when posted alone."""
AFTER_CLOSE = "after_close"
"""A drop reason: logged after close()."""


@dataclass(frozen=True, slots=True)
class Stats:
    """A snapshot of `RagpulseClient.stats()`; every trace logged ends in exactly one of the first five."""

    queued: int
    """Waiting in the queue or in the batch being sent."""
    sent: int
    """Accepted by the service (202)."""
    dropped: int
    """Never sent, by the SDK's own decision: `dropped_by` gives the reasons."""
    rejected: int
    """Refused by the service as invalid (400, 422): never retried."""
    failed: int
    """Given up: retries ran out, another error status (401, 403, ...), or close timed out before sending."""
    retries: int
    """Posts sent again after a 429, a 5xx or a connection error."""
    dropped_by: dict[str, int] = field(default_factory=dict)
    """`dropped` by reason: queue_full, larger_than_queue, too_large, after_close (only reasons that happened)."""


class Counters:
    """The running totals, under a lock so that `stats()` can read them from any thread.

    Traces taken by the sender count as in flight until it settles them; once close() gave up on them (`abandon`),
    they count as failed and the sender's later word on them is ignored, so that no trace is counted twice."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = self.rejected = self.failed = self.retries = self.inflight = 0
        self._dropped: Counter[str] = Counter()
        self._abandoned = False

    def taken(self, count: int) -> None:
        """The sender took `count` traces from the queue (called under the queue's lock, so none is ever unseen)."""
        with self._lock:
            self.inflight += count

    def settle(self, outcome: str, count: int) -> None:
        """Move `count` traces in flight to `outcome`: sent, rejected or failed."""
        with self._lock:
            if not self._abandoned:
                setattr(self, outcome, getattr(self, outcome) + count)
                self.inflight -= count

    def retried(self) -> None:
        with self._lock:
            self.retries += 1

    def drop(self, reason: str, count: int = 1, *, inflight: bool = False) -> None:
        """Count traces dropped for `reason` (one of this module's drop reasons), taken from the batch in flight
        when `inflight` (else they were in the queue, or never entered it)."""
        with self._lock:
            if inflight and self._abandoned:
                return
            self._dropped[reason] += count
            self.inflight -= count if inflight else 0

    def abandon(self, queued: int) -> int:
        """close() gives up: `queued` traces taken out of the queue and those in flight count as failed; returns
        how many."""
        with self._lock:
            given_up, self.inflight, self._abandoned = queued + self.inflight, 0, True
            self.failed += given_up
            return given_up

    @property
    def dropped(self) -> int:
        with self._lock:
            return self._dropped.total()

    def snapshot(self, waiting: int) -> Stats:
        with self._lock:
            return Stats(queued=waiting + self.inflight, sent=self.sent, dropped=self._dropped.total(),
                         rejected=self.rejected, failed=self.failed, retries=self.retries,
                         dropped_by=dict(self._dropped))
