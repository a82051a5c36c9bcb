"""`ragpulse up`: Redis, the API and N workers as supervised child processes.

"ragpulse is up" is printed only once the API answers GET /readyz with 200 (so it serves and reaches Redis) and at
least one worker is registered on its queues (GET /metrics, `ragpulse_workers`): from then on `ragpulse eval` works.
A port already in use, or a data directory another stack holds, fails before anything starts; an API that exits
before it is ready fails the whole stack. The private Redis keeps its data in the data directory (append-only file,
fsync every second) unless the stack is ephemeral; with REDIS_URL the external Redis keeps it.
Every child gets SIGTERM from the kernel if `ragpulse up` dies, even by SIGKILL (Linux; see ragpulse.ops.lifetime).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ragpulse.config import defaults
from ragpulse.exceptions import ConfigError
from ragpulse.ops.data_dir import DataDirLock
from ragpulse.ops.lifetime import die_with_parent
from ragpulse.ops.redis_server import PrivateRedis

log = logging.getLogger("ragpulse.up")
STOP_GRACE_SECONDS = 10.0
"""How long children get to exit after SIGTERM before they are killed."""
RESTART_LIMIT = 5
"""Restarts of one child allowed within RESTART_WINDOW_SECONDS; a child that exits once more than that is crash
looping, and the whole stack gives up. A child that exits now and then over a long life is restarted each time."""
RESTART_WINDOW_SECONDS = 120.0
"""The sliding window RESTART_LIMIT counts restarts in."""
RESTART_BACKOFF_SECONDS = 0.25
"""Wait before restarting a child that exited, doubled for each restart of it still in the window (up to
RESTART_BACKOFF_CAP_SECONDS); the other children are supervised meanwhile."""
RESTART_BACKOFF_CAP_SECONDS = 10.0
READY_TIMEOUT_SECONDS = 120.0
"""How long `ragpulse up` waits for the API and a worker before it gives up."""
RQ_LOG_LEVEL = "WARNING"
"""Level of RQ's loggers in the stack's workers unless RAGPULSE_LOG_LEVEL is set: RQ logs several INFO lines per
job, which would interleave with `ragpulse eval` output in the same terminal."""
_WORKERS_GAUGE = re.compile(r"^ragpulse_workers (\S+)$", re.M)


def check_port_free(host: str, port: int) -> None:
    """ConfigError when nothing can listen on host:port (in use, or not an address of this machine)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a port in TIME_WAIT is free
        try:
            sock.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {port} on {host} is already in use (another `ragpulse up`?); stop that "
                                  "process or choose another port with --port or RAGPULSE_PORT") from None
            raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None


def in_foreground(fd: int = 0) -> bool:
    """True when `fd` is a terminal whose foreground process group is ours: Ctrl-C there reaches us."""
    try:
        return os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False


def probe_host(host: str) -> str:
    """Where to reach an API listening on `host` from this machine (a wildcard address means loopback)."""
    if host in {"", "0.0.0.0"}:  # noqa: S104 - reading the wildcard, not binding to it
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


