"""Judge rate limits shared by every worker through Redis: requests, input tokens and output tokens per window.

Token limits use `limits`' sliding-window counter (O(1) per hit with a cost; its moving window would push one
list entry per *token*). Requests are paced instead of windowed: measured against a provider enforcing the same
limit with its own clock, a moving window admits a full burst right at each window edge, and the provider,
receiving those requests a few ms later, counted them into one window (9 of 60 requests got 429 at a matching
limit). Pacing at window / (limit - 1) keeps every provider window under the limit: zero 429s, at
(limit - 1) / limit of the ceiling. The pacer is one small Lua script on Redis's clock, shared by every worker.
A 429 anywhere pauses every worker through one shared key.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

import redis.asyncio as aioredis
from limits import RateLimitItemPerSecond
from limits.aio.storage import RedisStorage
from limits.aio.strategies import SlidingWindowCounterRateLimiter

from ragpulse.config import defaults, keys

# Reserve the next request slot: slots are `spacing` seconds apart on Redis's clock. Returns the seconds to wait
# (as a string: Lua numbers would be truncated to integers in the reply). KEYS: pacer key. ARGV: spacing.
_PACE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local spacing = tonumber(ARGV[1])
local slot = math.max(now, tonumber(redis.call('GET', KEYS[1]) or '0'))
redis.call('SET', KEYS[1], tostring(slot + spacing), 'PX', math.ceil((slot + spacing - now) * 1000) + 1000)
return tostring(slot - now)
"""

# Raise the shared pause to now + ARGV[1] seconds (Redis clock) unless it already ends later, and move the next
# request slot past it, so requests held by the pause leave paced rather than in one burst.
# KEYS: pause key, pacer key. Returns the seconds the pause still lasts.
_EXTEND_PAUSE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local target = now + tonumber(ARGV[1])
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if target > current then
  redis.call('SET', KEYS[1], tostring(target), 'PX', math.ceil((target - now) * 1000) + 1)
end
if tonumber(redis.call('GET', KEYS[2]) or '0') < target then
  redis.call('SET', KEYS[2], tostring(target), 'PX', math.ceil((target - now) * 1000) + 1000)
end
return tostring(math.max(current, target) - now)
"""

# Seconds left of the shared pause, on Redis's clock (0 or less: no pause). KEYS: pause key.
_PAUSE_LEFT = """
local t = redis.call('TIME')
return tostring(tonumber(redis.call('GET', KEYS[1]) or '0') - (tonumber(t[1]) + tonumber(t[2]) / 1000000))
"""


@dataclass(frozen=True)
class Limits:
    """Provider limits for one model; 0 means unlimited."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    window_seconds: int = 60


class JudgeLimiter:
    """Waits until a judge call fits every limit, shared across processes and machines."""

    def __init__(self, redis_url: str, client: aioredis.Redis, model: str, limits: Limits) -> None:
        self.model = model
        self.limits = limits
        self.redis = client
        storage = RedisStorage(f"async+{redis_url}", implementation="redispy", key_prefix=keys.judge_token_windows(),
                               connection_pool=client.connection_pool)
        self._tokens = SlidingWindowCounterRateLimiter(storage)
        self._pause = client.register_script(_EXTEND_PAUSE)
        self._read_pause = client.register_script(_PAUSE_LEFT)
        self._pace = client.register_script(_PACE)
        self._pause_ends = 0.0
        """When the shared pause ends (time.monotonic()), as last read or set by this limiter."""
        self._pause_read_at = float("-inf")

    async def acquire(self, input_tokens: int, output_tokens: int) -> float:
        """Block until one request with these token estimates fits; returns the seconds spent waiting, 0 when no
        limit or pause held the call (the Redis round trips that found so are not waiting)."""
        start = time.monotonic()
        waited = await self._wait_for_pause()
        waited |= await self._take(self.limits.input_tokens, "input", input_tokens)
        waited |= await self._take(self.limits.output_tokens, "output", output_tokens)
        while True:  # a pause that began while we waited for our slot sends us back for a slot after it
            waited |= await self._request_slot()
            if not await self._wait_for_pause():
                break
            waited = True
        return time.monotonic() - start if waited else 0.0

    async def settle(self, estimated: tuple[int, int], actual: tuple[int, int]) -> None:
        """Charge what the estimate missed, once the real usage is known (over-estimates are not refunded)."""
        for limit, kind, guess, real in zip((self.limits.input_tokens, self.limits.output_tokens),
                                            ("input", "output"), estimated, actual, strict=True):
            if real > guess:
                await self._take(limit, kind, real - guess)

    async def pause(self, seconds: float) -> None:
        """Make every worker wait `seconds` before its next call to this model (honours the longest pause)."""
        left = float(await self._pause(keys=[keys.judge_pause(self.model), keys.judge_pacer(self.model)],
                                       args=[seconds]))
        self._pause_ends = max(self._pause_ends, time.monotonic() + left)

    async def aclose(self) -> None:
        """Close this limiter's Redis connections."""
        await self.redis.aclose()

    async def _request_slot(self) -> bool:
        """Wait for this call's request slot, if requests are limited; True when that meant sleeping."""
        if self.limits.requests <= 0:
            return False
        spacing = self.limits.window_seconds / max(1, self.limits.requests - 1)
        wait = float(await self._pace(keys=[keys.judge_pacer(self.model)], args=[spacing]))
        if wait > 0:
            await asyncio.sleep(wait)
        return wait > 0

    async def _wait_for_pause(self) -> bool:
        """Sleep out the shared pause, if any; True when there was one."""
        paused = False
        while (left := await self._pause_left()) > 0:
            paused = True
            await asyncio.sleep(left + random.uniform(0, 0.05))
        return paused

    async def _pause_left(self) -> float:
        """Seconds left of the shared pause. Read from Redis at most every JUDGE_PAUSE_READ_SECONDS, by one call (the
        others take its reading): a call that finds no pause costs no round trip of its own, and a pause another
        worker set holds this one's calls from at most that much later."""
        now = time.monotonic()
        if now - self._pause_read_at >= defaults.JUDGE_PAUSE_READ_SECONDS:
            self._pause_read_at = now
            left = float(await self._read_pause(keys=[keys.judge_pause(self.model)]))
            self._pause_ends = max(self._pause_ends, now + left)
        return self._pause_ends - time.monotonic()

    async def _take(self, limit: int, kind: str, cost: int) -> bool:
        """Take `cost` tokens from the `kind` window, waiting until they fit; True when that meant sleeping."""
        if limit <= 0 or cost <= 0:
            return False
        item = RateLimitItemPerSecond(limit, self.limits.window_seconds)
        cost = min(cost, limit)  # a single call larger than the whole window can only wait for an empty window
        slept = False
        while not await self._tokens.hit(item, self.model, kind, cost=cost):
            stats = await self._tokens.get_window_stats(item, self.model, kind)
            await asyncio.sleep(min(max(stats.reset_time - time.time(), 0.02), 1.0) * random.uniform(0.5, 1.0))
            slept = True
        return slept
