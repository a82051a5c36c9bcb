"""Where `ragpulse up` keeps its private Redis's data, and the lock that gives one stack a directory to itself.

The lock is an exclusive flock(2) on <dir>/ragpulse.lock, whose text names the holder (its pid and API URL). The
lock's file descriptor is handed to the private redis-server too, so the directory stays locked until the supervisor
*and* its Redis have exited: a stack started while the previous one's Redis still writes its append-only file waits
for it (DATA_LOCK_WAIT_SECONDS) instead of opening the same files.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from ragpulse.config import defaults
from ragpulse.exceptions import ConfigError
from ragpulse.ops.lifetime import alive


def default_data_dir(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> Path:
    """The platform's data directory for ragpulse: $XDG_DATA_HOME/ragpulse when that is an absolute path (the XDG
    spec ignores a relative one), else ~/.local/share/ragpulse (Linux), ~/Library/Application Support/ragpulse
    (macOS) or %LOCALAPPDATA%\\ragpulse (Windows)."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_DATA_HOME", "")
    if xdg and os.path.isabs(xdg):
        base = Path(xdg)
    elif platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif platform == "win32":
        base = Path(env.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path.home() / ".local" / "share"
    return base / defaults.DATA_DIR_NAME


class DataDirLock:
    """The exclusive lock on a data directory, held from acquire() to release() (and by the Redis given `fd`)."""

    def __init__(self, directory: Path, wait: float = defaults.DATA_LOCK_WAIT_SECONDS) -> None:
        self.directory = directory
        self.path = directory / defaults.DATA_LOCK_FILE
        self.wait = wait
        self.fd: int | None = None

    def acquire(self, holder: Mapping[str, object]) -> DataDirLock:
        """Create the directory if need be and lock it, writing `holder` (pid, url) into the lock file.

        ConfigError naming the holder when another stack holds it; when the holder has exited and only its Redis
        still holds it (shutting down), waits up to `wait` seconds first."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(f"cannot use the data directory {self.directory}: {exc.strerror}; choose another with "
                              "--data-dir (or RAGPULSE_DATA_DIR), or run with --ephemeral") from None
        try:
            self._lock(fd)
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(dict(holder)).encode(), 0)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        return self

    def _lock(self, fd: int) -> None:
        import fcntl  # noqa: PLC0415 - POSIX only; `ragpulse eval` imports this module for default_data_dir

        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                holder = self.holder()
                pid = holder.get("pid")
                if (isinstance(pid, int) and alive(pid)) or time.monotonic() > deadline:
                    raise ConfigError(self._in_use(holder)) from None
                time.sleep(0.1)

    def holder(self) -> dict[str, object]:
        """What the lock file says about its holder ({} when it says nothing readable)."""
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(self.path.read_text())
            if isinstance(found, dict):
                return found
        return {}

    def _in_use(self, holder: Mapping[str, object]) -> str:
        pid, url, redis_pid = holder.get("pid"), holder.get("url"), holder.get("redis_pid")
        if isinstance(pid, int) and alive(pid):
            who = f"another `ragpulse up` (pid {pid}{f', {url}' if url else ''})"
        elif isinstance(redis_pid, int) and alive(redis_pid):
            who = f"the redis-server (pid {redis_pid}) of a `ragpulse up` that has exited (pid {pid})"
        else:
            who = "another process"
        return (f"the data directory {self.directory} is in use by {who}; stop it, or give this stack a directory "
                "of its own with --data-dir (or none with --ephemeral)")

    def note(self, **more: object) -> None:
        """Add to what the lock file says about the holder (the Redis's pid once it runs)."""
        if self.fd is not None:
            text = json.dumps({**self.holder(), **more}).encode()
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text, 0)

    def release(self) -> None:
        """Give up this process's hold (a Redis handed the descriptor keeps the lock until it exits)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
