"""How the API and the workers reconnect to Redis after it restarted or went away for a while.

The API answers a client: it retries a dropped connection once (a pooled connection goes stale when Redis
restarts, and the first request after a restart must not be a 503), and never a timeout (a Redis that hangs would
hang the request twice as long). A worker has no one waiting on the line: it retries with exponential backoff for
about WORKER_REDIS_OUTAGE_SECONDS, so a job in flight simply pauses through a Redis restart.
"""

from __future__ import annotations

import time

import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from ragpulse.config import defaults

BACKOFF_BASE_SECONDS = 0.1
"""First wait before a retry (doubling from there, up to BACKOFF_CAP_SECONDS)."""

BACKOFF_CAP_SECONDS = 2.0
"""Longest wait between two attempts: a worker reconnects within this long once Redis is back."""

RETRIED_ERRORS = (redis.ConnectionError, redis.TimeoutError)
"""What a worker's command retries on: a dropped or refused connection, and a Redis that stopped answering."""

DEFAULT_POOL_CONNECTIONS = 100
"""Connections of an async pool whose callers are not counted (redis-py's own default size)."""

ASYNC_POOL_SPARE_CONNECTIONS = 8
"""Connections a worker's async pool holds beyond one per concurrent caller: for its background writes (lease
renewal, flushes of counted calls)."""


def backoff_retries(seconds: float) -> int:
    """How many retries ExponentialBackoff(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS) takes to wait `seconds`."""
    retries, waited = 0, 0.0
    while waited < seconds:
        retries += 1
        waited += min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** retries)
    return retries


def reconnect_once(asyncio: bool = False) -> Retry | AsyncRetry:
    """One reconnect on a dropped connection: the API's clients' retry policy (sync, or `asyncio=True` for
    redis.asyncio), and a stopping worker's."""
    retry_class = AsyncRetry if asyncio else Retry
    return retry_class(ExponentialBackoff(cap=BACKOFF_CAP_SECONDS, base=BACKOFF_BASE_SECONDS), retries=1,
                       supported_errors=(redis.ConnectionError,))


def worker_client(url: str, socket_timeout: float | None = None,
                  outage_seconds: float = defaults.WORKER_REDIS_OUTAGE_SECONDS) -> redis.Redis:
    """A worker's client: every command retries through a Redis outage of about `outage_seconds`
    (RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS).

    No socket timeout unless given: RQ sets its own on its connection, longer than its blocking dequeue.
    """
    retry = Retry(ExponentialBackoff(cap=BACKOFF_CAP_SECONDS, base=BACKOFF_BASE_SECONDS),
                  retries=backoff_retries(outage_seconds), supported_errors=RETRIED_ERRORS)
    return redis.Redis.from_url(url, retry=retry, socket_timeout=socket_timeout,
                                socket_connect_timeout=defaults.REDIS_SOCKET_TIMEOUT,
                                health_check_interval=defaults.REDIS_HEALTH_CHECK_SECONDS)


def worker_async_client(url: str, concurrency: int | None = None,
                        outage_seconds: float = defaults.WORKER_REDIS_OUTAGE_SECONDS) -> redis.asyncio.Redis:
    """The asyncio twin of worker_client (a chunk run's reads and writes, the judge's shared rate limiter, the online
    consumer): the same retries through an outage.

    Its pool holds a connection for each of `concurrency` callers (RAGPULSE_JUDGE_CONCURRENCY; None: redis-py's
    default of 100), plus ASYNC_POOL_SPARE_CONNECTIONS, and a caller finding them all busy waits for one: redis-py's
    default pool raises MaxConnectionsError instead.
    """
    retry = AsyncRetry(ExponentialBackoff(cap=BACKOFF_CAP_SECONDS, base=BACKOFF_BASE_SECONDS),
                       retries=backoff_retries(outage_seconds), supported_errors=RETRIED_ERRORS)
    callers = DEFAULT_POOL_CONNECTIONS if concurrency is None else concurrency
    pool = redis.asyncio.BlockingConnectionPool.from_url(
        url, max_connections=callers + ASYNC_POOL_SPARE_CONNECTIONS, timeout=None, retry=retry,
        socket_connect_timeout=defaults.REDIS_SOCKET_TIMEOUT, health_check_interval=defaults.REDIS_HEALTH_CHECK_SECONDS)
    return redis.asyncio.Redis.from_pool(pool)


def probe_client(url: str) -> redis.Redis:
    """A client that fails fast (no retry, short timeouts): for asking whether Redis is back."""
    return redis.Redis.from_url(url, socket_timeout=defaults.REDIS_SOCKET_TIMEOUT,
                                socket_connect_timeout=defaults.REDIS_SOCKET_TIMEOUT)


class OutageBackoff:
    """Backoff for retrying an operation on Redis errors outside a client's own retries: the waits of a worker
    client's retry policy, for about WORKER_REDIS_OUTAGE_SECONDS in all."""

    def __init__(self, seconds: float = defaults.WORKER_REDIS_OUTAGE_SECONDS) -> None:
        self._backoff = ExponentialBackoff(cap=BACKOFF_CAP_SECONDS, base=BACKOFF_BASE_SECONDS)
        self._seconds = seconds
        self._failures = 0
        self._deadline: float | None = None

    def next_wait(self) -> float | None:
        """Seconds to wait before the next attempt, or None once the outage has lasted too long (counted from the
        first failure)."""
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + self._seconds
        elif now >= self._deadline:
            return None
        self._failures += 1
        return self._backoff.compute(self._failures)