@dataclass
class Child:
    """One supervised process: a name, its command, when it was restarted lately and when it is due again."""

    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    restarts: deque[float] = field(default_factory=deque)
    """time.monotonic() of its restarts within the restart window."""
    restart_due: float | None = None
    """When it exited and waits to be restarted: the time.monotonic() at which it is."""

    def start(self) -> None:
        # Its own session (a Ctrl-C meant for the supervisor does not hit it mid-job; the supervisor stops it) and
        # SIGTERM when the supervisor dies.
        self.process = subprocess.Popen(self.argv, env=self.env, start_new_session=True,  # noqa: PLW1509
                                        preexec_fn=die_with_parent(signal.SIGTERM))

    def stop(self) -> None:
        # The process only: an RQ worker then finishes its current job and stops its work-horse itself.
        if self.process and self.process.poll() is None:
            self.process.terminate()

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@dataclass
class Stack:
    """Redis (private unless REDIS_URL is set), the API and the workers."""

    host: str
    port: int
    workers: int
    redis_url: str | None = None
    data_dir: Path | None = None
    """Where the private Redis keeps its data (locked for the stack's life); None: ephemeral, nothing is kept."""
    ready_timeout: float = READY_TIMEOUT_SECONDS
    restart_limit: int = RESTART_LIMIT
    restart_window: float = RESTART_WINDOW_SECONDS
    children: list[Child] = field(default_factory=list)
    _redis: PrivateRedis | None = None
    _lock: DataDirLock | None = None
    _url: str = ""
    _stopping: bool = False

    def run(self) -> int:
        """Start everything, say so once it answers, supervise until SIGINT/SIGTERM, stop everything.

        Returns 0 after a requested stop, 1 when the stack failed (the API exited or nothing got ready in time, a
        child kept crashing); raises ConfigError before starting anything when the port is taken.
        """
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        check_port_free(self.host, self.port)
        try:
            self._start()
            failed = self._wait_until_ready()
            if failed is not None:
                return failed
            workers = f"{self.workers} worker{'s' if self.workers != 1 else ''}"
            hint = "; Ctrl-C stops" if in_foreground() else ""  # only where a Ctrl-C can reach us
            log.info("ragpulse is up: http://%s:%d  (redis %s, %s, %s%s)", self.host, self.port, self._url,
                     self.data_note(), workers, hint)
            return self._supervise()
        finally:
            self._shutdown()

    def data_note(self) -> str:
        """Where the data lives, as the "is up" line says it."""
        if self.redis_url is not None:
            return "data kept by that Redis (REDIS_URL; the data directory does not apply)"
        if self.data_dir is None:
            return "ephemeral: nothing is kept after it stops"
        return f"data in {self.data_dir}"

    def _private_redis(self) -> PrivateRedis:
        """A throw-away Redis, or one kept in the data directory, locked first (ConfigError when another stack
        holds it); the lock's descriptor goes to the Redis too, so the lock lasts as long as it does."""
        if self.data_dir is None:
            return PrivateRedis()
        self._lock = DataDirLock(self.data_dir).acquire({"pid": os.getpid(), "url": f"http://{self.host}:{self.port}"})
        assert self._lock.fd is not None
        return PrivateRedis(directory=self.data_dir / defaults.DATA_REDIS_DIR, keep_fds=(self._lock.fd,))

    def worker_argv(self) -> list[str]:
        """The worker command: RQ's loggers at WARNING unless RAGPULSE_LOG_LEVEL asks for something else."""
        argv = [sys.executable, "-m", "worker"]
        return argv if os.environ.get("RAGPULSE_LOG_LEVEL") else [*argv, "--rq-log-level", RQ_LOG_LEVEL]

    def _start(self) -> None:
        url = self.redis_url
        if url is None:
            self._redis = self._private_redis().start(timeout=self.ready_timeout)
            url = self._redis.url
            if self._lock is not None and self._redis.process is not None:
                self._lock.note(redis_pid=self._redis.process.pid)
            log.info("started private redis at %s (%s)", url, self.data_note())
        self._url = url
        env = {**os.environ, "REDIS_URL": url, "RAGPULSE_HOST": self.host, "RAGPULSE_PORT": str(self.port)}
        self.children = [Child("api", [sys.executable, "-m", "service"], env)] + [
            Child(f"worker-{n}", self.worker_argv(), env) for n in range(1, self.workers + 1)
        ]
        for child in self.children:
            child.start()
        log.info("waiting for the API on port %d to answer and for a worker to register", self.port)

    def _wait_until_ready(self) -> int | None:
        """None once the API is ready and a worker registered; else the exit code (0 when asked to stop)."""
        deadline = time.monotonic() + self.ready_timeout
        next_note = time.monotonic() + 10
        api = self.children[0]
        # trust_env=False: a loopback probe must not go through an HTTP proxy from the environment.
        with httpx.Client(base_url=f"http://{probe_host(self.host)}:{self.port}", timeout=2.0, trust_env=False) as http:
            while not self._stopping:
                code = api.process.poll() if api.process else None
                if code is not None:
                    log.error("the API exited with %s before it answered (its output is above); not starting", code)
                    return 1
                failed = self._restart_exited(self.children[1:])
                if failed is not None:
                    return failed
                waiting_for = self._not_ready(http)
                if waiting_for is None:
                    return None
                if time.monotonic() > deadline:
                    log.error("not ready after %.0f s: %s; giving up", self.ready_timeout, waiting_for)
                    return 1
                if time.monotonic() > next_note:
                    log.info("still waiting: %s", waiting_for)
                    next_note += 10
                time.sleep(0.2)
        return 0

    @staticmethod
    def _not_ready(http: httpx.Client) -> str | None:
        """What the stack still waits for, or None when /readyz answers 200 and a worker is registered."""
        try:
            if http.get("/readyz").status_code != 200:
                return "the API cannot reach Redis (GET /readyz)"
            found = _WORKERS_GAUGE.search(http.get("/metrics").text)
        except httpx.HTTPError:
            return "the API does not answer (GET /readyz)"
        if found is None or float(found.group(1)) < 1:
            return "no worker registered (ragpulse_workers in GET /metrics)"
        return None

    def _supervise(self) -> int:
        while not self._stopping:
            failed = self._restart_exited(self.children)
            if failed is not None:
                return failed
            time.sleep(0.2)
        return 0

    def _restart_exited(self, children: list[Child]) -> int | None:
        """Restart the children that exited, each after its backoff; 1 when one exits too often (more than
        `restart_limit` restarts within `restart_window` seconds)."""
        now = time.monotonic()
        for child in children:
            if self._stopping:
                return None
            if child.restart_due is not None:
                if now >= child.restart_due:
                    child.restart_due = None
                    child.restarts.append(now)
                    child.start()
                continue
            code = child.process.poll() if child.process else None
            if code is None:
                continue
            while child.restarts and now - child.restarts[0] > self.restart_window:
                child.restarts.popleft()
            if len(child.restarts) >= self.restart_limit:
                log.error("%s exited with %s too often (restarted %d times within %.0f s); stopping the stack",
                          child.name, code, len(child.restarts), self.restart_window)
                return 1
            delay = min(RESTART_BACKOFF_SECONDS * 2 ** len(child.restarts), RESTART_BACKOFF_CAP_SECONDS)
            log.warning("%s exited with %s; restarting in %.1f s", child.name, code, delay)
            child.restart_due = now + delay
        return None

    def _on_signal(self, signum: int, _frame: object) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        self._stopping = True

    def _shutdown(self) -> None:
        for child in self.children:
            child.stop()
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in self.children:
            if child.process is None:
                continue
            try:
                child.process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        if self._redis is not None:
            self._redis.stop()
        if self._lock is not None:
            self._lock.release()
