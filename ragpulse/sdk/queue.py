"""The SDK's bounded trace queue: many threads put, one sender thread takes batches; the oldest traces are dropped
when it is full (in traces or in bytes), and `flush` can wait for everything put before it to be settled (delivered
or given up)."""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

from ragpulse.sdk.stats import AFTER_CLOSE, LARGER_THAN_QUEUE, QUEUE_FULL, Counters


@dataclass(frozen=True, slots=True)
class Item:
    """One trace as queued: its place in put order, its id, and its JSON text (encoded once, at log time)."""

    seq: int
    trace_id: str
    json: str


class TraceQueue:
    """A deque under one condition variable. Settlement is tracked by sequence number: a trace is settled once it
    was dropped, or the batch it was taken in was settled."""

    def __init__(self, maxlen: int, max_bytes: int, batch_size: int, counters: Counters) -> None:
        self._items: deque[Item] = deque()
        self._maxlen = maxlen
        self.max_bytes = max_bytes
        self._bytes = 0
        """The JSON bytes of the queued traces (ASCII: `json.dumps` escapes the rest, so characters are bytes)."""
        self._counters = counters
        self._batch_size = batch_size
        self._cond = threading.Condition()
        self._next_seq = 0
        self._inflight: int | None = None
        """The first sequence number of the batch the sender holds, until it settles it."""
        self._flush_to = 0
        """Sequence numbers below this should be sent now, without waiting for a full batch or the interval."""
        self._closed = False

    def put(self, trace_id: str, text: str) -> str | None:
        """Append one trace, dropping the oldest while full; None, or the reason this trace itself was dropped
        (closed, or larger than the whole byte bound: it would push out everything else and still not fit)."""
        with self._cond:
            refused = AFTER_CLOSE if self._closed else LARGER_THAN_QUEUE if len(text) > self.max_bytes else None
            if refused:
                self._counters.drop(refused)
                return refused
            while len(self._items) >= self._maxlen or self._bytes + len(text) > self.max_bytes:
                self._bytes -= len(self._items.popleft().json)
                self._counters.drop(QUEUE_FULL)
            self._items.append(Item(self._next_seq, trace_id, text))
            self._bytes += len(text)
            self._next_seq += 1
            if len(self._items) in (1, self._batch_size):  # the sender waits for a first trace, then a full batch
                self._cond.notify_all()
            return None

    def __len__(self) -> int:
        return len(self._items)

    def take(self, wait: float) -> list[Item] | None:
        """Up to `batch_size` traces: after the first arrives, once that many wait, a flush asks, or `wait` seconds
        pass. An idle queue blocks here without polling. None once the queue is closed and empty: the sender exits."""
        with self._cond:
            self._cond.wait_for(lambda: self._items or self._closed)
            deadline = time.monotonic() + wait
            while not self._ready() and (left := deadline - time.monotonic()) > 0:
                self._cond.wait(left)
            if self._closed and not self._items:
                return None
            batch = [self._items.popleft() for _ in range(min(self._batch_size, len(self._items)))]
            self._bytes -= sum(len(item.json) for item in batch)
            self._counters.taken(len(batch))
            self._inflight = batch[0].seq if batch else None
            return batch

    def _ready(self) -> bool:
        urgent = self._closed or (self._items and self._items[0].seq < self._flush_to)
        return bool(len(self._items) >= self._batch_size or urgent)

    def settle(self) -> None:
        """The sender is done with the batch it took: delivered, rejected or given up."""
        with self._cond:
            self._inflight = None
            self._cond.notify_all()

    def abandon(self) -> tuple[int, list[str]]:
        """Give up on every trace not yet settled, queued or in flight (close timed out): they count as failed, and
        the sender's later word on its batch is ignored. Returns how many, and the ids of those still queued."""
        with self._cond:
            items, self._items, self._bytes = list(self._items), deque(), 0
            self._inflight = None
            self._cond.notify_all()
            return self._counters.abandon(len(items)), [item.trace_id for item in items]

    def flush(self, timeout: float | None) -> bool:
        """Ask for everything put so far to be sent now; wait until it is settled. False on timeout."""
        with self._cond:
            target = self._next_seq
            self._flush_to = max(self._flush_to, target)
            self._cond.notify_all()
            return self._cond.wait_for(lambda: self._frontier() >= target, timeout)

    def _frontier(self) -> int:
        """The lowest sequence number not yet settled (the next one to be put when all are)."""
        if self._inflight is not None:
            return self._inflight
        return self._items[0].seq if self._items else self._next_seq

    def close(self) -> None:
        """Refuse further puts; the sender sends what is left without waiting, then exits."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
