"""The batch options `ragpulse eval` sends: the trace file's own `options`, each overridden by a flag given on the
command line, and a line saying where each one came from (so a file's `judge` never wins or loses silently)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FLAGS = {"k": "--k", "gain": "--gain", "judge": "--judge", "repeats": "--repeats", "environment": "--environment",
         "delivery": "--delivery"}
"""Batch option -> the `ragpulse eval` flag that sets it."""


def choose_options(file_options: dict[str, Any] | None, flags: dict[str, Any],
                   path: Path) -> tuple[dict[str, Any], str | None]:
    """(the options to send, `options: ...` naming each one's origin, or None when there are none).

    `flags` holds only the flags given explicitly: each overrides the file's value of that option."""
    options = dict(file_options or {})
    origins = [f"{name} {_show(value)} from {path}" for name, value in options.items() if name not in flags]
    for name, value in flags.items():
        over = f", over the file's {_show(options[name])}" if name in options and options[name] != value else ""
        origins.append(f"{name} {_show(value)} from {FLAGS[name]}{over}")
        options[name] = value
    return options, ("options: " + "; ".join(origins)) if origins else None


def _show(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, int | float | str) for v in value):
        return " ".join(map(str, value))
    return value if isinstance(value, str) else json.dumps(value)
