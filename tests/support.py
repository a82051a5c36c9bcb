"""Real processes for integration tests: the API under uvicorn and RQ workers, on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from ragpulse.redis_server import free_port

ROOT = Path(__file__).resolve().parent.parent


def child_env(redis_url: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a child process: this interpreter's, pointed at the test Redis."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update({"REDIS_URL": redis_url, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    return env


@dataclass
class Proc:
    """A child process we own and always stop."""

    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def spawn(argv: list[str], env: dict[str, str], log: Path) -> Proc:
    """Start a child with stdout and stderr in `log`."""
    handle = log.open("wb")
    return Proc(subprocess.Popen(argv, env=env, stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT), log)


def start_api(redis_url: str, tmp: Path, extra: Mapping[str, str] | None = None) -> tuple[str, Proc]:
    """`python -m service` on a free port; returns its base URL once /healthz answers."""
    port = free_port()
    env = child_env(redis_url, {"RAGPULSE_PORT": str(port), **(extra or {})})
    proc = spawn([sys.executable, "-m", "service"], env, tmp / f"api-{port}.log")
    url = f"http://127.0.0.1:{port}"
    wait_until_up(url, proc)
    return url, proc


def start_worker(redis_url: str, tmp: Path, extra: Mapping[str, str] | None = None, name: str = "w") -> Proc:
    """`python -m worker`: a real RQ worker process."""
    return spawn([sys.executable, "-m", "worker"], child_env(redis_url, extra), tmp / f"worker-{name}.log")


def wait_until_up(url: str, proc: Proc, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.process.poll() is not None:
            raise RuntimeError(f"process exited with {proc.process.returncode}:\n{proc.output()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up:\n{proc.output()}")


def wait_for_job(client: httpx.Client, job_id: str, timeout: float = 60.0) -> dict:
    """Poll a job until it reaches a terminal status."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}").json()
        if job["status"] in {"finished", "finished_with_errors", "failed"}:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {job}")
