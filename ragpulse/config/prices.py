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
              cache_read_input_tokens: int = 0, cache_creation_input_tokens: int = 0) -> float:
    """USD cost of one call; 0.0 for a model without a price (its tokens are still counted).

    input_price * (input + 0.1 * cache_read + 1.25 * cache_creation) + output_price * output, per million tokens;
    `input_tokens` are the uncached ones, as the provider reports them.
    """
    per_in, per_out = prices.get(model, (0.0, 0.0))
    billed_input = (input_tokens + CACHE_READ_PRICE_FACTOR * cache_read_input_tokens
                    + CACHE_WRITE_PRICE_FACTOR * cache_creation_input_tokens)
    return (billed_input * per_in + output_tokens * per_out) / 1_000_000
