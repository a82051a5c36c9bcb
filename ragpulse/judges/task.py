"""What a structured call asks besides its conversation: the system prompt, the examples, the one tool the model
must call, and the version every call's record carries. The provider adapters (anthropic_judge, openai_judge) and
the loop (structured) send whatever task they are given: the trace judgment (`prompt.JUDGE_TASK`), the side-by-side
comparison of pairwise A/B judging (`pairwise_prompt.PAIRWISE`), and the writers and checkers of synthetic dataset
generation (ragpulse.generation.prompts), all through the same providers, rate limiter, retries and spend
reservations. Everything that depends on the prompt's size (the cache marker, the input-token estimate) is computed
from the task.

A task may carry `padding`: worked examples sent only to a model whose minimum cacheable length the prefix would
otherwise miss (`for_model`), so that the prefix is cached there too (reads cost a tenth of the input price) instead
of being billed in full on every call; models whose minimum the prefix reaches get the short prefix.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from ragpulse.config import defaults

CHARS_PER_TOKEN = 3.5
"""Conservative characters-per-token ratio for estimating a call's input tokens before it is made."""

CHARS_PER_TOKEN_AT_MOST = 4.5
"""Characters per token at most (English prose under a BPE tokenizer; markup and JSON count more tokens): chars / 4.5
under-estimates a prompt's tokens, so a prefix padded until it reaches a cache minimum by it does reach it."""

PADDING_SEPARATOR = "\n\n"
"""Between the examples and each worked example added by `for_model`."""


def min_cacheable_tokens(model: str) -> int:
    """The provider's minimum cacheable prompt length for `model`."""
    return next((n for key, n in defaults.MIN_CACHEABLE_TOKENS.items() if key in model),
                defaults.DEFAULT_MIN_CACHEABLE_TOKENS)


@dataclass(frozen=True)
class ToolTask:
    """A fixed prefix (tool, rules, examples) and the tool whose input is the structured output."""

    system: str
    examples: str
    tool: dict[str, Any]
    """name, description and input_schema (a JSON schema in the subset strict tool use accepts)."""
    version: str = ""
    """The prompt version every call's JudgeCall carries. Default: a hash of system, examples and tool; a task whose
    user messages also shape its behaviour (the judge's, the pairwise comparison's) names a version that covers
    them."""
    padding: tuple[str, ...] = ()
    """Worked examples, in the order they are added to `examples` for a model whose minimum cacheable length the prefix
    does not reach without them (`for_model`)."""
    fixed_chars: int = field(init=False)
    """Characters every call sends besides its messages: system, examples and the tool schema."""

    def __post_init__(self) -> None:
        tool = json.dumps(self.tool)
        object.__setattr__(self, "fixed_chars", len(self.system) + len(self.examples) + len(tool))
        if not self.version:
            parts = [self.system, self.examples, self.tool, *([list(self.padding)] if self.padding else [])]
            digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode())
            object.__setattr__(self, "version", f"{self.name}-{digest.hexdigest()[:12]}")

    @property
    def name(self) -> str:
        """The tool's name, which the model must call."""
        return str(self.tool["name"])

    @property
    def fixed_tokens(self) -> float:
        """Estimated tokens of the fixed prefix, the part a prompt cache can hold."""
        return self.fixed_chars / CHARS_PER_TOKEN

    def for_model(self, model: str) -> ToolTask:
        """The task as sent to `model` with its prefix marked for the prompt cache: when the prefix falls short of the
        model's minimum cacheable length, the examples followed by the first worked examples of `padding` that bring
        it there (by chars / CHARS_PER_TOKEN_AT_MOST, an under-estimate); otherwise, or when even all of them fall
        short, the task itself. Its version stays the task's: the version and the model decide what was sent."""
        minimum = min_cacheable_tokens(model)
        if not self.padding or self.fixed_chars / CHARS_PER_TOKEN_AT_MOST >= minimum:
            return self
        chars = self.fixed_chars
        for taken, example in enumerate(self.padding, start=1):
            chars += len(PADDING_SEPARATOR) + len(example)
            if chars / CHARS_PER_TOKEN_AT_MOST >= minimum:
                examples = PADDING_SEPARATOR.join([self.examples, *self.padding[:taken]])
                return replace(self, examples=examples, padding=())
        return self

    def cacheable(self, model: str) -> bool:
        """Whether the fixed prefix reaches `model`'s minimum cacheable length (by the over-estimate chars / 3.5); ask
        `for_model(model)` for the prefix as that model is sent it."""
        return self.fixed_tokens >= min_cacheable_tokens(model)

    def estimate_input_tokens(self, message_chars: int) -> float:
        """Input tokens of a call whose messages serialise to `message_chars` characters (an over-estimate)."""
        return (self.fixed_chars + message_chars) / CHARS_PER_TOKEN

    def repair_message(self, problem: str) -> str:
        """Sent once after invalid or truncated tool output."""
        return (f"Your {self.name} input was not usable: {problem}. Call {self.name} again with input that "
                "matches the schema exactly. Keep reasons and quotes short.")

    def json_repair_message(self, problem: str) -> str:
        """Sent once after invalid or truncated output in JSON-schema mode, where there is no tool to call again."""
        return (f"Your {self.name} JSON was not usable: {problem}. Reply again with only the {self.name} JSON "
                "object, matching the schema exactly. Keep reasons and quotes short.")
