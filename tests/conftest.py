"""Shared fixtures: a real Redis (private redis-server, or REDIS_URL) and a real API with real RQ workers."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import redis

from ragpulse.ops.redis_server import PrivateRedis
from tests.fake_anthropic import FakeAnthropic
from tests.support import Cluster, Proc, start_api, start_worker


LIVE_RERUNS = 1
"""Reruns of a failed test that runs live processes (a Redis server, the API, RQ workers, a browser, a loopback
fake): on a shared 2-core machine their timing varies, and one slow moment must not fail a whole CI run. The first
failure's traceback is printed in the summary (--rerun-show-tracebacks), and the suite reruns at most
--max-suite-reruns tests in all: a test that fails twice fails, as does a run with many flaky tests."""
LOG_TAIL_CHARS = 3000
"""How much of each child process's log a failed test prints."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "redis_url" in item.fixturenames or item.get_closest_marker("integration"):
            item.add_marker(pytest.mark.flaky(reruns=LIVE_RERUNS))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[pytest.TestReport]:
    """A failed test that used a Cluster prints the end of each of its processes' logs (the API's and workers'),
    so a failure in CI says what the workers saw."""
    report = yield
    if report.failed and call.when == "call":
        for name, value in getattr(item, "funcargs", {}).items():
            clusters = [value] if isinstance(value, Cluster) else getattr(value, "made", [])
            for proc in (proc for cluster in clusters for proc in cluster.procs):
                report.sections.append((f"{name}: {proc.log.name} (last {LOG_TAIL_CHARS} chars)",
                                        proc.output()[-LOG_TAIL_CHARS:]))
    return report


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C acts in the children the tests start even when this run began with SIGINT ignored (a background job of a
    shell without job control, as `./scripts/test &` in a script is): a child inherits an ignored SIGINT, Python then
    installs no KeyboardInterrupt handler, and the tests of what the CLI does on Ctrl-C wait for it in vain."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def no_real_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point the default data directory of `ragpulse up` ($XDG_DATA_HOME/ragpulse) at a temporary one for the whole
    session, child processes included: no test ever writes into the user's real data directory."""
    saved = {name: os.environ.get(name) for name in ("XDG_DATA_HOME", "RAGPULSE_DATA_DIR")}
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    os.environ.pop("RAGPULSE_DATA_DIR", None)
    yield Path(os.environ["XDG_DATA_HOME"])
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """REDIS_URL when set (the tests write uniquely named keys and never flush it), else a private server."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    server = PrivateRedis().start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture(scope="session")
def session_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("procs")


@dataclass
class LiveStack:
    """A running API and its workers; `env` holds the settings every extra API must share to reach them."""

    url: str
    env: dict[str, str]


@pytest.fixture(scope="session")
def stack(redis_url: str, session_tmp: Path) -> Iterator[LiveStack]:
    """The API and two RQ workers on a queue of their own."""
    env = {"RAGPULSE_QUEUE": f"test-{uuid.uuid4().hex[:8]}"}
    url, api = start_api(redis_url, session_tmp, env)
    workers = [start_worker(redis_url, session_tmp, env, name=str(n)) for n in range(2)]
    try:
        yield LiveStack(url, env)
    finally:
        for proc in [api, *workers]:
            proc.stop()


@pytest.fixture
def client(stack: LiveStack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.url, timeout=30) as http:
        yield http


@pytest.fixture
def api_factory(redis_url: str, tmp_path: Path) -> Iterator:
    """Start extra API processes with their own settings; all are stopped after the test.

    `api_factory.procs` maps each started URL to its process (its pid, e.g. to read its memory)."""
    started: dict[str, Proc] = {}

    def start(extra: dict[str, str], redis: str | None = None) -> str:
        base, proc = start_api(redis or redis_url, tmp_path, extra)
        started[base] = proc
        return base

    start.procs = started  # type: ignore[attr-defined]
    yield start
    for proc in started.values():
        proc.stop()


@pytest.fixture
def cluster_factory(redis_url: str, tmp_path: Path) -> Iterator:
    made: list[Cluster] = []

    def make(fake: FakeAnthropic, workers: int, **env: str) -> Cluster:
        made.append(Cluster(redis_url, tmp_path, fake, workers, **env))
        return made[-1]

    make.made = made  # type: ignore[attr-defined]  # the clusters made, whose logs a failed test prints
    yield make
    for cluster in made:
        cluster.stop()
