"""Deterministic ids, splits and review samples of generated items: the same questions always get the same ones."""

from __future__ import annotations

import hashlib

from ragpulse.generation.dedupe import normalize


def _unit(text: str) -> float:
    """A number in [0, 1) drawn from sha256 of `text`: uniform enough to split on, and stable."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64


def item_id(question_type: str, question: str) -> str:
    """`syn-<type>-<12 hex>`, from the normalized question: a question written again keeps its id."""
    digest = hashlib.sha256(normalize(question).encode()).hexdigest()[:12]
    return f"syn-{question_type}-{digest}"


def split_of(item_id_: str, test_fraction: float) -> str:
    """`test` for the share `test_fraction` of ids whose hash falls below it, else `dev`."""
    return "test" if _unit(f"split:{item_id_}") < test_fraction else "dev"


def review_sample(item_ids: list[str], size: int) -> list[str]:
    """The `size` ids with the smallest review hash, in that order: a uniform, reproducible sample."""
    return sorted(item_ids, key=lambda i: _unit(f"review:{i}"))[:size]
