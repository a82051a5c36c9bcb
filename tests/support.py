"""Real processes for integration tests: the API under uvicorn and RQ workers, on loopback."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from ragpulse.ops.redis_server import free_port
from tests.fake_anthropic import FakeAnthropic

ROOT = Path(__file__).resolve().parent.parent


def child_env(redis_url: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for a child process: this interpreter's, pointed at the test Redis."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update({"REDIS_URL": redis_url, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
    env.update(extra or {})
    if "RAGPULSE_JUDGE" not in env and not env.get("ANTHROPIC_API_KEY"):
        # The service judges nothing by default; the stacks under test judge with the offline heuristic so that the
        # generation path runs without a model. A test of the default passes RAGPULSE_JUDGE="" (read as unset).
        env["RAGPULSE_JUDGE"] = "heuristic"
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


def spawn(argv: list[str], env: dict[str, str], log: Path, cwd: Path = ROOT) -> Proc:
    """Start a child with stdout and stderr in `log` and no terminal on stdin."""
    handle = log.open("wb")
    return Proc(subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT,
                                 cwd=cwd), log)


def wait_for_line(proc: Proc, text: str, timeout: float = 120.0) -> str:
    """Block until `text` appears in the process's output (returns the output so far); fail if it exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        output = proc.output()
        if text in output:
            return output
        if proc.process.poll() is not None:
            raise RuntimeError(f"process exited with {proc.process.returncode} before {text!r}:\n{proc.output()}")
        time.sleep(0.05)
    raise RuntimeError(f"{text!r} did not appear within {timeout} s:\n{proc.output()}")


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


@contextlib.contextmanager
def api_and_workers(redis_url: str, tmp: Path, env: Mapping[str, str], workers: int = 1,
                    name: str = "w") -> Iterator[httpx.Client]:
    """An API and `workers` RQ workers sharing `env`; a client of the API, both stopped on exit."""
    url, api = start_api(redis_url, tmp, env)
    procs = [api, *(start_worker(redis_url, tmp, env, name=f"{name}{n}") for n in range(workers))]
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client
    finally:
        for proc in procs:
            proc.stop()


def children_of(pid: int) -> set[int]:
    """Pids whose parent is `pid`, read from /proc."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


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


def finished_job(client: httpx.Client, body: dict) -> str:
    """POST `body` to /v1/batches, wait for the job and return its id; fails unless it was accepted and finished."""
    accepted = client.post("/v1/batches", json=body)
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]
    assert wait_for_job(client, job_id)["status"] == "finished"
    return job_id


class Cluster:
    """An API and N workers sharing one queue prefix, judging against `fake`."""

    def __init__(self, redis_url: str, tmp: Path, fake: FakeAnthropic, workers: int, **env: str) -> None:
        self.env = {"RAGPULSE_QUEUE": f"scale-{uuid.uuid4().hex[:8]}", "ANTHROPIC_API_KEY": "k",
                    "RAGPULSE_JUDGE_BASE_URL": fake.url, "RAGPULSE_LEASE_SECONDS": "15", **env}
        self.redis_url, self.tmp = redis_url, tmp
        self.url, api = start_api(redis_url, tmp, self.env)
        self.procs: list[Proc] = [api]
        self.workers = [self.add_worker() for _ in range(workers)]
        self.http = httpx.Client(base_url=self.url, timeout=60)
        self.wait_for_workers(workers)

    def wait_for_workers(self, n: int, timeout: float = 60.0) -> None:
        """Block until n workers listen on this cluster's queues, so work is spread over all of them."""
        deadline = time.monotonic() + timeout
        while f"ragpulse_workers {float(n)}" not in self.http.get("/metrics").text:
            if time.monotonic() > deadline:
                raise RuntimeError("workers did not register:\n" + "\n".join(w.output()[-2000:] for w in self.workers))
            time.sleep(0.1)

    def add_worker(self) -> Proc:
        proc = start_worker(self.redis_url, self.tmp, self.env, name=uuid.uuid4().hex[:6])
        self.procs.append(proc)
        return proc

    def post(self, batch: list[dict], **options: object) -> str:
        response = self.http.post("/v1/batches", json={"traces": batch, "options": {"judge": "anthropic", **options}})
        assert response.status_code == 202, response.text
        return response.json()["job_id"]

    def results(self, job_id: str) -> list[dict]:
        items, cursor = [], None
        while True:
            page = self.http.get(f"/v1/jobs/{job_id}/results", params={"limit": 1000, "cursor": cursor or ""}).json()
            items += page["items"]
            cursor = page["next_cursor"]
            if cursor is None:
                return items

    def stop(self) -> None:
        for proc in self.procs:
            proc.stop()


def start_tags(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every real start tag of an HTML page with its attributes (escaped text is not a tag)."""
    from html.parser import HTMLParser  # noqa: PLC0415 - only the page tests need it

    found: list[tuple[str, list[tuple[str, str | None]]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.append((tag, attrs))

    Collect().feed(page)
    return found


@dataclass
class PageApis:
    """The web UI's two faces on one private queue and one worker: an open API (no keys: tenant `default`, no login)
    and a keyed one with two tenants, `acme-<run>` and `globex-<run>`."""

    open_url: str
    keyed_url: str
    keys: dict[str, str]
    """tenant -> its API key on the keyed API."""


@contextlib.contextmanager
def page_apis(redis_url: str, tmp: Path, name: str) -> Iterator[PageApis]:
    run = uuid.uuid4().hex[:8]
    keys = {f"acme-{run}": f"key-acme-{run}", f"globex-{run}": f"key-globex-{run}"}
    queue = {"RAGPULSE_QUEUE": f"{name}-{run}"}
    open_url, open_api = start_api(redis_url, tmp, queue)
    keyed_url, keyed_api = start_api(redis_url, tmp, {
        **queue, "RAGPULSE_API_KEYS": ",".join(f"{t}:{k}" for t, k in keys.items())})
    worker = start_worker(redis_url, tmp, queue, name=name)
    try:
        yield PageApis(open_url, keyed_url, keys)
    finally:
        for proc in (open_api, keyed_api, worker):
            proc.stop()


@dataclass
class Tenants:
    """One API serving two or more tenants, each with its API key: `api(tenant)` is a client signed in as it."""

    url: str
    keys: dict[str, str]
    """Tenant id -> its API key, in the order the ids were given."""

    @property
    def ids(self) -> list[str]:
        return list(self.keys)

    def api(self, tenant: str) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.keys[tenant]}"}, timeout=30)


@contextlib.contextmanager
def tenant_apis(redis_url: str, tmp: Path, label: str, extra: Mapping[str, str] | None = None) -> Iterator[Tenants]:
    """An API (no workers) on a queue of its own for tenants `{label}-a-RUN` and `{label}-b-RUN`, unique per call,
    so tests sharing the Redis never see each other's jobs or datasets."""
    run = uuid.uuid4().hex[:8]
    keys = {f"{label}-{name}-{run}": f"key-{name}-{run}" for name in ("a", "b")}
    env = {"RAGPULSE_QUEUE": f"{label}-{run}", **(extra or {}),
           "RAGPULSE_API_KEYS": ",".join(f"{tenant}:{key}" for tenant, key in keys.items())}
    url, api = start_api(redis_url, tmp, env)
    try:
        yield Tenants(url, keys)
    finally:
        api.stop()
