"""Redis going away under a running stack: restarts while a job runs, replies lost with it, workers started
while it is down, and a hung Redis under /metrics."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import signal
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest
import redis
from rq import Worker

from dispatch.queues import queue_named
from ragpulse.config import keys
from ragpulse.monitoring.recorder import queue_result_counts
from ragpulse.evaluation.trace import evaluate_trace
from ragpulse.judges.local import LocalJudge
from ragpulse.model.trace import BatchOptions, RetrievedDoc, Trace
from ragpulse.monitoring.counters import read_samples
from ragpulse.ops.redis_server import PrivateRedis, free_port
from ragpulse.store import Store
from ragpulse.store.connection import worker_client
from tests.fake_anthropic import FakeAnthropic
from tests.support import child_env, children_of, spawn, start_api, start_worker, wait_for_job, wait_for_line

pytestmark = pytest.mark.integration
UP = [sys.executable, "-m", "ragpulse.ops.cli", "up"]


def traces(n: int, app: str) -> list[dict]:
    return [{"trace_id": f"{app}-{i}", "app": app, "query": f"question {i}", "answer": f"Fact {i} holds.",
             "gold_doc_ids": ["d"], "retrieved_docs": [{"id": "d", "text": f"Fact {i} holds. Nothing else."}]}
            for i in range(n)]


def judged(metrics_text: str, app: str) -> float:
    """ragpulse_traces_judged_total of this app by the anthropic judge, summed over its other labels (tenant)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics_text.splitlines()
               if line.startswith("ragpulse_traces_judged_total{") and f'app="{app}"' in line
               and 'judge="anthropic"' in line)


