"""The SDK's background thread: takes batches from the queue and posts them to POST /v1/traces."""

from __future__ import annotations

import logging
import re

from ragpulse.exceptions import RagpulseSDKError
from ragpulse.sdk.queue import Item, TraceQueue
from ragpulse.sdk.stats import TOO_LARGE, Counters
from ragpulse.sdk.transport import Transport, problem

log = logging.getLogger("ragpulse.sdk")

REJECTING = frozenset({400, 422})
"""Statuses that mean the traces themselves are bad: sending them again cannot help."""

PAYLOAD_TOO_LARGE = 413
"""The post is over the service's body limit: its halves are sent instead, down to single traces."""

_TRACE_INDEX = re.compile(r"^\$\.traces\[(\d+)\]")


class Sender:
    """Runs in a daemon thread; holds no reference to the client, so an unused client can be garbage-collected."""

    def __init__(self, queue: TraceQueue, transport: Transport, counters: Counters, interval: float) -> None:
        self.queue = queue
        self.transport = transport
        self.counters = counters
        self.interval = interval

    def run(self) -> None:
        """Post batches until the queue is closed and empty; every batch taken is settled, whatever happens."""
        while (batch := self.queue.take(self.interval)) is not None:
            if not batch:
                continue
            try:
                self._deliver(batch, resend_rest=True)
            except Exception:  # a bug here must not kill the thread and leave flush() waiting forever
                log.exception("ragpulse SDK: sending %d traces failed unexpectedly", len(batch))
                self._give_up(batch, "unexpected error")
            finally:
                self.queue.settle()
        self.transport.close()

    def _deliver(self, batch: list[Item], resend_rest: bool) -> None:
        """Post `batch` (retried by the transport) and count the outcome; with `resend_rest`, a 422 naming some traces
        sends the others once more."""
        if self.transport.abort.is_set():
            return self._give_up(batch, "the client was closed before they were sent")
        body = '{"traces":[' + ",".join(item.json for item in batch) + "]}"
        try:
            response = self.transport.send("POST", "/v1/traces", content=body.encode(),
                                           headers={"content-type": "application/json"},
                                           on_retry=self.counters.retried)
        except RagpulseSDKError as exc:
            return self._give_up(batch, str(exc))
        if response.status_code < 300:
            return self.counters.settle("sent", len(batch))
        error = problem(response)
        if response.status_code == PAYLOAD_TOO_LARGE:
            return self._halve(batch, error)
        if response.status_code not in REJECTING:
            return self._give_up(batch, str(error))
        self._rejected(batch, error, resend_rest)

    def _halve(self, batch: list[Item], error: RagpulseSDKError) -> None:
        """Send each half of a post refused as too large (each a post of its own, with its own key); a single trace
        refused alone can never be sent: it is dropped, with the service's reason."""
        if len(batch) > 1:
            middle = len(batch) // 2
            self._deliver(batch[:middle], resend_rest=True)
            return self._deliver(batch[middle:], resend_rest=True)
        log.warning("ragpulse SDK: trace %s dropped: the service refuses it as too large even alone (%d bytes of "
                    "JSON): %s", batch[0].trace_id, len(batch[0].json), error)
        self.counters.drop(TOO_LARGE, inflight=True)

    def _rejected(self, batch: list[Item], error: RagpulseSDKError, resend_rest: bool) -> None:
        """Count the traces the errors name as rejected; when every error names a trace, send the others once more."""
        bad = bad_indices(error.errors, len(batch)) if resend_rest else None
        keep = [item for index, item in enumerate(batch) if bad is not None and index not in bad]
        refused = [item for index, item in enumerate(batch) if bad is None or index in bad]
        paths = "; ".join(f"{e.get('path')}: {e.get('message')}" for e in error.errors[:5])
        log.warning("ragpulse SDK: %d traces rejected (%s) %s, e.g. trace ids %s", len(refused), error,
                    paths, [item.trace_id for item in refused[:5]])
        self.counters.settle("rejected", len(refused))
        if keep:
            self._deliver(keep, resend_rest=False)

    def _give_up(self, batch: list[Item], reason: str) -> None:
        log.warning("ragpulse SDK: gave up on %d traces: %s", len(batch), reason)
        self.counters.settle("failed", len(batch))


def bad_indices(errors: list[dict], size: int) -> set[int] | None:
    """Indices of the traces a 422's errors name (`$.traces[3].query`); None when an error names no single trace.

    (A truncated list names only some: the others fail again on the one resend, and are rejected then.)"""
    found = set()
    for error in errors:
        match = _TRACE_INDEX.match(str(error.get("path", "")))
        if not match or int(match[1]) >= size:
            return None
        found.add(int(match[1]))
    return found or None
