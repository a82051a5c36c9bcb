"""The output files of the CLI (`eval --html`, `report --html`, `gate --junit`): checked before anything is posted,
written after, and a failure either way is an OutputFileError naming the option and the path, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

from ragpulse.exceptions import OutputFileError


def check_writable(option: str, path: Path) -> None:
    """OutputFileError unless `path` can be written: an existing writable file, or a new file in an existing,
    writable directory."""
    if path.is_dir():
        raise OutputFileError(f"{option} {path}: is a directory; name a file in it")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise OutputFileError(f"{option} {path}: the file is not writable")
        return
    parent = path.parent
    if not parent.is_dir():
        raise OutputFileError(f"{option} {path}: no such directory {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputFileError(f"{option} {path}: the directory {parent} is not writable")


def write_output(option: str, path: Path, text: str) -> None:
    """Write `text` to `path` (UTF-8); OutputFileError naming the option, the path and the system's reason."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise OutputFileError(f"{option} {path}: cannot write: {exc.strerror or exc}") from None
