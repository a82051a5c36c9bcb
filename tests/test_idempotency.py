"""Idempotent posts against real Redis and the real API: a retry with the same Idempotency-Key gets the first answer
and is counted once (the stream, ragpulse_traces_received_total, jobs), a new key counts again, a key reused with
another body is 422, keys expire and are bounded per tenant, and a post committed behind a 503 is not counted twice."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import uuid

import httpx
import pytest
import redis

from ragpulse.config import keys
from ragpulse.ops.redis_server import PrivateRedis
from tests.test_online import metric, stream_of, traces, wait_until

pytestmark = pytest.mark.integration


def received(url: str, app: str) -> float:
    return metric(httpx.get(f"{url}/metrics").text, "ragpulse_traces_received_total", app=app)


@pytest.fixture
def api(api_factory):
    """An API of its own queue (no worker: posts stay in the stream) with its own app label."""
    queue, app = f"t-{uuid.uuid4().hex[:8]}", f"idem{uuid.uuid4().hex[:6]}"

    def start(**extra: str) -> tuple[str, str, str]:
        return api_factory({"RAGPULSE_QUEUE": queue, "RAGPULSE_APPS": app, **extra}), stream_of(queue), app
    return start


def test_a_retried_post_with_the_same_key_is_counted_once(api, redis_client: redis.Redis) -> None:
    url, stream, app = api()
    body = {"traces": traces(3, "idem", app=app)}
    first = httpx.post(f"{url}/v1/traces", json=body, headers={"Idempotency-Key": "k-1"})
    retry = httpx.post(f"{url}/v1/traces", json=body, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == retry.status_code == 202, (first.text, retry.text)
    assert retry.content == first.content and retry.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert redis_client.xlen(stream) == 1 and received(url, app) == 3

    again = httpx.post(f"{url}/v1/traces", json=body, headers={"Idempotency-Key": "k-2"})   # a new key: a new post
    assert again.status_code == 202 and "idempotent-replayed" not in again.headers
    assert redis_client.xlen(stream) == 2 and received(url, app) == 6
    assert httpx.post(f"{url}/v1/traces", json=body).status_code == 202                   # no key: as before
    assert redis_client.xlen(stream) == 3 and received(url, app) == 9


def test_a_key_reused_with_another_body_is_422_naming_the_header(api, redis_client: redis.Redis) -> None:
    url, stream, app = api()
    assert httpx.post(f"{url}/v1/traces", json={"traces": traces(1, "a", app=app)},
                      headers={"Idempotency-Key": "k"}).status_code == 202
    reused = httpx.post(f"{url}/v1/traces", json={"traces": traces(1, "b", app=app)}, headers={"Idempotency-Key": "k"})
    assert reused.status_code == 422, reused.text
    assert reused.json()["errors"] == [{"path": "header.idempotency-key",
                                        "message": "already used with a different body"}]
    assert redis_client.xlen(stream) == 1 and received(url, app) == 1
    for bad in ["", "x" * 256, "has space", "naïve"]:
        refused = httpx.post(f"{url}/v1/traces", json={"traces": traces(1, "c", app=app)},
                             headers={"Idempotency-Key": bad.encode()})
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["errors"][0]["path"].lower() == "header.idempotency-key", refused.text
    assert redis_client.xlen(stream) == 1


def test_a_retried_batch_with_the_same_key_makes_one_job(api, redis_client: redis.Redis) -> None:
    url, _, app = api()
    body = {"traces": [{"query": f"q{i}", "app": app} for i in range(4)]}
    first = httpx.post(f"{url}/v1/batches", json=body, headers={"Idempotency-Key": "batch-1"})
    retry = httpx.post(f"{url}/v1/batches", json=body, headers={"Idempotency-Key": "batch-1"})
    assert first.status_code == retry.status_code == 202, (first.text, retry.text)
    assert retry.json()["job_id"] == first.json()["job_id"] and retry.content == first.content
    assert received(url, app) == 4
    dry = httpx.post(f"{url}/v1/batches?dry_run=true", json=body, headers={"Idempotency-Key": "batch-2"})
    assert dry.status_code == 200                                      # a dry run commits nothing, keeps no key
    real = httpx.post(f"{url}/v1/batches", json=body, headers={"Idempotency-Key": "batch-2"})
    assert real.status_code == 202 and real.json()["job_id"] != first.json()["job_id"]
    assert received(url, app) == 8


def test_keys_expire_and_a_tenant_keeps_a_bounded_number(api, redis_client: redis.Redis) -> None:
    url, stream, app = api(RAGPULSE_IDEMPOTENCY_TTL_SECONDS="600", RAGPULSE_IDEMPOTENCY_MAX_KEYS="2")
    body = {"traces": traces(1, "bounded", app=app)}
    for key in ("k1", "k2", "k3"):
        assert httpx.post(f"{url}/v1/traces", json=body, headers={"Idempotency-Key": key}).status_code == 202
    record = keys.idempotent_post("default", "traces", "k3")
    assert 0 < redis_client.ttl(record) <= 600
    assert 0 < redis_client.ttl(keys.idempotency_keys("default")) <= 600
    assert redis_client.exists(keys.idempotent_post("default", "traces", "k1")) == 0, "the oldest key is forgotten"
    assert redis_client.zcard(keys.idempotency_keys("default")) == 2
    assert httpx.post(f"{url}/v1/traces", json=body, headers={"Idempotency-Key": "k3"}).headers.get(
        "idempotent-replayed") == "true"
    forgotten = httpx.post(f"{url}/v1/traces", json=body, headers={"Idempotency-Key": "k1"})
    assert forgotten.status_code == 202 and "idempotent-replayed" not in forgotten.headers
    assert redis_client.xlen(stream) == 4

    redis_client.expire(record, 1)                                      # the window passes for k3
    wait_until(lambda: not redis_client.exists(record), timeout=10, what="k3 expired")
    expired = httpx.post(f"{url}/v1/traces", json=body, headers={"Idempotency-Key": "k3"})
    assert expired.status_code == 202 and "idempotent-replayed" not in expired.headers
    assert redis_client.xlen(stream) == 5 and received(url, app) == 5


def test_a_post_committed_behind_a_503_is_not_counted_twice(api_factory) -> None:
    """Redis hangs (SIGSTOP) while a post's script is on its way: the API answers 503 after its socket timeout, and
    the script runs when Redis resumes. The client's retry with the same key is answered 202 and counts nothing.
    (When the API had to open a new connection, its handshake times out and the script is never sent: that post was
    not committed, and the test pauses Redis again.)"""
    server = PrivateRedis().start()
    queue, app = f"t-{uuid.uuid4().hex[:8]}", "paused"
    try:
        url = api_factory({"RAGPULSE_QUEUE": queue, "RAGPULSE_APPS": app}, redis=server.url)
        admin = redis.Redis.from_url(server.url)
        stream = stream_of(queue)
        body = {"traces": traces(2, "paused", app=app)}
        for attempt in range(3):
            assert httpx.post(f"{url}/v1/traces", json={"traces": traces(1, f"warm{attempt}", app=app)}).status_code \
                == 202
            held = admin.xlen(stream)
            headers = {"Idempotency-Key": f"paused-{attempt}"}
            during = _post_while_redis_hangs(server, f"{url}/v1/traces", body, headers)
            assert during.status_code == 503, during.text
            with contextlib.suppress(AssertionError):
                wait_until(lambda: admin.xlen(stream) == held + 1, timeout=5, what="the paused post committed")
            if admin.xlen(stream) == held + 1:
                break
        else:
            pytest.fail("the API never sent a post's script before Redis hung")
        counted = received(url, app)
        retry = httpx.post(f"{url}/v1/traces", json=body, headers=headers, timeout=30)
        assert retry.status_code == 202 and retry.headers["idempotent-replayed"] == "true", retry.text
        assert admin.xlen(stream) == held + 1 and received(url, app) == counted
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
        server.stop()


def _post_while_redis_hangs(server: PrivateRedis, url: str, body: dict, headers: dict[str, str]) -> httpx.Response:
    """POST while Redis is stopped, resuming it after the API's 5 s Redis timeout has answered."""
    os.kill(server.process.pid, signal.SIGSTOP)
    resume = threading.Timer(7.0, os.kill, (server.process.pid, signal.SIGCONT))
    resume.start()
    try:
        return httpx.post(url, json=body, headers=headers, timeout=30)
    finally:
        resume.join()
