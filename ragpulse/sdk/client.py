"""`RagpulseClient`: log production traces without waiting on the network, and call the job helpers."""

from __future__ import annotations

import atexit
import functools
import json
import logging
import threading
import uuid
import weakref
from typing import Any

from ragpulse.sdk.helpers import Helpers
from ragpulse.sdk.queue import TraceQueue
from ragpulse.sdk.sender import Sender
from ragpulse.sdk.stats import AFTER_CLOSE, LARGER_THAN_QUEUE, Counters, Stats
from ragpulse.sdk.transport import Backoff, Transport

log = logging.getLogger("ragpulse.sdk")

MAX_PER_POST = 1000
"""The service's limit on traces per POST /v1/traces."""

MAX_QUEUE_BYTES = 64 * 1024 * 1024
"""The default bound on the queued traces' JSON bytes: with `max_queue`, what the SDK may hold in memory."""

_WHY = {AFTER_CLOSE: "logged after close()",
        LARGER_THAN_QUEUE: "its JSON is {size} bytes, more than max_queue_bytes ({limit})"}
"""What the warning says when `log_trace` drops the trace it was given, by drop reason."""


class RagpulseClient(Helpers):
    """Queues traces in memory and posts them in batches from a daemon thread; see the README's "Python SDK"."""

    def __init__(self, url: str, api_key: str | None = None, *, batch_size: int = 100,
                 flush_interval_ms: int = 1000, max_queue: int = 10_000, max_queue_bytes: int = MAX_QUEUE_BYTES,
                 timeout: float = 10.0, max_retries: int = 5, backoff_base: float = 0.25, backoff_cap: float = 30.0,
                 close_timeout: float = 5.0) -> None:
        if not 1 <= batch_size <= MAX_PER_POST or min(max_queue, max_queue_bytes) < 1 or flush_interval_ms < 0:
            raise ValueError(f"need 1 <= batch_size <= {MAX_PER_POST}, max_queue >= 1, max_queue_bytes >= 1, "
                             "flush_interval_ms >= 0")
        self._abort = threading.Event()
        backoff = Backoff(max_retries, backoff_base, backoff_cap)
        self._api = Transport(url, api_key, timeout, backoff, self._abort)
        self._counters = Counters()
        self._queue = TraceQueue(max_queue, max_queue_bytes, batch_size, self._counters)
        sender = Sender(self._queue, Transport(url, api_key, timeout, backoff, self._abort), self._counters,
                        flush_interval_ms / 1000)
        self._thread = threading.Thread(target=sender.run, name="ragpulse-sdk-sender", daemon=True)
        self._thread.start()
        self._closed = False
        self._warned: set[str] = set()
        # Neither hook holds the client: collected, it closes its queue (the thread sends what is left, then exits);
        # at interpreter exit, close() waits up to close_timeout for delivery.
        weakref.finalize(self, self._queue.close)
        self._at_exit = functools.partial(_close_if_alive, weakref.ref(self), close_timeout)
        atexit.register(self._at_exit)

    def log_trace(self, trace: dict[str, Any] | None = None, /, **fields: Any) -> str:
        """Queue one trace (a dict, keyword fields, or both: fields win) and return its trace_id (made when absent).

        Costs one JSON encoding and a deque append: it never waits on the network and never raises for the service's
        sake; a full queue (`max_queue` traces or `max_queue_bytes`) drops its oldest traces. A caller's bug raises
        at once: TypeError for a trace that is not a dict or holds a value JSON cannot encode, ValueError for NaN or
        infinity. The trace is copied: changing the dict afterwards changes nothing sent."""
        if trace is not None and not isinstance(trace, dict):
            raise TypeError(f"a trace is a dict, got {type(trace).__name__}")
        record = {**(trace or {}), **fields}
        if record.get("trace_id") is None:
            record["trace_id"] = uuid.uuid4().hex
        text = json.dumps(record, allow_nan=False, separators=(",", ":"))
        refused = self._queue.put(str(record["trace_id"]), text)
        if refused and refused not in self._warned:  # counted as dropped, never raised; said once per reason
            self._warned.add(refused)
            log.warning("ragpulse SDK: trace %s dropped: %s (later ones are only counted in stats().dropped_by)",
                        record["trace_id"], _WHY[refused].format(size=len(text), limit=self._queue.max_bytes))
        return record["trace_id"]

    @property
    def dropped(self) -> int:
        """Traces dropped so far: pushed out of a full queue, too large, or logged after close."""
        return self._counters.dropped

    def stats(self) -> Stats:
        """A snapshot of the counters: queued, sent, dropped, rejected, failed, retries, dropped_by."""
        return self._counters.snapshot(len(self._queue))

    def flush(self, timeout: float | None = None) -> bool:
        """Send everything logged before this call now and wait until each is sent, rejected, dropped or given up.

        False when `timeout` seconds pass first (the traces stay queued)."""
        return self._queue.flush(timeout)

    def close(self, timeout: float | None = 5.0) -> bool:
        """Send what is queued for up to `timeout` seconds, then give up on what is left (counted failed), queued or
        on the wire, and return: a server that never answers holds close no longer than `timeout`. Idempotent; True
        when everything logged was settled in time. Traces logged from now on are dropped."""
        if self._closed:
            return True
        self._closed = True
        atexit.unregister(self._at_exit)
        self._queue.close()  # the sender sends what is left without waiting for a full batch, then exits
        self._thread.join(timeout)
        # A post still on the wire is left to its own timeout in the (daemon) thread, which ends after it; its
        # traces count as failed now, and the abort ends any backoff wait at once.
        self._abort.set()
        given_up, queued = self._queue.abandon()
        if given_up:
            log.warning("ragpulse SDK: close timed out after %s s; %d traces not delivered (counted failed), e.g. "
                        "queued ones %s", timeout, given_up, queued[:5])
        self._api.close()
        return not given_up

    def __enter__(self) -> RagpulseClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close_if_alive(ref: weakref.ref[RagpulseClient], timeout: float) -> None:
    client = ref()
    if client is not None:
        client.close(timeout)
