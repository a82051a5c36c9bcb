"""Judge prices per model and the cost of one call (prompt-cache reads and writes priced apart)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from ragpulse.exceptions import ConfigError

DEFAULT_PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
    # OpenAI list prices (standard tier, https://platform.openai.com/docs/pricing), read 2026-12-02 from published
    # copies of that page; cached-input and batch rates in OPENAI_FACTORS. Dated snapshots (gpt-4o-2024-08-06) are
    # billed under their own names: add them with RAGPULSE_JUDGE_PRICES.
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.50, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
}
"""USD per million (input, output) tokens; list prices at the time of writing. Override with RAGPULSE_JUDGE_PRICES."""
CACHE_READ_PRICE_FACTOR = 0.1
"""A prompt-cache read costs this multiple of the model's input price (Anthropic; OpenAI's per model below)."""
CACHE_WRITE_PRICE_FACTOR = 1.25
"""A prompt-cache write (the default 5-minute cache) costs this multiple of the model's input price."""
CACHE_WRITE_1H_PRICE_FACTOR = 2.0
"""A prompt-cache write with the 1-hour TTL (what batch delivery marks) costs this multiple of the input price."""
BATCH_PRICE_FACTOR = 0.5
"""Batch delivery (Anthropic Message Batches, OpenAI's Batch API) bills every token, cache reads and writes included,
at this multiple of the interactive price."""
DELIVERY_FACTORS: dict[str, tuple[float, float]] = {
    "interactive": (1.0, CACHE_WRITE_PRICE_FACTOR),
    "batch": (BATCH_PRICE_FACTOR, CACHE_WRITE_1H_PRICE_FACTOR),
}
"""Delivery -> (multiple of every price, multiple of the input price a cache write costs): batch requests are
half price and mark their prefix with the 1-hour cache TTL, the one that outlives a batch's pacing. Anthropic's, and
the default of a model PRICE_FACTORS does not name."""


@dataclass(frozen=True)
class PriceFactors:
    """How a model's provider bills cache reads, cache writes and batch delivery, as multiples of its prices."""

    cache_read: float = CACHE_READ_PRICE_FACTOR
    """A cached input token, as a multiple of the input price."""
    delivery: Mapping[str, tuple[float, float]] = field(default_factory=lambda: DELIVERY_FACTORS)
    """Delivery -> (multiple of every price, multiple of the input price a cache write costs)."""


def _openai(cache_read: float) -> PriceFactors:
    # OpenAI caches prefixes by itself and bills no write surcharge; the Batch API halves input (cached too) and
    # output.
    return PriceFactors(cache_read, {"interactive": (1.0, 1.0), "batch": (BATCH_PRICE_FACTOR, 1.0)})


OPENAI_FACTORS: dict[str, PriceFactors] = {
    **dict.fromkeys(("gpt-5", "gpt-5-mini", "gpt-5-nano"), _openai(0.1)),
    **dict.fromkeys(("gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"), _openai(0.25)),
    **dict.fromkeys(("gpt-4o", "gpt-4o-mini"), _openai(0.5)),
}
"""OpenAI's cached-input rate per model family (same source and date as the prices): GPT-5 0.1x, GPT-4.1 0.25x,
GPT-4o 0.5x the input price."""
PRICE_FACTORS: dict[str, PriceFactors] = {**OPENAI_FACTORS}
"""Model -> how it bills cache and batch; a model not named here bills as Anthropic does (PriceFactors())."""
ANTHROPIC_FACTORS = PriceFactors()


def caches_by_itself(model: str | None) -> bool:
    """True for a model whose provider caches a long enough prompt prefix without being asked (OpenAI's models, from
    1,024 tokens), billing it at the cached-input rate on later calls and with no write surcharge."""
    return model in OPENAI_FACTORS


def parse_prices(raw: str | None) -> dict[str, tuple[float, float]]:
    """RAGPULSE_JUDGE_PRICES: JSON {model: [input_usd_per_mtok, output_usd_per_mtok]} merged over the defaults."""
    prices = dict(DEFAULT_PRICES_PER_MTOK)
    if not raw:
        return prices
    try:
        given = json.loads(raw)
        prices.update({model: (float(pair[0]), float(pair[1])) for model, pair in given.items()})
    except (ValueError, TypeError, AttributeError, IndexError, KeyError):
        raise ConfigError('RAGPULSE_JUDGE_PRICES must be JSON like {"model": [3.0, 15.0]}') from None
    return prices


def call_cost(prices: Mapping[str, tuple[float, float]], model: str, input_tokens: int, output_tokens: int,
              cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0,
              delivery: str = "interactive") -> float:
    """USD cost of one call; 0.0 for a model without a price (its tokens are still counted).

    factor * (input_price * (input + read * cache_read + write * cache_creation) + output_price * output), per million
    tokens, where `read` is the model's cached-input rate (Anthropic 0.1; OpenAI 0.1 to 0.5 by family) and (factor,
    write) its delivery's: Anthropic (1, 1.25) interactive and (0.5, 2.0) batch, OpenAI (1, 1) and (0.5, 1)
    (PRICE_FACTORS); `input_tokens` are the uncached ones.
    """
    per_in, per_out = prices.get(model, (0.0, 0.0))
    factors = PRICE_FACTORS.get(model, ANTHROPIC_FACTORS)
    factor, write = factors.delivery[delivery]
    billed_input = (input_tokens + factors.cache_read * cache_read_input_tokens
                    + write * cache_creation_input_tokens)
    return factor * (billed_input * per_in + output_tokens * per_out) / 1_000_000