def progress(http: httpx.Client, job_id: str) -> dict:
    response = http.get(f"/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()["progress"]


def wait_for_progress(http: httpx.Client, job_id: str, above: int, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while (done := progress(http, job_id)["done"]) <= above:
        assert time.monotonic() < deadline, f"no progress past {above} within {timeout} s"
        time.sleep(0.1)
    return done


def test_the_stack_rides_out_three_redis_restarts_during_a_job(tmp_path: Path) -> None:
    """Three outages (15 s, 5 s, 4 s) of a Redis that keeps its data: nothing exits, the first request after each
    restart succeeds, and the job finishes with every trace judged and counted exactly once."""
    app = f"outage{uuid.uuid4().hex[:6]}"
    total = 300
    server = PrivateRedis(appendonly=True).start()
    up = None
    try:
        with FakeAnthropic(latency=0.2) as fake:
            port = free_port()
            env = child_env(server.url, {"TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "k",
                                         "RAGPULSE_JUDGE_BASE_URL": fake.url, "RAGPULSE_APPS": app,
                                         "RAGPULSE_CHUNK_SIZE": "50", "RAGPULSE_JUDGE_CONCURRENCY": "2"})
            up = spawn([*UP, "--port", str(port), "--workers", "2"], env, tmp_path / "up.log")
            wait_for_line(up, "ragpulse is up", timeout=60)
            children = children_of(up.process.pid)
            assert len(children) == 3                                       # the API and two workers
            http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, trust_env=False)
            posted = http.post("/v1/batches", json={"traces": traces(total, app), "options": {"judge": "anthropic"}})
            assert posted.status_code == 202, posted.text
            job_id = posted.json()["job_id"]
            done = wait_for_progress(http, job_id, above=10)

            for outage in (15, 5, 4):
                assert done < total, "the job finished before Redis went away: give it more traces"
                server.halt()
                time.sleep(outage)
                server.start()
                # The first requests after the restart, on the API's pooled (now stale) connections: a read on
                # the threads' client, a write on the event loop's.
                first = http.get(f"/v1/jobs/{job_id}")
                assert first.status_code == 200, first.text
                probe = http.post("/v1/batches", json={"traces": traces(1, f"probe{outage}"),
                                                       "options": {"judge": "local"}})
                assert probe.status_code == 202, probe.text
                assert http.get("/readyz").status_code == 200
                done = wait_for_progress(http, job_id, above=first.json()["progress"]["done"])

            job = wait_for_job(http, job_id, timeout=60)
            assert job["status"] == "finished", job
            assert job["progress"] == {"total": total, "done": total, "failed": 0, "skipped": 0}
            items = http.get(f"/v1/jobs/{job_id}/results", params={"limit": 1000}).json()["items"]
            assert sorted(i["trace_id"] for i in items) == sorted(t["trace_id"] for t in traces(total, app))
            assert judged(http.get("/metrics").text, app) == total      # each trace counted once
            assert up.process.poll() is None, up.output()
            assert children_of(up.process.pid) == children, up.output()  # no process exited or was restarted
    finally:
        if up is not None:
            up.stop()
        server.stop()


def test_metrics_scrape_against_a_hung_redis_does_not_stall_healthz(tmp_path: Path) -> None:
    server = PrivateRedis().start()
    api = None
    try:
        url, api = start_api(server.url, tmp_path)
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get("/metrics").status_code == 200              # the scrape's connections are pooled
            os.kill(server.process.pid, signal.SIGSTOP)                  # Redis hangs: connects, never answers
            try:
                scrape: dict[str, object] = {}

                def scrape_metrics() -> None:
                    started = time.monotonic()
                    scrape["response"] = httpx.get(f"{url}/metrics", timeout=30)
                    scrape["seconds"] = time.monotonic() - started

                thread = threading.Thread(target=scrape_metrics)
                thread.start()
                time.sleep(0.3)                                          # the scrape is now waiting on Redis
                for _ in range(3):
                    started = time.monotonic()
                    assert http.get("/healthz", timeout=5).status_code == 200
                    assert time.monotonic() - started < 1.0
                    assert thread.is_alive()                             # ...while the scrape is still pending
                thread.join(30)
                assert scrape["response"].status_code == 200             # Redis families left out, not an error
                assert scrape["seconds"] < 5                             # short timeouts: well within a scrape
            finally:
                os.kill(server.process.pid, signal.SIGCONT)
            assert "ragpulse_workers" in http.get("/metrics").text         # and back once Redis answers
    finally:
        if api is not None:
            api.stop()
        server.stop()


class ReplyDropper:
    """A TCP proxy to a Redis that, once armed, swallows the reply to the next command containing `marker` and
    closes that client's connection: the command ran, and its caller never learns it did (as when Redis goes down
    right after running it)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.marker: bytes | None = None
        self.dropped = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(self, marker: bytes) -> None:
        with self.lock:
            self.marker = marker

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
                swallow = threading.Event()
                threading.Thread(target=self._requests, args=(client, upstream, swallow), daemon=True).start()
                threading.Thread(target=self._replies, args=(upstream, client, swallow), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket, swallow: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                with self.lock:
                    if self.marker is not None and self.marker in data:
                        self.marker = None
                        swallow.set()                    # before forwarding: its reply must not slip through
                upstream.sendall(data)

    def _replies(self, upstream: socket.socket, client: socket.socket, swallow: threading.Event) -> None:
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if swallow.is_set():
                    self.dropped += 1
                    break
                client.sendall(data)
        for sock in (client, upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()


def test_a_result_stored_by_a_command_whose_reply_was_lost_is_counted_exactly_once() -> None:
    """The worker's client retries a command whose connection dropped; when the command had run, storing the
    result and counting it must happen once in all: not twice (counted again), not zero times (seen as stored)."""
    server = PrivateRedis().start()
    proxy = ReplyDropper(server.port)
    client = worker_client(f"redis://127.0.0.1:{proxy.port}/0")
    try:
        store = Store(client, 3600)
        options = BatchOptions(judge="local")
        app = "exactly-once"

        def store_result(index: int) -> bool:
            trace = Trace(trace_id=f"t{index}", app=app, query=f"question {index}", answer=f"Fact {index} holds.",
                          retrieved_docs=[RetrievedDoc(id="d", text=f"Fact {index} holds.")])
            result = asyncio.run(evaluate_trace(trace, index, options, LocalJudge()))
            return store.results.record("job", result, counting=lambda pipe: queue_result_counts(
                pipe, frozenset({app}), frozenset({"tenant"}), "tenant", result))

        assert store_result(0)
        proxy.arm(keys.job_results("job").encode())          # the command that stores (and counts) the next result
        store_result(1)
        assert proxy.dropped == 1
        assert store_result(1) is False                      # stored already: a re-run chunk counts nothing
        direct = redis.Redis(port=server.port)
        assert direct.hlen(keys.job_results("job")) == 2
        judged_samples = [value for suffix, labels, value in read_samples(direct)["ragpulse_traces_judged"]
                          if labels.get("app") == app]
        assert judged_samples == [2.0]
        direct.close()
    finally:
        client.close()
        proxy.close()
        server.stop()


def test_a_worker_started_while_redis_is_down_waits_for_it(tmp_path: Path) -> None:
    """As `ragpulse up` restarting a worker during an outage: the worker waits for Redis rather than exiting."""
    server = PrivateRedis()                                       # its port is chosen; the server is not started
    worker = start_worker(server.url, tmp_path, {"RAGPULSE_QUEUE": f"wait-{uuid.uuid4().hex[:8]}"})
    try:
        wait_for_line(worker, "waiting for Redis", timeout=30)
        time.sleep(2)
        assert worker.process.poll() is None, worker.output()
        server.start()
        client = redis.Redis.from_url(server.url)
        deadline = time.monotonic() + 30
        while not Worker.all(connection=client):
            assert time.monotonic() < deadline, worker.output()
            time.sleep(0.2)
        client.close()
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(15) == 0, worker.output()
    finally:
        worker.stop()
        server.stop()


def test_a_worker_waiting_for_redis_stops_at_once_on_sigterm(tmp_path: Path) -> None:
    worker = start_worker(f"redis://127.0.0.1:{free_port()}/0", tmp_path)
    try:
        wait_for_line(worker, "waiting for Redis", timeout=30)
        started = time.monotonic()
        worker.process.send_signal(signal.SIGTERM)
        assert worker.process.wait(15) == 0, worker.output()
        assert time.monotonic() - started < 5
    finally:
        worker.stop()


def test_a_worker_starts_its_scheduler_again_after_an_outage_that_ended_it(tmp_path: Path) -> None:
    """RQ's scheduler process ends when an outage outlasts its client's retries (RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS,
    2 s here), and RQ would look again only ten minutes later; callback retries wait on it. The worker reaps it and
    starts it again once Redis answers, and a job scheduled after the outage runs."""
    prefix = f"sched-{uuid.uuid4().hex[:8]}"
    server = PrivateRedis().start()
    worker = start_worker(server.url, tmp_path, {"RAGPULSE_QUEUE": prefix,
                                                 "RAGPULSE_WORKER_REDIS_OUTAGE_SECONDS": "2"})
    client = redis.Redis.from_url(server.url)
    lock = f"rq:scheduler-lock:{prefix}-online"
    try:
        deadline = time.monotonic() + 30
        while not client.exists(lock):
            assert time.monotonic() < deadline, worker.output()
            time.sleep(0.2)
        server.halt()
        time.sleep(8)                                            # the scheduler's retries give up after ~2 s
        server.start()
        job = queue_named(f"{prefix}-online", client).enqueue_in(datetime.timedelta(seconds=1), "os.getpid")
        deadline = time.monotonic() + 30
        while job.get_status(refresh=True) != "finished":
            assert time.monotonic() < deadline, f"the scheduled job is {job.get_status()}:\n{worker.output()}"
            time.sleep(0.2)
        assert worker.process.poll() is None, worker.output()
        zombies = [pid for pid in children_of(worker.process.pid)
                   if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"]
        assert zombies == []
    finally:
        client.close()
        worker.stop()
        server.stop()


def run_chunk_through(fault: str, n: int = 300, outage_seconds: float = 2.0) -> tuple[int, list, object]:
    """A one-chunk job judged in this process against a private Redis that `fault` interrupts once the run is under
    way: `down` stops Redis for longer than the workers' outage budget and starts it again with its data, `paused`
    freezes it (SIGSTOP) as long. Returns (calls the fake judge received, the stored results, the job's spend)."""
    from ragpulse.config.settings import Settings
    from ragpulse.evaluation.chunk import open_chunk, run_chunk
    from tests.test_judge_path import traces as judged_traces

    server = PrivateRedis(appendonly=True).start()
    client = redis.Redis.from_url(server.url)
    try:
        with FakeAnthropic(latency=0.05) as fake:
            model = f"claude-test-{uuid.uuid4().hex[:8]}"
            settings = Settings(redis_url=server.url, judge_base_url=fake.url, judge_model=model,
                                judge_prices={model: (3.0, 15.0)}, chunk_size=n, judge_concurrency=8,
                                worker_redis_outage_seconds=outage_seconds)
            store, job_id = Store(client, 600), uuid.uuid4().hex
            with client.pipeline() as pipe:
                store.stage_job(pipe, job_id, "default", judged_traces(n), BatchOptions(judge="anthropic", sample="all"),
                                [], n, "batch", "q")
                pipe.execute()
            work = open_chunk(store, settings, job_id, 0)
            outcome: dict[str, object] = {}

            def run() -> None:
                try:
                    asyncio.run(run_chunk(store, settings, work))
                except Exception as exc:  # noqa: BLE001 - reported by the assertion below
                    outcome["error"] = exc

            os.environ["ANTHROPIC_API_KEY"] = "test-key"
            thread = threading.Thread(target=run)
            thread.start()
            while len(fake.requests) < n // 5:
                time.sleep(0.05)
            if fault == "down":
                server.halt()
                time.sleep(2 * outage_seconds)
                server.start()
            else:
                os.kill(server.process.pid, signal.SIGSTOP)
                time.sleep(2 * outage_seconds)
                os.kill(server.process.pid, signal.SIGCONT)
            thread.join(120)
            assert not thread.is_alive()
            assert "error" not in outcome, outcome["error"]
            return len(fake.requests), store.results.all(job_id), store.jobs.get(job_id).spend
    finally:
        client.close()
        server.stop()


@pytest.mark.parametrize("fault", ["down", "paused"])
def test_verdicts_and_spend_outlive_a_redis_outage_longer_than_the_outage_budget(fault: str) -> None:
    """Judged verdicts are paid for: a chunk keeps the results and the judge calls it could not record, stops judging
    more, and records them when Redis answers again. Spend never under-counts the calls made."""
    made, results, spend = run_chunk_through(fault)
    assert len(results) == 300 and all(r.status == "ok" for r in results), {r.error for r in results}
    assert made <= spend.judge_calls <= made * 1.01, (made, spend)
