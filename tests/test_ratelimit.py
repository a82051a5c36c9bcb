"""The shared judge limiter against a real Redis: pacing, token windows, the shared 429 pause, header parsing."""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid

import redis.asyncio as aioredis

from ragpulse.config import keys
from ragpulse.judges.headers import pause_from_headers, retry_after
from ragpulse.judges.ratelimit import JudgeLimiter, Limits
from ragpulse.store.connection import worker_async_client


def limiter(redis_url: str, model: str, limits: Limits) -> JudgeLimiter:
    return JudgeLimiter(redis_url, aioredis.Redis.from_url(redis_url), model, limits)


def test_requests_are_paced_across_limiters(redis_url: str) -> None:
    async def run() -> list[float]:
        model = f"m-{uuid.uuid4().hex[:6]}"
        workers = [limiter(redis_url, model, Limits(requests=11, window_seconds=1)) for _ in range(2)]
        stamps: list[float] = []

        async def call(worker: JudgeLimiter) -> None:
            await worker.acquire(1, 1)
            stamps.append(time.monotonic())

        await asyncio.gather(*(call(workers[i % 2]) for i in range(12)))
        for worker in workers:
            await worker.aclose()
        return sorted(stamps)

    stamps = asyncio.run(run())
    # 11 per second -> one slot every 1/10 s, shared by both "workers": 12 calls span ~1.1 s,
    # and no 1-second window holds more than 11 of them.
    assert stamps[-1] - stamps[0] >= 1.0
    assert max(sum(1 for s in stamps if t <= s < t + 1.0) for t in stamps) <= 11


def test_a_pause_set_by_one_worker_holds_every_worker(redis_url: str) -> None:
    async def run() -> float:
        model = f"m-{uuid.uuid4().hex[:6]}"
        first, second = limiter(redis_url, model, Limits()), limiter(redis_url, model, Limits())
        await first.pause(0.8)                                    # worker 1 got a 429 with retry-after
        start = time.monotonic()
        await second.acquire(1, 1)                                # worker 2 must wait too
        waited = time.monotonic() - start
        await first.pause(0.1)                                    # a shorter pause never shortens a longer one
        await first.aclose()
        await second.aclose()
        return waited

    assert asyncio.run(run()) >= 0.7


def test_token_limit_holds_a_call_until_the_window_has_room(redis_url: str) -> None:
    model = f"m-{uuid.uuid4().hex[:6]}"

    async def run() -> tuple[float, list[bytes]]:
        tokens = limiter(redis_url, model, Limits(input_tokens=1000, window_seconds=1))
        await tokens.acquire(900, 0)
        start = time.monotonic()
        await tokens.acquire(300, 0)                              # 1,200 > 1,000: waits for the window to slide
        waited = time.monotonic() - start
        counters = await tokens.redis.keys(f"*{model}*")
        await tokens.aclose()
        return waited, counters

    waited, counters = asyncio.run(run())
    assert waited >= 0.15
    assert counters and all(key.decode().startswith(keys.judge_token_windows()) for key in counters)


def test_retry_after_and_ratelimit_headers() -> None:
    assert retry_after({"retry-after": "3"}) == 3.0
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "100000"}) == 120.0                  # capped
    assert retry_after({}) is None
    reset = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=5)).isoformat()
    headers = {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": reset,
               "anthropic-ratelimit-tokens-remaining": "1000", "anthropic-ratelimit-tokens-reset": reset}
    assert 4.0 < pause_from_headers(headers) <= 5.0
    assert pause_from_headers({**headers, "anthropic-ratelimit-requests-remaining": "3"}) is None


def test_a_call_no_limit_held_reports_no_wait(redis_url: str) -> None:
    async def run() -> tuple[list[float], float]:
        model = f"m-{uuid.uuid4().hex[:6]}"
        free = limiter(redis_url, model, Limits())
        roomy = limiter(redis_url, model, Limits(requests=10_000, input_tokens=10**9, output_tokens=10**9))
        unheld = [await free.acquire(100, 100), await roomy.acquire(100, 100)]
        await free.pause(0.3)
        held = await free.acquire(100, 100)
        for each in (free, roomy):
            await each.aclose()
        return unheld, held

    unheld, held = asyncio.run(run())
    assert unheld == [0.0, 0.0]         # the Redis round trips that found room are not a wait (nothing is recorded)
    assert held >= 0.25                 # a pause that held the call is


def test_more_concurrent_calls_than_redis_pys_default_pool_all_pass(redis_url: str) -> None:
    async def run(concurrency: int) -> list[float]:
        shared = JudgeLimiter(redis_url, worker_async_client(redis_url, concurrency), f"m-{uuid.uuid4().hex[:6]}",
                              Limits(requests=10**6, input_tokens=10**9, output_tokens=10**9, window_seconds=1))
        try:
            return await asyncio.gather(*(shared.acquire(10, 10) for _ in range(concurrency)))
        finally:
            await shared.aclose()

    assert len(asyncio.run(run(300))) == 300    # redis-py's default pool raised MaxConnectionsError past 100
