"""Build judges by name from settings: the one place that knows every judge."""

from __future__ import annotations

from collections.abc import Callable

import anthropic
import redis.asyncio as aioredis

from ragpulse.judges.anthropic_judge import AnthropicJudge, RetryPolicy
from ragpulse.judges.local import LocalJudge
from ragpulse.judges.verdicts import Judge, JudgeObserver
from ragpulse.ratelimit import JudgeLimiter, Limits
from ragpulse.settings import Settings


def _anthropic(settings: Settings, observer: JudgeObserver | None) -> Judge:
    # api_key and base_url fall back to the SDK's own ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL. The SDK's own
    # retries are off: the judge retries itself so that a 429 can pause every worker through Redis.
    client = anthropic.AsyncAnthropic(base_url=settings.judge_base_url, timeout=settings.judge_timeout_seconds,
                                      max_retries=0)
    return AnthropicJudge(client, settings.judge_model, settings.judge_max_tokens, settings.judge_temperature,
                          limiter=_limiter(settings), retry=RetryPolicy(max_retries=settings.judge_max_retries),
                          observer=observer)


def _limiter(settings: Settings) -> JudgeLimiter:
    limits = Limits(requests=settings.judge_rpm, input_tokens=settings.judge_itpm,
                    output_tokens=settings.judge_otpm, window_seconds=settings.judge_rate_window_seconds)
    return JudgeLimiter(settings.redis_url, aioredis.Redis.from_url(settings.redis_url), settings.judge_model, limits)


def _local(settings: Settings, observer: JudgeObserver | None) -> Judge:
    return LocalJudge()


FACTORIES: dict[str, Callable[[Settings, JudgeObserver | None], Judge]] = {"anthropic": _anthropic, "local": _local}
"""Judge name -> constructor. `none` has no judge."""


def make_judge(name: str, settings: Settings, observer: JudgeObserver | None = None) -> Judge | None:
    """The judge called `name`, or None for `none`. Build it inside the event loop that will use it."""
    return None if name == "none" else FACTORIES[name](settings, observer)
