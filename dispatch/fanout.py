"""How many chunks a batch fans out into: few enough that each is worth a work-horse, enough that every live worker
helps."""

from __future__ import annotations

import math
import time

import redis
from rq import Queue, Worker

from ragpulse.config import defaults


def chunk_size_for(traces: int, live_workers: int, most: int) -> int:
    """Traces per chunk for a batch of `traces`: one chunk per live worker, of at most `most` (RAGPULSE_CHUNK_SIZE)
    and, when the batch allows, at least MIN_CHUNK_SIZE traces."""
    return min(most, max(defaults.MIN_CHUNK_SIZE, math.ceil(traces / max(1, live_workers))))


class LiveWorkers:
    """The number of RQ workers listening on a queue, read from RQ's registry at most every WORKER_COUNT_SECONDS."""

    def __init__(self, connection: redis.Redis) -> None:
        self._connection = connection
        self._counts: dict[str, tuple[float, int]] = {}

    def count(self, queue: Queue) -> int:
        """Workers on `queue`, as last read; with Redis unreachable, the last count (1 before any), since the batch's
        own write will report the outage."""
        now = time.monotonic()
        read_at, count = self._counts.get(queue.name, (float("-inf"), 1))
        if now - read_at >= defaults.WORKER_COUNT_SECONDS:
            try:
                count = Worker.count(connection=self._connection, queue=queue)
            except redis.RedisError:
                pass
            self._counts[queue.name] = (now, count)
        return count
