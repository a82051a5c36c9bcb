"""What the SDK did with the traces it was given: counters the sender updates and a snapshot for the caller."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Stats:
    """A snapshot of `RagpulseClient.stats()`; every trace logged ends in exactly one of the last five."""

    queued: int
    """Waiting in the queue or in the batch being sent."""
    sent: int
    """Accepted by the service (202)."""
    dropped: int
    """Pushed out of a full queue (the oldest go first), or logged after close."""
    rejected: int
    """Refused by the service as invalid (400, 413, 422): never retried."""
    failed: int
    """Given up: retries ran out, another error status (401, 403, ...), or close timed out before sending."""
    retries: int
    """Posts sent again after a 429, a 5xx or a connection error."""


class Counters:
    """The sender's running totals, under a lock so that `stats()` can read them from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.sent = self.rejected = self.failed = self.retries = self.inflight = 0

    def add(self, **deltas: int) -> None:
        """Add to the named counters at once, e.g. `add(sent=100, inflight=-100)`."""
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def snapshot(self, waiting: int, dropped: int) -> Stats:
        with self._lock:
            return Stats(queued=waiting + self.inflight, sent=self.sent, dropped=dropped, rejected=self.rejected,
                         failed=self.failed, retries=self.retries)
