"""`ragpulse up`: Redis, the API and N workers as supervised child processes."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from ragpulse.ops.redis_server import PrivateRedis

log = logging.getLogger("ragpulse.up")
STOP_GRACE_SECONDS = 10.0
"""How long children get to exit after SIGTERM before they are killed."""
RESTART_LIMIT = 5
"""Restarts allowed per child before the whole stack gives up."""


def _die_with_parent() -> None:
    """Linux: deliver SIGTERM to the child when the supervisor dies, even by SIGKILL, so nothing is orphaned."""
    os.setsid()
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


@dataclass
class Child:
    """One supervised process: a name, its command and how often it has been restarted."""

    name: str
    argv: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, env=self.env, preexec_fn=_die_with_parent)  # noqa: PLW1509

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
    children: list[Child] = field(default_factory=list)
    _redis: PrivateRedis | None = None
    _stopping: bool = False

    def run(self) -> int:
        """Start everything, supervise until SIGINT/SIGTERM, stop everything; returns the exit code."""
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        try:
            self._start()
            return self._supervise()
        finally:
            self._shutdown()

    def _start(self) -> None:
        url = self.redis_url
        if url is None:
            self._redis = PrivateRedis().start()
            url = self._redis.url
            log.info("started private redis at %s", url)
        env = {**os.environ, "REDIS_URL": url, "RAGPULSE_HOST": self.host, "RAGPULSE_PORT": str(self.port)}
        self.children = [Child("api", [sys.executable, "-m", "service"], env)] + [
            Child(f"worker-{n}", [sys.executable, "-m", "worker"], env) for n in range(1, self.workers + 1)
        ]
        for child in self.children:
            child.start()
        print(f"ragpulse is up: http://{self.host}:{self.port}  (redis {url}, {self.workers} workers; Ctrl-C stops)",
              flush=True)

    def _supervise(self) -> int:
        while not self._stopping:
            for child in self.children:
                code = child.process.poll() if child.process else None
                if code is None or self._stopping:
                    continue
                if child.restarts >= RESTART_LIMIT:
                    log.error("%s exited with %s too often; stopping the stack", child.name, code)
                    return 1
                log.warning("%s exited with %s; restarting", child.name, code)
                child.restarts += 1
                time.sleep(min(2 ** child.restarts * 0.1, 5))
                child.start()
            time.sleep(0.2)
        return 0

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
