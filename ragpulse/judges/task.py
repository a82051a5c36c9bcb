"""What a structured call asks besides its conversation: the system prompt, the examples and the one tool the model
must call. The judge's is `JUDGE_TASK`; synthetic dataset generation sends others through the same providers, rate
limiter, retries and spend reservations (ragpulse.generation)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ToolTask:
    """A fixed prefix (tool, rules, examples) and the tool whose input is the structured output."""

    system: str
    examples: str
    tool: dict[str, Any]
    """name, description and input_schema (a JSON schema in the subset strict tool use accepts)."""

    @property
    def name(self) -> str:
        """The tool's name, which the model must call."""
        return str(self.tool["name"])

    @property
    def fixed_chars(self) -> int:
        """Characters every call sends besides its messages."""
        return len(self.system) + len(self.examples) + len(json.dumps(self.tool))

    def repair_message(self, problem: str) -> str:
        """Sent once after invalid or truncated tool output."""
        return (f"Your {self.name} input was not usable: {problem}. Call {self.name} again with input that "
                "matches the schema exactly. Keep reasons and quotes short.")

    def json_repair_message(self, problem: str) -> str:
        """Sent once after invalid or truncated output in JSON-schema mode, where there is no tool to call again."""
        return (f"Your {self.name} JSON was not usable: {problem}. Reply again with only the {self.name} JSON "
                "object, matching the schema exactly. Keep reasons and quotes short.")
