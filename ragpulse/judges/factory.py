"""Build judges by name from settings: the one place that knows every judge."""

from __future__ import annotations

from collections.abc import Callable

import anthropic

from ragpulse.judges.anthropic_judge import AnthropicJudge
from ragpulse.judges.verdicts import Judge
from ragpulse.settings import Settings


def _anthropic(settings: Settings) -> Judge:
    # api_key and base_url fall back to the SDK's own ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL.
    client = anthropic.Anthropic(base_url=settings.judge_base_url, timeout=settings.judge_timeout_seconds,
                                 max_retries=settings.judge_max_retries)
    return AnthropicJudge(client, settings.judge_model, settings.judge_max_tokens, settings.judge_temperature)


def _local(settings: Settings) -> Judge:
    from ragpulse.judges.local import LocalJudge  # noqa: PLC0415 - keeps the import graph of `anthropic` users small

    return LocalJudge()


FACTORIES: dict[str, Callable[[Settings], Judge]] = {"anthropic": _anthropic, "local": _local}
"""Judge name -> constructor. `none` has no judge."""


def make_judge(name: str, settings: Settings) -> Judge | None:
    """The judge called `name`, or None for `none`."""
    return None if name == "none" else FACTORIES[name](settings)
