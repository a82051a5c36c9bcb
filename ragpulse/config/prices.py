"""Judge prices per model and the cost of one call (prompt-cache reads and writes priced apart)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from ragpulse.exceptions import ConfigError

DEFAULT_PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
}
"""USD per million (input, output) tokens; list prices at the time of writing. Override with RAGPULSE_JUDGE_PRICES."""
CACHE_READ_PRICE_FACTOR = 0.1
"""A prompt-cache read costs this multiple of the model's input price."""
CACHE_WRITE_PRICE_FACTOR = 1.25
"""A prompt-cache write (the default 5-minute cache) costs this multiple of the model's input price."""
CACHE_WRITE_1H_PRICE_FACTOR = 2.0
"""A prompt-cache write with the 1-hour TTL (what batch delivery marks) costs this multiple of the input price."""
BATCH_PRICE_FACTOR = 0.5
"""Batch delivery (Anthropic Message Batches) bills every token, cache reads and writes included, at this multiple
of the interactive price."""
DELIVERY_FACTORS: dict[str, tuple[float, float]] = {
    "interactive": (1.0, CACHE_WRITE_PRICE_FACTOR),
    "batch": (BATCH_PRICE_FACTOR, CACHE_WRITE_1H_PRICE_FACTOR),
}
"""Delivery -> (multiple of every price, multiple of the input price a cache write costs): batch requests are
half price and mark their prefix with the 1-hour cache TTL, the one that outlives a batch's pacing."""

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

    factor * (input_price * (input + 0.1 * cache_read + write * cache_creation) + output_price * output), per million
    tokens, where (factor, write) is (1, 1.25) interactive and (0.5, 2.0) in batch delivery (DELIVERY_FACTORS);
    `input_tokens` are the uncached ones, as the provider reports them.
    """
    per_in, per_out = prices.get(model, (0.0, 0.0))
    factor, write = DELIVERY_FACTORS[delivery]
    billed_input = (input_tokens + CACHE_READ_PRICE_FACTOR * cache_read_input_tokens
                    + write * cache_creation_input_tokens)
    return factor * (billed_input * per_in + output_tokens * per_out) / 1_000_000
